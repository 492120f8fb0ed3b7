"""RLlib -> hub: from_rllib adds the contract's guarantees to RLlib-style envs (Ray not needed).

The envs below are the RLlib docs' examples as printed (their base class is
RLlib's MultiAgentEnv when Ray is installed, a plain class otherwise), with one
change: tic-tac-toe draws its start player from a generator seeded in
``reset`` instead of ``np.random`` so that episodes reproduce.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.adapters.rllib import (
    RLlibEnv,
    from_rllib,
    read_possible_agents,
    register_with_ray,
    to_rllib,
)
from marlhub.conformance import check
from marlhub.core import ALL
from marlhub.envs import TicTacToe
from marlhub.errors import (
    ActionError,
    EnvContractError,
    MissingDependencyError,
    ProtocolError,
    ResetNeededError,
)
from tests.rllib_docs_envs import rock_paper_scissors_class, tic_tac_toe_class

BASES: list[Any] = [pytest.param(object, id="plain")]
if importlib.util.find_spec("ray") is not None:
    BASES.append(pytest.param("ray", id="ray"))


def _base(kind: Any) -> type:
    if kind == "ray":
        from ray.rllib.env.multi_agent_env import MultiAgentEnv

        return MultiAgentEnv
    return object


def docs_rock_paper_scissors(base: type) -> Any:
    return rock_paper_scissors_class(base)()


def docs_tic_tac_toe(base: type) -> Any:
    return tic_tac_toe_class(base, seeded_start=True)()


@pytest.mark.parametrize("base", BASES)
@pytest.mark.parametrize("make", [docs_rock_paper_scissors, docs_tic_tac_toe])
def test_docs_envs_conform_through_from_rllib(make: Any, base: Any) -> None:
    native = make(_base(base))
    raw = check(native, episodes=5)
    assert not raw.ok  # as printed they break the contract (no __all__ in truncateds, ...)
    report = check(from_rllib(native), episodes=10, strict=True)
    assert report.ok, str(report)


def test_missing_all_is_filled_in_and_agents_are_kept() -> None:
    env = from_rllib(docs_tic_tac_toe(object))
    obs, _ = env.reset(seed=1)
    assert env.agents == ["player1", "player2"]
    obs, _, terminateds, truncateds, _ = env.step({next(iter(obs)): 4})
    assert truncateds == {ALL: False} and terminateds == {ALL: False}
    for _ in range(20):
        if terminateds[ALL]:
            break
        (mover,) = obs
        free = int(np.flatnonzero(obs[mover] == 0)[0])
        obs, _, terminateds, truncateds, _ = env.step({mover: free})
    assert terminateds[ALL] and env.agents == []
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({"player1": 0})


class Counting:
    """RLlib-style: one agent with a masked Discrete(3) action; counts native steps."""

    def __init__(self) -> None:
        self.possible_agents = self.agents = ["x"]
        self.observation_spaces = {"x": gym.spaces.Dict({
            "obs": gym.spaces.Discrete(2), "action_mask": gym.spaces.MultiBinary(3),
        })}
        self.action_spaces = {"x": gym.spaces.Discrete(3)}
        self.steps = 0

    def _obs(self) -> dict:
        return {"x": {"obs": 0, "action_mask": np.array([1, 0, 1], np.int8)}}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        return self._obs(), {}

    def step(self, action_dict: dict) -> Any:
        self.steps += 1
        return self._obs(), {"x": 0.0}, {ALL: self.steps >= 3}, {ALL: False}, {}


@pytest.mark.parametrize(
    ("actions", "error"),
    [
        ({"x": 1}, ("Bad action for 'x': got 1, expected an action in Discrete\\(3\\) \\(action 1 is masked "
                    "out; legal actions are \\[0, 2\\]")),
        ({"x": 7}, "Bad action for 'x': got 7"),
        ({"x": 0, "y": 0}, "'y' is not an agent of Counting"),
        ({}, "expected an action for every actor"),
        ([0], "expected a dict mapping each actor"),
    ],
)
def test_bad_actions_never_reach_the_env(actions: Any, error: str) -> None:
    native = Counting()
    env = from_rllib(native)
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called yet"):
        env.step({"x": 0})
    env.reset(seed=0)
    with pytest.raises(ActionError, match=error):
        env.step(actions)
    assert native.steps == 0
    env.step({"x": 2})
    assert native.steps == 1


class ForgetsRewards(Counting):
    def step(self, action_dict: dict) -> Any:
        obs, _, terminateds, truncateds, infos = super().step(action_dict)
        return obs, {}, terminateds, truncateds, infos


def test_guard_raises_where_rllib_would() -> None:
    env = from_rllib(ForgetsRewards())
    env.reset(seed=0)
    rule = "'reward.present': 'x' acted and got an observation"
    with pytest.raises(EnvContractError, match=rule):
        env.step({"x": 0})
    quiet = from_rllib(ForgetsRewards(), check=False)
    quiet.reset(seed=0)
    assert quiet.step({"x": 0})[1] == {}


class OldStack:
    """RLlib's old API stack: `_agent_ids` and one shared space."""

    def __init__(self) -> None:
        self._agent_ids = {"b", "a"}
        self.observation_space = gym.spaces.Discrete(2)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        return {"a": 0, "b": 0}, {}

    def step(self, action_dict: dict) -> Any:
        return {"a": 1, "b": 1}, {"a": 1.0, "b": 1.0}, {ALL: True}, {ALL: False}, {}


def test_old_api_stack_envs() -> None:
    env = from_rllib(OldStack())
    assert env.possible_agents == ["a", "b"]
    assert env.get_observation_space("a") is env.get_observation_space("b")
    assert check(env, episodes=3).ok


def test_reset_that_returns_no_infos() -> None:
    class OldGym(Counting):
        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
            return self._obs()

    with pytest.raises(EnvContractError, match="'reset.returns_dicts': reset\\(\\) returned dict"):
        from_rllib(OldGym()).reset(seed=0)


def test_what_is_no_rllib_env_is_refused() -> None:
    with pytest.raises(ProtocolError, match="Expected an RLlib MultiAgentEnv, got builtins.object"):
        from_rllib(object())

    class Nameless:
        observation_spaces: dict = {}
        action_spaces: dict = {}
        possible_agents: list = []

        def reset(self) -> Any: ...

        def step(self, actions: Any) -> Any: ...

    with pytest.raises(ProtocolError, match="that names its agents"):
        from_rllib(Nameless())
    with pytest.raises(ProtocolError, match="which lacks 'possible_agents'"):
        read_possible_agents(object())


def test_hub_envs_pass_through() -> None:
    hub = TicTacToe()
    assert from_rllib(hub) is hub
    wrapped = from_rllib(docs_rock_paper_scissors(object))
    assert isinstance(wrapped, RLlibEnv) and marlhub.convert(wrapped, to="marlhub") is wrapped


def test_ray_missing_is_named_with_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from marlhub.adapters import _rllib_to

    _rllib_to.hub_rllib_env_class.cache_clear()
    monkeypatch.setitem(sys.modules, "ray.rllib.env.multi_agent_env", None)
    try:
        needs = r"to_rllib\(\) needs the 'ray'.*marlhub\[rllib\]"
        with pytest.raises(MissingDependencyError, match=needs):
            to_rllib(TicTacToe())
        with pytest.raises(MissingDependencyError, match=r"register_with_ray\(\) needs the 'ray'"):
            register_with_ray("tic_tac_toe")
    finally:
        _rllib_to.hub_rllib_env_class.cache_clear()
