"""RLlib's own sampler on converted envs: each agent keeps in RLlib's episodes what it earned."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.rllib")

import marlhub  # noqa: E402
from marlhub.conformance.interop import check_targets  # noqa: E402
from marlhub.conformance.rllib_sampler import compare_rllib_sampler  # noqa: E402
from tests.adapters.rllib.paid_envs import Blinds, SilentWinner  # noqa: E402
from tests.conformance import rule_breakers as B  # noqa: E402

STEPS = 120


@pytest.mark.parametrize("make", [
    Blinds, SilentWinner,
    lambda: marlhub.make("tic_tac_toe"),
    lambda: marlhub.make("traffic", {"max_steps": 12}),
    lambda: marlhub.make("rock_paper_scissors"),
], ids=["Blinds", "SilentWinner", "tic_tac_toe", "traffic", "rock_paper_scissors"])
def test_rllibs_episodes_hold_every_reward_of_the_converted_env(make: Any) -> None:
    assert compare_rllib_sampler(make, steps=STEPS) is None


def test_a_reward_rllib_drops_is_named_with_its_agent_and_step() -> None:
    # Shown as the hub env gives it: RLlib drops a reward that comes with a first obs...
    problem = compare_rllib_sampler(Blinds, steps=STEPS, options={"carry_rewards": False})
    assert problem is not None
    assert ("episode 1 (the runner's reset seeded 0): 'b' has 0.0 in RLlib's episode but earned "
            "-0.5 in the hub env: at step 1 the hub paid it -0.5, which RLlib's episode does "
            "not hold") in problem
    # ... and the last move of a winner without a final obs, at a sample boundary.
    problem = compare_rllib_sampler(SilentWinner, steps=STEPS, options={"carry_rewards": False})
    assert problem is not None
    assert "the hub paid it 5.0, which RLlib's episode does not hold" in problem


def test_a_truncation_rllib_calls_a_termination_is_reported() -> None:
    problem = compare_rllib_sampler(lambda: marlhub.make("traffic", {"max_steps": 8}), steps=20,
                                    options={"carry_rewards": False})
    assert problem is not None
    assert "the hub truncated the episode at step 8 but RLlib's episode is terminated" in problem


def test_the_rllib_target_fails_when_rllib_loses_a_reward() -> None:
    # 'c' takes part and is paid every step, but is never observed: no step can carry it.
    result = check_targets(B.PaysAWatcherWithoutObs, ["rllib"])[0]
    assert result.status == "fail"
    assert "'c' has 0.0 in RLlib's episode but earned -6.0 in the hub env" in result.reason
    assert check_targets(SilentWinner, ["rllib"])[0].status == "pass"
