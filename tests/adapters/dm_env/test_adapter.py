"""from_dm_env: a multi-player dm_env as a hub env (players, spaces, rewards, ends, seeds...)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("dm_env", reason="from_dm_env needs marlhub[dmc]")

import marlhub  # noqa: E402
from marlhub.adapters.dm_env import from_dm_env, is_dm_env  # noqa: E402
from marlhub.adapters.dm_env.adapter import DmEnvHubEnv  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ActionError,
    ConfigError,
    EnvContractError,
    ResetNeededError,
)

from .dm_envs import Relay, Solo, Unseeded, soccer_missing  # noqa: E402

needs_soccer = pytest.mark.skipif(soccer_missing() is not None, reason=str(soccer_missing()))
MOVE = np.array([0.5, -0.25], np.float32)


def _play(env: Any, steps: int) -> list[Any]:
    return [env.step({"player_0": MOVE, "player_1": 2}) for _ in range(steps)]


def test_players_are_agents_with_the_spaces_of_their_specs() -> None:
    env = from_dm_env(Relay())
    assert type(env) is DmEnvHubEnv and env.possible_agents == ["player_0", "player_1"]
    assert env.get_observation_space("player_0") == gym.spaces.Dict({
        "point": gym.spaces.Box(-10.0, 10.0, (2,), np.float32), "clock": gym.spaces.Discrete(16)})
    assert env.get_observation_space("player_1")["ready"] == gym.spaces.Box(0, 1, (), np.bool_)
    assert env.get_action_space("player_0") == gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert env.get_action_space("player_1") == gym.spaces.Discrete(3)
    obs, infos = env.reset(seed=0)
    assert env.agents == ["player_0", "player_1"] and infos == {}
    assert all(env.get_observation_space(a).contains(o) for a, o in obs.items())


def test_every_player_acts_and_gets_its_reward_in_the_natives_dtype() -> None:
    native = Relay()
    env = from_dm_env(native)
    env.reset(seed=0)
    obs, rewards, terminateds, truncateds, infos = env.step({"player_0": MOVE, "player_1": 2})
    move, choice = native.actions[-1]
    assert move.dtype == np.float32 and choice.dtype == np.int32 and int(choice) == 2
    assert rewards == {"player_0": 0.25, "player_1": 2.0}
    assert type(rewards["player_0"]) is float
    assert terminateds == {"player_0": False, "player_1": False, "__all__": False} == truncateds
    assert infos == {"player_0": {"discount": 1.0}, "player_1": {"discount": 1.0}}
    assert obs["player_0"]["clock"] == 1 and env.agents == ["player_0", "player_1"]


@pytest.mark.parametrize(("ending", "terminated", "truncated"), [
    ((0.0, 1.0), {"player_0": True, "player_1": False, "__all__": False},
     {"player_0": False, "player_1": True, "__all__": True}),
    (0.0, {"player_0": True, "player_1": True, "__all__": True},
     {"player_0": False, "player_1": False, "__all__": False}),
    (1.0, {"player_0": False, "player_1": False, "__all__": False},
     {"player_0": True, "player_1": True, "__all__": True}),
], ids=["per-player", "discount-0-terminates", "discount-1-truncates"])
def test_the_last_step_ends_each_player_by_its_discount(ending: Any, terminated: dict,
                                                        truncated: dict) -> None:
    env = from_dm_env(Relay(length=2, ending=ending))
    env.reset(seed=0)
    *_, (obs, _, terminateds, truncateds, infos) = _play(env, 2)
    assert (terminateds, truncateds) == (terminated, truncated)
    assert set(obs) == {"player_0", "player_1"} and env.agents == []
    with pytest.raises(ResetNeededError, match="episode"):
        _play(env, 1)


@pytest.mark.parametrize(("rewards", "expected"), [
    ("shared", {"player_0": 1.0, "player_1": 1.0}),  # one number: every player's
    ("none", {"player_0": 0.0, "player_1": 0.0}),
])
def test_a_shared_or_missing_reward(rewards: str, expected: dict) -> None:
    env = from_dm_env(Relay(rewards=rewards))
    env.reset(seed=0)
    assert _play(env, 1)[0][1] == expected


def test_a_bad_action_dict_is_refused_before_anything_moves() -> None:
    native = Relay()
    env = from_dm_env(native)
    with pytest.raises(ResetNeededError, match="reset"):
        env.step({"player_0": MOVE, "player_1": 0})
    env.reset(seed=0)
    with pytest.raises(ActionError, match="player_1"):
        env.step({"player_0": MOVE})
    with pytest.raises(ActionError, match=r"player_1.*Discrete\(3\)"):
        env.step({"player_0": MOVE, "player_1": 3})
    with pytest.raises(ActionError, match="player_0"):
        env.step({"player_0": np.array([2.0, 0.0], np.float32), "player_1": 0})
    assert native.actions == []


def test_a_seed_replays_the_episode_through_the_envs_own_random_state() -> None:
    env = from_dm_env(Relay(length=5))
    first = env.reset(seed=7)[0]["player_1"]["noise"]
    steps = [s[0]["player_1"]["noise"] for s in _play(env, 4)]
    assert np.array_equal(env.reset(seed=7)[0]["player_1"]["noise"], first)
    assert all(np.array_equal(s[0]["player_1"]["noise"], n) for s, n in zip(_play(env, 4), steps))
    assert not np.array_equal(env.reset(seed=8)[0]["player_1"]["noise"], first)


def test_a_custom_reseed_or_none() -> None:
    seen = []
    env = from_dm_env(Unseeded(), reseed=lambda native, seed: seen.append(seed))
    env.reset(seed=3)
    assert seen == [3]
    assert from_dm_env(Unseeded(), reseed=None).reset(seed=3)[0]


@pytest.mark.parametrize(("make", "options", "message"), [
    (object, {}, r"object is no dm_env.Environment \(it lacks \['action_spec', .*\]\).*"
     r"Shimmy's wrappers included, goes through marlhub.convert"),
    (Solo, {}, r"action_spec\(\) is DiscreteArray.*not a list with one spec per player: this "
     r"is a single-agent dm_env.*shimmy.DmControlCompatibilityV0.*from_gymnasium"),
    (Unseeded, {}, r"reset\(seed=...\) cannot reach Unseeded's random state.*Pass "
     r"reseed=function\(env, seed\).*or reseed=None"),
    (Relay, {"reseed": "always"}, r"reseed must be 'auto', None or a function"),
    (Relay, {"agent_ids": ["a"]}, r"agent_ids must name each of the 2 players once, got \['a'\]"),
    (Relay, {"agent_ids": ["a", "a"]}, r"each of the 2 players once"),
    (Relay, {"agent_ids": "ab"}, r"agent_ids must be a sequence of 2 ids"),
    (Relay, {"agent_ids": ["a", "__all__"]}, r"'__all__' is unhashable or reserved"),
])
def test_bad_envs_and_options_are_refused_clearly(make: Any, options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        from_dm_env(make(), **options)


def test_agent_ids_rename_the_players() -> None:
    env = from_dm_env(Relay(), agent_ids=["home_0", "away_0"])
    env.reset(seed=0)
    assert list(env.step({"home_0": MOVE, "away_0": 1})[1]) == ["home_0", "away_0"]


def test_convert_and_to_hub_detect_a_dm_env() -> None:
    native = Relay()
    assert is_dm_env(native) and not is_dm_env(from_dm_env(native))
    assert type(marlhub.convert(native)) is DmEnvHubEnv
    assert type(marlhub.convert(native, to="pettingzoo.parallel")).__name__ == "HubParallelEnv"


def test_a_pure_python_dm_env_copies_and_pickles_mid_episode() -> None:
    env = from_dm_env(Relay(length=5, seed=1))
    env.reset(seed=2)
    _play(env, 2)
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        ours, theirs = _play(twin, 2), _play(env, 2)
        assert all(np.array_equal(a[0]["player_1"]["noise"], b[0]["player_1"]["noise"])
                   for a, b in zip(ours, theirs))
        env.reset(seed=2)
        _play(env, 2)


def test_the_suite_passes_on_a_pure_python_dm_env() -> None:
    report = check(lambda: from_dm_env(Relay(length=4)), episodes=3, strict=True)
    assert report.ok and not report.findings, str(report)


@needs_soccer
def test_dm_controls_soccer_refuses_copies_and_closes_once() -> None:
    from dm_control.locomotion import soccer

    env = from_dm_env(soccer.load(team_size=1, time_limit=0.1))
    env.reset(seed=0)
    for how in (copy.deepcopy, pickle.dumps):
        with pytest.raises(EnvContractError, match="env.copyable.*neither deep-copies"):
            how(env)
    env.close()
    env.close()
    with pytest.raises(ResetNeededError):
        env.step({a: np.zeros(3) for a in env.possible_agents})
