"""The reward spaces of the PettingZoo views: vector rewards carried as MOMAland declares them.

A hub env that declares a reward space for an agent (:mod:`marlhub.rewards`) pays it
arrays; the views of :mod:`marlhub.adapters.pettingzoo.view` then answer
``reward_space(agent)`` and ``reward_spaces`` as MOMAland's ``MOAECEnv`` /
``MOParallelEnv`` do, hold zeros of the space where PettingZoo holds ``0``, and pass
the arrays on unchanged (copied, so that no later step writes into one handed out).
Agents without a declared space keep PettingZoo's plain numbers.

Example:
    >>> import gymnasium as gym
    >>> from marlhub.envs import RockPaperScissors
    >>> hub = RockPaperScissors()
    >>> hub.reward_spaces = {"player1": gym.spaces.Box(-1.0, 1.0, (2,))}
    >>> rewards = VectorRewards(hub)
    >>> rewards.zero("player1"), rewards.zero("player2")
    (array([0., 0.], dtype=float32), 0)
    >>> rewards.paid("player2", np.float32(1.0))
    1.0
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.rewards import reward_space_of, zero_reward

__all__ = ["DeclaresRewardSpaces", "VectorRewards", "nonzero"]


def nonzero(reward: Any) -> bool:
    """Whether a reward (a number or an array) pays anything."""
    return bool(np.any(np.asarray(reward) != 0))


class VectorRewards:
    """The declared reward spaces of a hub env's possible agents, and its rewards' zeros.

    Args:
        hub_env: the hub env a view shows.
    """

    def __init__(self, hub_env: Any) -> None:
        found = {a: reward_space_of(hub_env, a) for a in hub_env.possible_agents}
        #: ``{agent: reward space}`` of the agents paid arrays (empty: every reward a number).
        self.spaces: dict[AgentID, gym.Space] = {
            a: s for a, s in found.items() if s is not None and s.shape != ()}

    def space(self, agent: AgentID) -> Optional[gym.Space]:
        """The agent's reward space, or None: its reward is one number."""
        return self.spaces.get(agent)

    def zero(self, agent: AgentID) -> Any:
        """What an agent paid nothing holds: PettingZoo's ``0``, or zeros of its space."""
        space = self.spaces.get(agent)
        return 0 if space is None else zero_reward(space)

    def paid(self, agent: AgentID, reward: Any) -> Any:
        """The reward as the view hands it out (None: nothing paid): a float, or a copied array."""
        if agent in self.spaces:
            return self.zero(agent) if reward is None else np.array(reward)
        if reward is None:
            return 0.0
        return reward if type(reward) in (int, float) else float(reward)


class DeclaresRewardSpaces:
    """``reward_space(agent)`` and ``reward_spaces`` of a view, MOMAland's names."""

    _rewards: VectorRewards

    def reward_space(self, agent: AgentID) -> Optional[gym.Space]:
        """The hub env's reward space of ``agent``, or None: its reward is one number."""
        return self._rewards.space(agent)

    @property
    def reward_spaces(self) -> dict[AgentID, gym.Space]:
        """The reward spaces of the agents paid arrays (empty: every reward is a number)."""
        return dict(self._rewards.spaces)
