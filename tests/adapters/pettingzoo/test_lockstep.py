"""compare_with_native finds what a faulty adapter gets wrong, under the right rule."""

from __future__ import annotations

from typing import Any

import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from marlhub.adapters.pettingzoo import (  # noqa: E402
    ParallelPettingZooEnv,
    PettingZooEnv,
    compare_with_native,
)
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY  # noqa: E402
from marlhub.core import ALL  # noqa: E402
from tests.adapters.pettingzoo.test_custom_envs import Herd, Relay  # noqa: E402


class OnlyActorsRewards(PettingZooEnv):
    """Reports rewards of the agents in the obs dict only (idle agents' rewards are lost)."""

    def step(self, action_dict: Any) -> Any:
        obs, rewards, terms, truncs, infos = super().step(action_dict)
        return obs, {a: r for a, r in rewards.items() if a in obs}, terms, truncs, infos


class SwapsObservations(PettingZooEnv):
    """Shows the next actor the observation of another agent."""

    def step(self, action_dict: Any) -> Any:
        obs, rewards, terms, truncs, infos = super().step(action_dict)
        (actor,) = [a for a in obs if not terms[a] and not truncs[a]] or [None]
        if actor is not None and self.env.num_agents > 1:
            other = next(a for a in self.env.agents if a != actor)
            obs[actor] = self.env.observe(other)
        return obs, rewards, terms, truncs, infos


class AllTruncatedAsTerminated(ParallelPettingZooEnv):
    """Reports the end of a truncated episode as termination (RLlib's old behaviour)."""

    def step(self, action_dict: Any) -> Any:
        obs, rewards, terms, truncs, infos = super().step(action_dict)
        if truncs[ALL]:
            terms = {a: True for a in terms}
            truncs = {a: False for a in truncs}
        return obs, rewards, terms, truncs, infos


class RaisesOnThirdStep(PettingZooEnv):
    def step(self, action_dict: Any) -> Any:
        self.calls = getattr(self, "calls", 0) + 1
        if self.calls == 3:
            raise RuntimeError("boom")
        return super().step(action_dict)


def test_the_real_adapters_agree_with_native() -> None:
    assert compare_with_native(Relay, episodes=5, adapt=PettingZooEnv) == []
    assert compare_with_native(Herd, episodes=5, adapt=ParallelPettingZooEnv) == []


def test_lost_rewards_are_trajectory_and_returns_findings() -> None:
    findings = compare_with_native(Relay, episodes=2, adapt=OnlyActorsRewards)
    rules = {(f.rule, f.episode) for f in findings}
    assert (EQUIV_TRAJECTORY, 0) in rules and (EQUIV_RETURNS, 0) in rules
    lost = [f for f in findings if f.rule == EQUIV_RETURNS and f.agent == "coach_0"]
    assert lost and "a reward was lost or counted twice" in lost[0].message
    trajectory = next(f for f in findings if f.rule == EQUIV_TRAJECTORY)
    assert "rewards differ" in trajectory.message and trajectory.reproducer.seed == 0


def test_wrong_observations_stop_the_episode_with_a_reproducer() -> None:
    findings = compare_with_native(lambda: pettingzoo_make("aec", "classic/tictactoe-v3"),
                                   episodes=2, seed=7, adapt=SwapsObservations)
    assert [f.rule for f in findings] == [EQUIV_TRAJECTORY, EQUIV_TRAJECTORY]
    first = findings[0]
    assert "observations differ" in first.message and first.step == 1
    assert first.reproducer.seed == 7 and len(first.reproducer.actions) == 1


def test_truncation_reported_as_termination_is_found() -> None:
    findings = compare_with_native(Herd, episodes=1, adapt=AllTruncatedAsTerminated)
    assert len(findings) == 1 and "terminateds differ" in findings[0].message


def test_an_adapter_that_raises_is_a_finding() -> None:
    findings = compare_with_native(Relay, episodes=1, adapt=RaisesOnThirdStep)
    assert len(findings) == 1
    assert "raised RuntimeError: boom" in findings[0].message and findings[0].step == 3
