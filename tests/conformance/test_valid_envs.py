"""Valid envs that vary what real envs vary pass the strict suite with not a single finding."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from marlhub.conformance import check
from marlhub.episode.play import RandomEpisode
from tests.conformance import round4_breakers as D
from tests.conformance import valid_envs as V


@pytest.mark.parametrize("env_cls", V.VALID_ENVS, ids=lambda c: c.__name__)
def test_valid_env_passes_strict_check_with_no_finding(env_cls: type) -> None:
    # As a `module:attr` string, so episode 0 is also played in a fresh process.
    report = check(f"{V.__name__}:{env_cls.__name__}", episodes=5, strict=True)
    assert report.ok, str(report)
    assert report.findings == [], str(report)


@pytest.mark.parametrize("env_cls", [D.Patrol, D.BombAtTheLimit, D.NoopIsZero],
                         ids=lambda c: c.__name__)
def test_valid_twins_of_round_4_pass_strict_check(env_cls: type) -> None:
    # Every agent dies at the limit (a termination by the game); [0, 0] is a command.
    report = check(f"{D.__name__}:{env_cls.__name__}", episodes=5, strict=True)
    assert report.findings == [], str(report)


def test_late_joiners_do_join_and_idle_agents_are_rewarded() -> None:
    env = V.LateJoiners()
    steps = list(RandomEpisode(env, seed=0))
    assert [sorted(s.obs) for s in steps[:5]] == [["a"], ["a"], ["a", "b"], ["a", "b"],
                                                  ["a", "b", "c"]]
    idle = list(RandomEpisode(V.RewardsToIdleAgents(), seed=0))
    assert idle[1].rewards == {"a": 0.0, "b": -0.25}


def test_tuple_masks_are_honoured_when_sampling() -> None:
    actions = [a for s in RandomEpisode(V.TupleMasks(), seed=3) if s.actions
               for a in s.actions.values()]
    assert actions and all(a[0] in (0, 2) and a[1] == 1 for a in actions)
    assert all(isinstance(a, np.ndarray) and a in gym.spaces.MultiDiscrete([3, 2]) for a in actions)


def test_masks_in_infos_are_honoured_when_sampling() -> None:
    played = [s.actions for s in RandomEpisode(V.MasksInInfos(), seed=1) if s.actions]
    assert all(actions.get("b") != 0 for actions in played)
