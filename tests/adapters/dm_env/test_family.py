"""The dmc_soccer/ family: ids, config checked against soccer.load, lockstep, the suite."""

from __future__ import annotations

import inspect
import numpy as np
import pytest

pytest.importorskip("dm_control", reason="the dmc_soccer/ family needs marlhub[dmc]")

from .dm_envs import soccer_missing  # noqa: E402

if soccer_missing() is not None:
    pytest.skip(str(soccer_missing()), allow_module_level=True)

from dm_control.locomotion import soccer  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.dm_env.adapter import DmEnvHubEnv  # noqa: E402
from marlhub.adapters.dm_env.family import DmcSoccerFamily  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.context import EnvContext  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402

#: Short episodes: 0.25 s of play, 10 steps.
SHORT = {"time_limit": 0.25}


def test_ids_and_the_made_env() -> None:
    assert marlhub.registered("dmc_soccer/*") == ["dmc_soccer/1vs1", "dmc_soccer/2vs2"]
    env = marlhub.make("dmc_soccer/2vs2", SHORT)
    assert type(env) is DmEnvHubEnv
    assert env.possible_agents == ["player_0", "player_1", "player_2", "player_3"]
    assert len(env.dm_env.task.players) == 4  # home0, home1, away0, away1


def test_the_config_reaches_soccer_load() -> None:
    env = marlhub.make("dmc_soccer/1vs1", {"time_limit": 0.1, "walker_type": "ant",
                                           "terminate_on_goal": False})
    assert env.get_action_space("player_0").shape == (8,)  # the ant's eight joints
    assert type(env.dm_env.task).__name__ == "MultiturnTask"
    env.reset(seed=0)
    steps = 0
    while True:  # 0.1 s at dm_control's 0.025 s a step
        *_, terminateds, truncateds, _ = env.step({a: np.zeros(8) for a in env.possible_agents})
        steps += 1
        if truncateds["__all__"]:
            break
    assert steps == 4 and not terminateds["__all__"]
    member = marlhub.make("dmc_soccer/1vs1", {"walker_type": soccer.WalkerType.BOXHEAD})
    assert member.get_action_space("player_0").shape == (3,)


def test_the_accepted_keys_are_soccer_loads() -> None:
    family = DmcSoccerFamily()
    keywords = set(inspect.signature(soccer.load).parameters) - {"team_size", "random_state"}
    assert set(family.accepted()) == keywords >= {"time_limit", "walker_type",
                                                   "disable_walker_contacts"}


@pytest.mark.parametrize(("env_id", "message"), [
    ("dmc_soccer/1vs2", r"two teams of the same size.*Did you mean 'dmc_soccer/1vs1'"),
    ("dmc_soccer/12vs12", r"teams of 1 to 11 players, not 12"),
    ("dmc_soccer/soccer", r"dmc_soccer/<n>vs<n>.*Did you mean 'dmc_soccer/1vs1', "
     r"'dmc_soccer/2vs2'"),
])
def test_ids_that_are_no_teams_get_suggestions(env_id: str, message: str) -> None:
    with pytest.raises(UnknownEnvError, match=message):
        marlhub.make(env_id)


@pytest.mark.parametrize(("config", "message"), [
    ({"time_limits": 5}, r"unknown key 'time_limits': soccer.load takes no such keyword\. "
     r"Accepted keys: 'disable_walker_contacts', .*'time_limit', 'walker_type'"),
    ({"team_size": 3}, r"'team_size' is given by the id \(dmc_soccer/<n>vs<n>\)"),
    ({"random_state": 0}, r"'random_state' is the hub env's to seed: reset\(seed=...\)"),
    ({"walker_type": "robot"}, r"walker_type must be one of WalkerType's members, got 'robot'\. "
     r"Pass one of 'BOXHEAD', 'ANT', 'HUMANOID'"),
    ({"time_limit": -1}, r"time_limit must be a number above 0, got -1"),
    ({"time_limit": "10"}, r"time_limit must be a number above 0, got '10'"),
    ({"time_limit": True}, r"time_limit must be a number above 0, got True"),
    ({"disable_walker_contacts": "yes"}, r"disable_walker_contacts must be True or False"),
])
def test_bad_config_is_refused_before_anything_is_built(config: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        marlhub.make("dmc_soccer/1vs1", config)


def test_lockstep_with_shimmy() -> None:
    family = DmcSoccerFamily()
    assert family.lockstep("1vs1", EnvContext(SHORT), episodes=2, seed=0, max_steps=100) == []
    with pytest.raises(ConfigError, match="walker_type"):
        family.lockstep("1vs1", EnvContext({"walker_type": 7}), episodes=1, seed=0,
                        max_steps=10)


def test_marlhub_check_passes_against_native_and_through_the_targets() -> None:
    report = check("dmc_soccer/1vs1", episodes=2, against_native=True, config=SHORT, strict=True,
                   interop=("pettingzoo.parallel",))
    assert report.ok and not report.findings, str(report)
    assert all(c.status == "pass" for c in report.conversions), str(report)


def test_a_dm_control_soccer_env_made_by_hand_is_adapted() -> None:
    env = marlhub.convert(soccer.load(team_size=1, time_limit=0.1))
    assert type(env) is DmEnvHubEnv and env.num_players == 2
