"""Tianshou's multi-agent env over a hub env: one agent's turn per step, every reward once.

Tianshou's multi-agent learners (``MultiAgentOffPolicyAlgorithm``,
``MultiAgentOnPolicyAlgorithm``) take an env that gives one agent's observation per
step, as ``{"agent_id", "obs", "mask"}``, and a reward vector of every agent per step,
which its collector sums into each agent's return. Its own ``PettingZooEnv`` over an
AEC env needs every agent in one space, keeps a departed agent's last reward in the
vector (it is summed again at every later step) and ends the episode when a done agent
is selected. :class:`TianshouEnv` drives the hub env itself:

* the agents that act in a hub step (several in a simultaneous env, one in a
  turn-based game) take their turns one Tianshou step each, in the hub's order; the hub
  steps when the last of them has acted, and that Tianshou step's reward vector holds
  every agent's reward of the hub step (the others' are zero), so each agent's summed
  return is the hub's;
* an agent that left, or has not joined, is never asked to act; the episode ends when
  the hub's does (``__all__``);
* agents of different spaces (a mixed team) share one space, as ``one_space`` has it for
  the agent slots (:mod:`marlhub.learners.padding`): the observation flattened into one
  padded ``Box`` with the agent's kind one-hot after it, the actions one ``Discrete`` of
  the most actions whose masks forbid what a kind cannot do (a kind's own mask where it
  has one), or one ``Box`` whose first entries a kind takes.

As with Tianshou's ``PettingZooEnv``, a transition is the acting agent's: the rewards an
agent gets in a hub step where it does not act last count in its return but are not on
its own transitions. Made by :func:`marlhub.learners.to_tianshou`; imports no Tianshou.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.batched import group_agents
from marlhub.core import ALL, AgentID
from marlhub.episode.status import actors_of
from marlhub.learners.padding import (
    flat_rows,
    mask_size,
    padded_action_space,
    padded_observation_space,
    without_mask,
)
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask

__all__ = ["TianshouEnv"]


class TianshouEnv(gym.Env):
    """A hub env as Tianshou's multi-agent env (see the module).

    Args:
        env: the hub env.

    Attributes:
        agents: every agent (Tianshou reads ``agents`` and ``agent_idx`` to pick each
            agent's learner).
        agent_idx: agent -> its index in the reward vector.
        observation_space: ``Dict(observation=Box, action_mask=Box)`` (no mask for Box
            actions), as PettingZoo envs give it.
        action_space: the one action space.

    Example:
        >>> import marlhub
        >>> env = TianshouEnv(marlhub.make("rock_paper_scissors"))
        >>> obs, _ = env.reset(seed=0)
        >>> obs["agent_id"], obs["obs"].tolist()  # player1 first; no move seen yet
        ('player1', [1.0, 0.0, 0.0])
        >>> obs, rewards, terminated, truncated, _ = env.step(0)  # player1 plays rock...
        >>> obs["agent_id"], rewards.tolist()
        ('player2', [0.0, 0.0])
        >>> obs, rewards, terminated, truncated, _ = env.step(1)  # ... player2 paper: hub steps
        >>> rewards.tolist()
        [-1.0, 1.0]
    """

    metadata: dict[str, Any] = {}

    def __init__(self, env: Any) -> None:
        self.env = env
        self.name = str(getattr(env, "spec_id", None) or type(env).__name__)
        self.agents: list[AgentID] = list(env.possible_agents)
        self.agent_idx = {a: i for i, a in enumerate(self.agents)}
        groups = group_agents(self.agents, env.get_observation_space, env.get_action_space)
        self._kind = {a: g for g, members in groups.items() for a in members}
        self._kinds = list(groups)
        self._obs_spaces = {g: without_mask(env.get_observation_space(m[0]))
                            for g, m in groups.items()}
        self._act_spaces = {g: env.get_action_space(m[0]) for g, m in groups.items()}
        self._padded = padded_observation_space(self.name, self._obs_spaces)
        self.action_space = padded_action_space(self.name, self._act_spaces)
        self._mask_size = mask_size(self.action_space) \
            if isinstance(self.action_space, gym.spaces.Discrete) else None
        spaces: dict[str, gym.Space] = {"observation": self._padded}
        if self._mask_size is not None:
            spaces[ACTION_MASK_KEY] = gym.spaces.Box(0, 1, (self._mask_size,), np.int8)
        self.observation_space = gym.spaces.Dict(spaces)
        self._obs: dict[AgentID, Any] = {}
        self._infos: dict[AgentID, Any] = {}
        self._turns: list[AgentID] = []
        self._actions: dict[AgentID, Any] = {}
        self._last: Optional[AgentID] = None

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the hub env; return the first acting agent's observation."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self._start_step(obs, infos, actors_of(obs, {}, {}))
        return self._observation(), {}

    def step(self, action: Any) -> tuple[dict[str, Any], np.ndarray, bool, bool, dict[str, Any]]:
        """Take the acting agent's action; the hub steps once every actor of its step has
        acted. Return the next acting agent's observation, the reward vector, whether the
        episode terminated or was truncated, and the hub's infos (on its steps)."""
        agent = self._turns.pop(0)
        self._actions[agent] = self._own_action(agent, action)
        rewards = np.zeros(len(self.agents), np.float32)
        if self._turns:
            return self._observation(), rewards, False, False, {}
        obs, paid, terminateds, truncateds, infos = self.env.step(self._actions)
        for a, reward in paid.items():
            rewards[self.agent_idx[a]] += float(reward)
        terminated = bool(terminateds.get(ALL, False))
        truncated = bool(truncateds.get(ALL, False)) and not terminated
        self._start_step(obs, infos, actors_of(obs, terminateds, truncateds))
        return self._observation(), rewards, terminated, truncated, dict(infos)

    def render(self) -> Any:
        """The hub env's ``render()``."""
        return self.env.render()

    def close(self) -> None:
        """Close the hub env."""
        self.env.close()

    def _start_step(self, obs: dict[AgentID, Any], infos: dict[AgentID, Any],
                    turns: list[AgentID]) -> None:
        self._obs.update(obs)
        self._infos = dict(infos)
        self._turns = list(turns)
        self._actions = {}
        if turns:
            self._last = turns[0]

    def _observation(self) -> dict[str, Any]:
        """The next acting agent's observation (after the episode: the last one's, all
        actions masked out but the first)."""
        agent = self._turns[0] if self._turns else self._last
        kind = self._kind[agent]
        row = np.zeros(self._padded.shape, self._padded.dtype)
        flat = flat_rows(self._obs_spaces[kind], without_mask(self._obs[agent]),
                         self._padded.dtype)
        row[:flat.shape[-1]] = flat
        if len(self._kinds) > 1:
            row[len(row) - len(self._kinds) + self._kinds.index(kind)] = 1
        out: dict[str, Any] = {"agent_id": agent, "obs": row}
        if self._mask_size is not None:
            mask = np.zeros(self._mask_size, bool)
            if self._turns:
                own = find_action_mask(self._obs[agent], self._infos.get(agent))
                size = int(self._act_spaces[kind].n)
                mask[:size] = True if own is None else np.asarray(own, bool)
            else:
                mask[0] = True
            out["mask"] = mask.tolist()
        return out

    def _own_action(self, agent: AgentID, action: Any) -> Any:
        """The padded action as the agent's own: beyond its kind's actions, its first (the
        masks forbid them), a Box's first entries clipped to its bounds."""
        space = self._act_spaces[self._kind[agent]]
        value = np.asarray(action)
        if isinstance(space, gym.spaces.Discrete):
            index = int(value.reshape(-1)[0])
            return int(space.start) + (index if 0 <= index < int(space.n) else 0)
        size = int(np.prod(space.shape))
        return np.clip(value.reshape(-1)[:size].reshape(space.shape), space.low,
                       space.high).astype(space.dtype)
