"""PettingZoo envs pickle before reset, mid-episode and after the end.

The adapters keep a quick action check per agent once it has acted
(:class:`~marlhub.episode.actions.ActionChecker`); those pickle, so an env
pickles at any point. What the copy's native env is, PettingZoo decides:

* PettingZoo's own envs pickle as a call to their constructor (gymnasium's
  ``EzPickle``): the copy's native env is new and was never reset, so a copy
  made mid-episode refuses to step until reset, then plays as the original
  after the same reset;
* an env that pickles with its state (``Relay``, ``Herd``) plays on exactly as
  the original, its generators carried over.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

import pytest

pytest.importorskip("pettingzoo")

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import from_pettingzoo  # noqa: E402
from marlhub.contract.compare import why_different  # noqa: E402
from marlhub.episode.status import restarts_when_pickled  # noqa: E402
from marlhub.errors import ActionError, ResetNeededError  # noqa: E402
from tests.adapters.pettingzoo.test_custom_envs import Herd, Relay  # noqa: E402
from tests.adapters.pickling import (  # noqa: E402
    STAGES,
    pickled_at,
    play_on,
    play_on_in_fresh_interpreter,
)

# Third-party noise: gymnasium's logger warns about the spaces some PettingZoo envs build.
pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")

PISTONBALL = {"api": "parallel", "max_cycles": 4}

#: PettingZoo's own envs (EzPickle): (name, make, steps to play before pickling mid-episode)
RESTARTING: list[tuple[str, Callable[[], Any], int]] = [
    ("tictactoe (AEC)", lambda: marlhub.make("pettingzoo/classic/tictactoe-v3"), 2),
    ("rps (parallel)", lambda: marlhub.make("pettingzoo/classic/rps-v2", {"api": "parallel"}), 2),
    ("pistonball (parallel, Box actions)",
     lambda: marlhub.make("pettingzoo/butterfly/pistonball-v6", PISTONBALL), 2),
]

#: Envs that pickle with their state.
CARRIED_OVER: list[tuple[str, Callable[[], Any], int]] = [
    ("relay (AEC, masks in infos, an agent leaves)", lambda: from_pettingzoo(Relay()), 3),
    ("herd (parallel, an agent leaves)", lambda: from_pettingzoo(Herd()), 2),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("name", "make", "steps"), CARRIED_OVER, ids=[e[0] for e in CARRIED_OVER])
def test_an_env_that_pickles_with_its_state_plays_on_as_the_original(
        name: str, make: Callable[[], Any], steps: int, stage: str) -> None:
    env = make()
    assert not restarts_when_pickled(env.get_sub_environments)
    data = pickled_at(env, stage, seed=3, steps=steps)
    twin, step = pickle.loads(data)
    assert type(twin) is type(env)
    reset_seed = 5 if stage == "before reset" else None
    expected = play_on(env, step, reset_seed=reset_seed)
    assert why_different(play_on(twin, step, reset_seed=reset_seed), expected) is None


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("name", "make", "steps"), RESTARTING, ids=[e[0] for e in RESTARTING])
def test_pettingzoos_own_envs_pickle_as_new_envs_that_play_as_the_original_after_reset(
        name: str, make: Callable[[], Any], steps: int, stage: str) -> None:
    env = make()
    assert restarts_when_pickled(env.get_sub_environments)
    data = pickled_at(env, stage, seed=3, steps=steps)
    twin, step = pickle.loads(data)
    assert type(twin) is type(env) and twin.agents == []
    if step is not None:
        with pytest.raises(ResetNeededError, match="did not carry over"):
            twin.step({a: twin.get_action_space(a).sample() for a in step.actors})
    episodes = 1 if "pistonball" in name else 2
    expected = play_on(env, None, reset_seed=5, episodes=episodes)
    assert why_different(play_on(twin, None, reset_seed=5, episodes=episodes), expected) is None


def test_a_deep_copy_follows_the_same_rule() -> None:
    env = marlhub.make("pettingzoo/classic/tictactoe-v3")
    env.reset(seed=0)
    env.step({"player_1": 4})
    with pytest.raises(ResetNeededError, match="did not carry over"):
        copy.deepcopy(env).step({"player_2": 0})
    relay = from_pettingzoo(Relay())
    data = pickled_at(relay, "mid-episode", seed=1, steps=2)
    _, step = pickle.loads(data)
    assert why_different(play_on(copy.deepcopy(relay), step), play_on(relay, step)) is None


def test_the_quick_action_checks_are_pickled_with_the_env() -> None:
    env = from_pettingzoo(Relay())
    env.reset(seed=0)
    for agent in ("runner_0", "runner_1", "coach_0"):
        env.step({agent: 0})
    twin = pickle.loads(pickle.dumps(env))
    assert list(twin._checker._fast) == ["runner_0", "runner_1", "coach_0"]
    with pytest.raises(ActionError, match=r"Discrete\(3\)"):
        twin.step({"runner_0": 3})
    assert why_different(twin.step({"runner_0": 2}), env.step({"runner_0": 2})) is None


@pytest.mark.parametrize(("make", "stage"), [
    (lambda: from_pettingzoo(Relay()), "mid-episode"),
    (lambda: marlhub.make("pettingzoo/classic/tictactoe-v3"), "after the end"),
], ids=["relay mid-episode", "tictactoe after the end"])
def test_a_pickle_loads_and_plays_on_in_a_fresh_interpreter(
        make: Callable[[], Any], stage: str) -> None:
    env = make()
    data = pickled_at(env, stage, seed=4, steps=2)
    _, step = pickle.loads(data)
    reset_seed = 6 if step is None else None
    expected = play_on(env, step, reset_seed=reset_seed)
    assert why_different(play_on_in_fresh_interpreter(data, reset_seed=reset_seed), expected) is None
