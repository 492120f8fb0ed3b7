"""ScalarizeRewards, and the hub -> hub wrappers carrying vector rewards."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from marlhub.conformance import check
from marlhub.errors import VectorRewardError
from marlhub.wrappers import GroupAgentsWrapper, IllegalActionWrapper, ScalarizeRewards
from marlhub.wrappers.rename import RenameAgents
from tests.conformance.rule_breakers import Duel
from tests.contract.vector_reward_envs import SPACE, BothAtOnce, TwoObjectives


def _play(env: Any, actions: list[dict]) -> list[dict]:
    env.reset(seed=0)
    return [env.step(a)[1] for a in actions]


ACTIONS = [{"a": 2}, {"b": 0}, {"a": 1}, {"b": 2}, {"a": 0}, {"a": 1, "b": 2}]


def test_the_weighted_sum_is_one_float_per_agent_and_the_contract_holds() -> None:
    env = ScalarizeRewards(TwoObjectives(), [1.0, 4.0])
    assert env.get_reward_space("a") is None and env.weights["b"].tolist() == [1.0, 4.0]
    raw = _play(TwoObjectives(), ACTIONS)
    for paid, vectors in zip(_play(env, ACTIONS), raw):
        assert all(type(r) is float for r in paid.values())
        assert paid == {a: float(v[0] + 4 * v[1]) for a, v in vectors.items()}
    assert check(lambda: ScalarizeRewards(TwoObjectives(), {"a": [1, 0], "b": [0, 1]}),
                 episodes=2, strict=True).findings == []


@pytest.mark.parametrize(("weights", "match"), [
    ([1.0, 2.0, 3.0], r"the weights for 'a' have shape \(3,\) but its reward space "
                      r"Box\(-1.0, 1.0, \(2,\), float32\) has 2 objectives\. Pass 2 finite weights"),
    ([1.0, np.inf], r"the weights for 'a' are \[1.0, inf\], not all finite"),
    ("ab", r"the weights for 'a' are 'ab', not a sequence of numbers"),
    ([True, False], r"the weights for 'a' are \[True, False\], not a sequence of numbers"),
    ({"a": [1, 1]}, r"the weights name \['a'\], but the agents paid vector rewards are \['a', "
                    r"'b'\] \(missing \['b'\], not paid vectors \[\]\)\. Give weights for exactly"),
    ({"a": [1, 1], "b": [1, 1], "c": [1, 1]}, r"the weights name .*not paid vectors \['c'\]"),
])
def test_weights_that_do_not_fit_are_refused_with_what_fits(weights: Any, match: str) -> None:
    with pytest.raises(VectorRewardError, match=f"^ScalarizeRewards: {match}"):
        ScalarizeRewards(TwoObjectives(), weights)


def test_an_env_of_scalar_rewards_has_nothing_to_scalarize() -> None:
    with pytest.raises(VectorRewardError, match="declares no vector rewards .* Use the env as it "
                       "is: its rewards are already one number per agent"):
        ScalarizeRewards(Duel(), [1.0])


def test_the_wrappers_carry_the_declared_spaces_and_the_arrays() -> None:
    renamed = RenameAgents(TwoObjectives(), {"a": "left", "b": "right"})
    assert renamed.get_reward_space("left") is SPACE
    team = GroupAgentsWrapper(BothAtOnce(), {"team": ["a", "b"]})
    assert team.get_reward_space("team") == gym.spaces.Box(-2.0, 2.0, (2,), np.float32)
    team.reset(seed=0)
    rewards, infos = team.step({"team": (2, 1)})[1::3]
    assert rewards["team"].tolist() == [1.0, -0.5]  # [1, -0.5] + [0, 0], per objective
    assert [r.tolist() for r in infos["team"]["individual_rewards"]] == [[1.0, -0.5], [0.0, 0.0]]
    assert check(lambda: GroupAgentsWrapper(BothAtOnce(), {"team": ["a", "b"]}),
                 episodes=2, strict=True).findings == []


def test_members_paid_rewards_of_different_shapes_cannot_be_one_group() -> None:
    class Mixed(TwoObjectives):
        def __init__(self, config: Any = None) -> None:
            super().__init__(config)
            self.reward_spaces = {"a": SPACE}

    with pytest.raises(VectorRewardError, match="the members of 'team' are paid rewards of "
                       "different kinds .* Group only agents whose rewards have the same shape"):
        GroupAgentsWrapper(Mixed(), {"team": ["a", "b"]})


def test_the_illegal_action_penalty_goes_to_every_objective() -> None:
    class Masked(BothAtOnce):
        def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
            obs, _ = super().reset(seed=seed, options=options)
            return obs, {a: {"action_mask": np.array([1, 1, 0], np.int8)} for a in obs}

    env = IllegalActionWrapper(Masked(), "terminate")
    env.reset(seed=0)
    rewards = env.step({"a": 2, "b": 0})[1]
    assert rewards["a"].tolist() == [-1.0, -1.0] and rewards["b"].tolist() == [0.0, 0.0]
