"""Small hub envs of vector rewards (a declared reward space per agent), one keeping the contract.

:class:`TwoObjectives` is the rule breakers' ``Duel`` (turns, then both agents at once)
paying each agent ``[r, -r / 2]`` in a declared ``Box(-1, 1, (2,))``; the others break
``reward.scalar`` one way each.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from tests.conformance.rule_breakers import Duel

SPACE = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


class TwoObjectives(Duel):
    """Keeps every rule: arrays of two objectives, in the declared reward space."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.reward_spaces = {a: SPACE for a in self.possible_agents}

    def pay(self, reward: float) -> Any:
        return np.array([reward, -reward / 2], np.float32)

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        return obs, {a: self.pay(r) for a, r in rewards.items()}, terminateds, truncateds, infos


class PaysThreeObjectives(TwoObjectives):
    def pay(self, reward: float) -> Any:
        return np.array([reward, 0.0, 0.0], np.float32)


class PaysOutsideTheBounds(TwoObjectives):
    def pay(self, reward: float) -> Any:
        return np.array([reward * 2, 0.0], np.float32)


class PaysScalars(TwoObjectives):
    def pay(self, reward: float) -> Any:
        return reward


class PaysNaN(TwoObjectives):
    def pay(self, reward: float) -> Any:
        return np.array([reward, np.nan], np.float32)


class PaysBools(TwoObjectives):
    def pay(self, reward: float) -> Any:
        return np.array([reward > 0, False])


class BothAtOnce(TwoObjectives):
    """Keeps every rule: both agents act in every step (groups take it)."""

    def _actors(self) -> list[str]:
        return ["a", "b"]
