"""TorchRL's view of vector rewards: one reward entry per objective, groups of one shape."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torchrl")

from torchrl.envs.utils import check_env_specs  # noqa: E402

from marlhub.adapters.torchrl import to_torchrl  # noqa: E402
from marlhub.errors import ConfigError  # noqa: E402
from tests.contract.vector_reward_envs import SPACE, TwoObjectives  # noqa: E402


class OnlyAHasObjectives(TwoObjectives):
    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.reward_spaces = {"a": SPACE}

    def pay(self, reward: float) -> Any:
        return reward

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, *rest = super().step(action_dict)
        rewards["a"] = TwoObjectives.pay(self, rewards["a"])
        return (obs, rewards, *rest)


def test_a_group_of_two_objectives_has_a_reward_spec_of_n_agents_by_two() -> None:
    env = to_torchrl(TwoObjectives())
    assert env.group_map == {"agents": ["a", "b"]}  # equal spaces, equal rewards: one group
    assert tuple(env.full_reward_spec["agents", "reward"].shape) == (2, 2)
    check_env_specs(env, seed=0)
    paid = env.rollout(6)["next", "agents", "reward"]
    assert tuple(paid.shape) == (6, 2, 2)
    assert (paid[..., 1] == -paid[..., 0] / 2).all()  # [r, -r / 2]: each objective in place


def test_agents_paid_rewards_of_other_shapes_go_to_other_groups() -> None:
    env = to_torchrl(OnlyAHasObjectives())
    assert sorted(map(tuple, env.group_map.values())) == [("a",), ("b",)]
    assert {g: tuple(env.full_reward_spec[g, "reward"].shape) for g in env.group_map} == {
        g: (1, 2) if members == ["a"] else (1, 1) for g, members in env.group_map.items()}
    check_env_specs(env, seed=0)
    with pytest.raises(ConfigError, match=r"the agents of group 'team' are paid rewards of "
                       r"different shapes \('a': \(2,\), 'b': \(1,\)\).*Put agents whose rewards "
                       r"differ in shape in different groups"):
        to_torchrl(OnlyAHasObjectives(), group_map={"team": ["a", "b"]})


def test_a_vector_env_of_vector_rewards_keeps_the_objectives() -> None:
    """``to_torchrl`` over a vector env's array face: its reward spec has the objectives too."""
    pytest.importorskip("momaland")
    import marlhub

    env = to_torchrl(marlhub.make_vec("momaland/catch-v0", 2))
    (group, agents), = env.group_map.items()
    assert tuple(env.full_reward_spec[group, "reward"].shape) == (2, len(agents), 2)
    check_env_specs(env, seed=0)
    assert tuple(env.rollout(5)["next", group, "reward"].shape) == (2, 5, len(agents), 2)
