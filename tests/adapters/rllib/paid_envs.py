"""Envs that pay agents where RLlib's episodes drop rewards, for the carry and sampler tests."""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub import ALL, MultiAgentEnv, ResetNeededError
from marlhub.envs import TicTacToe


class Blinds(MultiAgentEnv):
    """A poker hand in miniature, with a spectator paid for watching; keeps every rule.

    'a' acts first. Folding (action 0) ends the hand at once: 'b' wins 1.0 with its
    first observation, having never acted (RLlib drops such an agent). Otherwise 'b'
    pays a blind of 0.5 with its first observation (RLlib drops a reward that comes
    with one), and 'c' is paid 2.0 and leaves without ever acting; then 'b' acts:
    0 ends the hand truncated, with a flag for every agent (RLlib then calls it
    terminated), 1 ends it terminated with 1.5 to 'a'.
    """

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = ["a", "b", "c"]
        self.agents = []
        self.observation_spaces = {x: gym.spaces.Box(0.0, 3.0, (1,), np.float32)
                                   for x in self.possible_agents}
        self.action_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}
        self.t = 0
        self.over = True

    def _obs(self, *agents: str) -> dict[str, np.ndarray]:
        return {x: np.array([self.t], np.float32) for x in agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.t, self.over = 0, False
        self.agents = ["a", "b", "c"]
        return self._obs("a"), {}

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        self.t += 1
        if self.t == 1 and action_dict["a"] == 0:
            return self._end(self._obs("a", "b"), {"a": -1.0, "b": 1.0}, truncated=False)
        if self.t == 1:
            self.agents = ["a", "b"]
            return (self._obs("b", "c"), {"a": 0.0, "b": -0.5, "c": 2.0},
                    {"c": True, ALL: False}, {ALL: False}, {})
        if action_dict["b"] == 0:
            return self._end(self._obs("a", "b"), {"a": 0.0, "b": 0.0}, truncated=True)
        return self._end(self._obs("a", "b"), {"a": 1.5, "b": -1.0}, truncated=False)

    def _end(self, obs: dict, rewards: dict, *, truncated: bool) -> Any:
        self.over = True
        self.agents = []
        flags = {x: True for x in obs}
        if truncated:
            return obs, rewards, {ALL: False}, {**flags, ALL: True}, {}
        return obs, rewards, {ALL: True}, {ALL: False}, {}


class SilentWinner(TicTacToe):
    """marlhub's first tic-tac-toe: the winner got no final observation (done.final_obs)."""

    def step(self, action_dict: dict) -> Any:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if terminateds[ALL]:
            obs = {a: o for a, o in obs.items() if a not in action_dict}
        return obs, rewards, terminateds, truncateds, infos
