"""Agents under other ids: a hub env whose agent ids are renamed, in both directions.

PettingZoo names agents with strings, and libraries built on it rely on that
(TorchRL's ``PettingZooWrapper`` groups agents by the prefix of their name);
RLlib's ``make_multi_agent`` numbers its agents ``0 .. n-1``. :class:`RenameAgents`
shows a hub env under new ids: every dict it returns is keyed by the new ids,
actions keyed by them go back to the old ones, and spaces are looked up by them.
:func:`string_ids` proposes names for ids that are not strings.

Example:
    >>> from marlhub.adapters.gymnasium import make_multi_agent
    >>> env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    >>> named = RenameAgents(env, string_ids(env.possible_agents))
    >>> named.possible_agents
    ['agent_0', 'agent_1']
    >>> obs, infos = named.reset(seed=0)
    >>> sorted(obs), named.step({"agent_0": 0, "agent_1": 1})[1]
    (['agent_0', 'agent_1'], {'agent_0': 1.0, 'agent_1': 1.0})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import gymnasium as gym

from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    ResetResult,
    StepResult,
)
from marlhub.errors import AgentIdError
from marlhub.rewards import reward_space_of
from marlhub.wrappers.base import HubWrapper

__all__ = ["RenameAgents", "string_ids"]


def string_ids(agents: Sequence[AgentID]) -> dict[AgentID, str]:
    """Return a string id for each agent: itself when a string, ``agent_<id>`` for others.

    Example:
        >>> string_ids([0, 1, "coach"])
        {0: 'agent_0', 1: 'agent_1', 'coach': 'coach'}
    """
    names: dict[AgentID, str] = {}
    taken = {a for a in agents if isinstance(a, str)}
    for agent in agents:
        if isinstance(agent, str):
            names[agent] = agent
            continue
        name = f"agent_{agent}"
        while name in taken:
            name += "_"
        taken.add(name)
        names[agent] = name
    return names


class RenameAgents(HubWrapper):
    """A hub env whose agent ids are ``names[old_id]``.

    Args:
        env: the hub env.
        names: old id -> new id for every possible agent (distinct new ids).

    Attributes:
        env: the wrapped hub env.

    Raises:
        AgentIdError: ``names`` misses a possible agent, repeats a new id or uses a
            reserved one (``"__all__"``, ``"__common__"``).
    """

    def __init__(self, env: Any, names: Mapping[AgentID, AgentID]) -> None:
        self._new: dict[AgentID, AgentID] = {}  # read by the agents property
        super().__init__(env)
        old = list(env.possible_agents)
        missing = [a for a in old if a not in names]
        new = [names[a] for a in old if a in names]
        if missing or len(set(new)) != len(new) or {ALL, COMMON} & set(new):
            raise AgentIdError(
                missing[0] if missing else None,
                f"the new ids {dict(names)!r} do not rename every possible agent {old!r} to "
                "distinct, unreserved ids",
                fix="Give every possible agent its own new id.",
            )
        self._new = dict(names)
        self._old = {v: k for k, v in self._new.items()}
        self.possible_agents = new

    @property
    def agents(self) -> list[AgentID]:
        """The wrapped env's live agents, under their new ids."""
        return [self._new.get(a, a) for a in super().agents]

    @agents.setter
    def agents(self, value: list[AgentID]) -> None:
        pass  # the wrapped env is the truth

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The wrapped env's observation space of the agent now called ``agent_id``."""
        return self.env.get_observation_space(self._old_id(agent_id))

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The wrapped env's action space of the agent now called ``agent_id``."""
        return self.env.get_action_space(self._old_id(agent_id))

    def get_reward_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The wrapped env's reward space of the agent now called ``agent_id``."""
        return reward_space_of(self.env, self._old_id(agent_id))

    def _old_id(self, agent_id: AgentID) -> AgentID:
        try:
            return self._old[agent_id]
        except (KeyError, TypeError):
            raise AgentIdError(agent_id, f"{agent_id!r} is not an agent of this env",
                               known=list(self._old)) from None

    def _renamed(self, table: Mapping[Any, Any]) -> dict[Any, Any]:
        return {self._new.get(k, k): v for k, v in table.items()}

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the wrapped env; return its dicts under the new ids."""
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._renamed(obs), self._renamed(infos or {})

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the wrapped env with the actions under their old ids; return new-id dicts.

        Keys that name no agent go through unchanged, for the wrapped env to refuse.
        """
        actions = (action_dict if not isinstance(action_dict, Mapping)
                   else {self._old.get(k, k): v for k, v in action_dict.items()})
        obs, rewards, terminateds, truncateds, infos = self.env.step(actions)
        return (self._renamed(obs), self._renamed(rewards), self._renamed(terminateds),
                self._renamed(truncateds), self._renamed(infos or {}))

    def __repr__(self) -> str:
        return f"<RenameAgents {self._new!r} of {self.env!r}>"
