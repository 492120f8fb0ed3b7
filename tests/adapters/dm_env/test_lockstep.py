"""The lockstep with Shimmy's DmControlMultiAgentCompatibilityV0, and what it reads past."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("dm_env", reason="from_dm_env needs marlhub[dmc]")
pytest.importorskip("shimmy", reason="the lockstep's peer is Shimmy: marlhub[dmc]")
pytest.importorskip("dm_control", reason="Shimmy's multi-agent wrapper imports dm_control")

from shimmy.dm_control_multiagent_compatibility import (  # noqa: E402
    DmControlMultiAgentCompatibilityV0,
)

from marlhub.adapters.dm_env import compare_with_native, from_dm_env  # noqa: E402
from marlhub.adapters.dm_env.adapter import DmEnvHubEnv  # noqa: E402
from marlhub.contract.rules import EQUIV_TRAJECTORY  # noqa: E402

from .dm_envs import Relay, soccer_missing  # noqa: E402


def test_shimmy_reports_a_discount_of_0_as_truncated() -> None:
    # The peer's own reading (Shimmy 2.0.1): the reverse of dm_env's convention, which
    # the twin reads past through the discount Shimmy puts in its infos.
    env = DmControlMultiAgentCompatibilityV0(env=Relay(length=1, ending=0.0))
    env.reset(seed=0)
    _, _, terminations, truncations, infos = env.step({"player_0": np.zeros(2, np.float32),
                                                       "player_1": 0})
    assert truncations == {"player_0": True, "player_1": True}
    assert not any(terminations.values()) and infos["player_0"]["timestep.discount"] == 0.0


@pytest.mark.parametrize("ending", [(0.0, 1.0), 0.0, 1.0])
def test_a_pure_python_dm_env_agrees_with_shimmy(ending: object) -> None:
    def make() -> Relay:
        return Relay(length=4, ending=ending)

    assert compare_with_native(from_dm_env(make()), make, episodes=3) == []


class Inverted(DmEnvHubEnv):
    """A broken adapter: the ends the other way round, as Shimmy's multi-agent wrapper has them."""

    def step(self, action_dict: Any) -> Any:  # type: ignore[override]
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        return obs, rewards, truncateds, terminateds, infos


def test_a_broken_adapter_and_another_native_env_are_found() -> None:
    findings = compare_with_native(Inverted(Relay(length=3, ending=0.0)),
                                   lambda: Relay(length=3, ending=0.0), episodes=1)
    assert [f.rule for f in findings] == [EQUIV_TRAJECTORY]
    assert "terminateds differ" in findings[0].message and findings[0].step == 3
    findings = compare_with_native(from_dm_env(Relay(length=3)), lambda: Relay(length=4),
                                   episodes=1)
    assert [f.rule for f in findings] == [EQUIV_TRAJECTORY]


@pytest.mark.skipif(soccer_missing() is not None, reason=str(soccer_missing()))
def test_soccer_agrees_with_shimmy_under_each_seed() -> None:
    from dm_control.locomotion import soccer

    def make() -> object:
        return soccer.load(team_size=1, time_limit=0.5)

    hub = from_dm_env(make())
    assert compare_with_native(hub, make, episodes=2, seed=3) == []
    # and an episode of another seed is another episode
    first = hub.reset(seed=3)[0]["player_0"]["ball_ego_position"]
    assert not np.array_equal(hub.reset(seed=4)[0]["player_0"]["ball_ego_position"], first)
