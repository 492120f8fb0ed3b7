"""Gymnasium envs as hub envs pickle with plain ``pickle``, and so do make_multi_agent's classes.

A class that ``make_multi_agent`` builds pickles as a reference: it loads as
itself in the process that built it and as ``make_multi_agent(source)`` in
another; its instances pickle with their Gymnasium envs and play on as the
original, before reset, mid-episode and after the end.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from typing import Any, Callable, Optional

import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.ezpickle import EzPickle  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.gymnasium import from_gymnasium, make_multi_agent  # noqa: E402
from marlhub.context import EnvContext  # noqa: E402
from marlhub.contract.compare import why_different  # noqa: E402
from marlhub.errors import ResetNeededError  # noqa: E402
from tests.adapters.pickling import (  # noqa: E402
    REPO,
    STAGES,
    pickled_at,
    play_on,
    play_on_in_fresh_interpreter,
)


def slippery_lake(config: EnvContext) -> gym.Env:
    """A creator at module level, so that its classes pickle."""
    return gym.make("FrozenLake-v1", map_name="8x8", **config)


class ThreeCartPoles(make_multi_agent("CartPole-v1")):
    """A subclass written in a module: pickled by its name, like any class."""

    def __init__(self, config: Optional[dict[str, Any]] = None) -> None:
        super().__init__({"num_agents": 3, **(config or {})})


class Counter(gym.Env, EzPickle):
    """Counts up; pickles as a call to its constructor (EzPickle), as MuJoCo and Box2D envs do."""

    observation_space = gym.spaces.Discrete(100)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        EzPickle.__init__(self)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.count = 0
        return self.count, {}

    def step(self, action: Any) -> Any:
        self.count += int(action)
        return self.count, 1.0, self.count >= 10, False, {}


#: (name, make, steps to play before pickling mid-episode)
ENVS: list[tuple[str, Callable[[], Any], int]] = [
    ("CartPole", lambda: marlhub.make("gymnasium/CartPole-v1", {"num_agents": 2}), 3),
    ("FrozenLake", lambda: marlhub.make("gymnasium/FrozenLake-v1", {"num_agents": 2}), 2),
    ("creator", lambda: make_multi_agent(slippery_lake)({"num_agents": 2}), 2),
    ("subclass", lambda: ThreeCartPoles(), 3),
    ("from_gymnasium", lambda: from_gymnasium(gym.make("CartPole-v1")), 3),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("name", "make", "steps"), ENVS, ids=[e[0] for e in ENVS])
def test_an_unpickled_env_plays_on_as_the_original(
        name: str, make: Callable[[], Any], steps: int, stage: str) -> None:
    env = make()
    data = pickled_at(env, stage, seed=3, steps=steps)
    twin, step = pickle.loads(data)
    assert type(twin) is type(env) and twin.envs[0] is not env.envs[0]
    reset_seed = 5 if stage == "before reset" else None
    # The second new episode resets unseeded: each env's own np_random carries over.
    expected = play_on(env, step, reset_seed=reset_seed)
    assert why_different(play_on(twin, step, reset_seed=reset_seed), expected) is None


def test_the_classes_pickle_as_themselves_in_this_process() -> None:
    cls = make_multi_agent("CartPole-v1")
    assert pickle.loads(pickle.dumps(cls)) is cls
    assert make_multi_agent("CartPole-v1") is not cls  # still a new class per call
    a, b = cls({"num_agents": 2}), make_multi_agent("CartPole-v1")()
    copies = pickle.loads(pickle.dumps([a, b, a]))
    assert [type(c) for c in copies] == [cls, type(b), cls] and copies[0] is copies[2]
    assert pickle.loads(pickle.dumps(ThreeCartPoles)) is ThreeCartPoles
    assert type(copy.deepcopy(a)) is cls


def test_a_class_with_a_lambda_creator_does_not_pickle() -> None:
    cls = make_multi_agent(lambda config: gym.make("CartPole-v1"))
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        pickle.dumps(cls())


def test_a_copy_of_ezpickle_envs_made_mid_episode_must_be_reset() -> None:
    env = from_gymnasium(Counter())
    env.reset(seed=0)
    env.step({"agent_0": 1})
    for twin in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        with pytest.raises(ResetNeededError, match="did not carry over"):
            twin.step({"agent_0": 1})
        assert twin.reset(seed=0) == ({"agent_0": 0}, {"agent_0": {}})


def test_a_pickle_loads_and_plays_on_in_a_fresh_interpreter() -> None:
    env = marlhub.make("gymnasium/FrozenLake-v1", {"num_agents": 2})
    data = pickled_at(env, "mid-episode", seed=4, steps=2)
    _, step = pickle.loads(data)
    assert why_different(play_on_in_fresh_interpreter(data), play_on(env, step)) is None


def test_a_class_loads_in_a_fresh_interpreter_as_make_multi_agent_of_its_source() -> None:
    cls = make_multi_agent("CartPole-v1")
    code = (
        "import pickle, sys\n"
        "cls, env = pickle.loads(sys.stdin.buffer.read())\n"
        "fresh = cls({'num_agents': 3})\n"
        "print(type(env) is cls, cls.env_name_or_creator, fresh.possible_agents,\n"
        "      fresh.reset(seed=1)[0][2].shape)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], input=pickle.dumps((cls, cls())),
                         capture_output=True, timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    assert run.stdout.decode().split() == ["True", "CartPole-v1", "[0,", "1,", "2]", "(4,)"]
