"""Vector rewards in the contract: each reward is checked against its agent's declared space."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from marlhub.conformance import check
from marlhub.contract import rules as R
from marlhub.contract.compare import returns_findings
from marlhub.errors import VectorRewardError
from marlhub.rewards import (
    add_reward,
    require_scalar_rewards,
    reward_space_of,
    vector_reward_agents,
    why_bad_reward,
    zero_reward,
)
from tests.conformance.rule_breakers import Duel
from tests.contract import vector_reward_envs as V


def test_an_env_of_vector_rewards_in_their_declared_space_keeps_every_rule() -> None:
    report = check(V.TwoObjectives, episodes=3, strict=True)
    assert report.findings == [], str(report)


@pytest.mark.parametrize(("env", "why"), [
    (V.PaysThreeObjectives, "its shape (3,) is not the space's (2,)"),
    (V.PaysOutsideTheBounds, "entry [0] = 2.0 is outside the space's bounds [-1.0, 1.0]"),
    (V.PaysScalars, "its shape () is not the space's (2,)"),
    (V.PaysNaN, "entry [1] = nan is not finite"),
    (V.PaysBools, "its dtype bool is not a real number type"),
])
def test_a_reward_outside_its_declared_space_breaks_reward_scalar_only(env: Any, why: str) -> None:
    report = check(env, episodes=2)
    assert report.rules_broken() == [R.REWARD_SCALAR], str(report)
    message = report.findings[0].message
    assert "not in its declared reward space Box(-1.0, 1.0, (2,), float32)" in message
    assert why in message and message.endswith("or declare the space the rewards have.")


def test_without_a_declared_space_a_vector_reward_is_refused_as_before() -> None:
    class Undeclared(V.TwoObjectives):
        def __init__(self, config: Any = None) -> None:
            super().__init__(config)
            self.reward_spaces = None

    report = check(Undeclared, episodes=1)
    assert report.rules_broken() == [R.REWARD_SCALAR]
    assert "rewards must be finite int or float scalars" in report.findings[0].message


def test_the_declared_spaces_are_read_from_getter_or_dict_and_none_means_scalar() -> None:
    env = V.TwoObjectives()
    assert reward_space_of(env, "a") is V.SPACE and reward_space_of(Duel(), "a") is None
    assert list(vector_reward_agents(env)) == ["a", "b"]

    class Getter:  # a duck-typed env that declares by its getter
        possible_agents = ["x"]

        def get_reward_space(self, agent: Any) -> gym.Space:
            return V.SPACE

    assert reward_space_of(Getter(), "x") is V.SPACE
    assert zero_reward(V.SPACE).tolist() == [0.0, 0.0] and zero_reward(None) == 0.0
    assert why_bad_reward(V.SPACE, [0.5, -0.5]) is None  # any real array-like of its shape
    assert why_bad_reward(V.SPACE, np.array([0.5, 0.5], np.float64)) is None  # a wider dtype
    assert why_bad_reward(V.SPACE, "ab") == "'ab' (str) is not an array"


def test_returns_of_vectors_add_per_objective_and_compare_within_their_rounding() -> None:
    total = add_reward(add_reward(0.0, np.array([0.1, 1], np.float32)), np.array([0.2, 1]))
    assert total.dtype == np.float64 and total.tolist() == pytest.approx([0.3, 2.0])
    native = np.array([0.1, 1], np.float32) + np.array([0.2, 1], np.float32)  # in float32
    assert returns_findings({"a": total}, {"a": native}, episode=0, seed=0, actions=[]) == []
    lost = returns_findings({"a": total}, {"a": np.array([0.3, 1.0])}, episode=0, seed=0,
                            actions=[{"a": 1}])  # float64: no rounding to allow for
    assert [f.rule for f in lost] == [R.EQUIV_RETURNS]
    assert "summed [0.30000000" in lost[0].message and "return is [0.3, 1.0]" in lost[0].message


def test_a_consumer_of_scalars_names_the_agent_its_space_and_the_fix() -> None:
    require_scalar_rewards(Duel(), "to_gymnasium")  # scalars: nothing to say
    with pytest.raises(VectorRewardError, match=(
            r"^to_gymnasium: it needs one number per agent as reward, but the env declares "
            r"vector rewards: 'a' has the reward space Box\(-1.0, 1.0, \(2,\), float32\) "
            r"\(2 objectives\)\. Scalarize them first with explicit weights, one per objective: "
            r"marlhub.wrappers.ScalarizeRewards\(env, weights\) with 2 weights")) as caught:
        require_scalar_rewards(V.TwoObjectives(), "to_gymnasium")
    assert isinstance(caught.value, ValueError)
    assert (caught.value.agent_id, caught.value.space) == ("a", V.SPACE)
