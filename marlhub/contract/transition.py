"""What the per-rule checks judge: one :class:`Transition` (a reset or a step), and :class:`Issue`.

The conformance driver and RLlib's episode guard record what a call returned in
a :class:`Transition`, with what they know of the episode so far; each check of
:mod:`marlhub.contract.checks` returns the :class:`Issue` objects it sees in it.
:class:`SpaceCache` looks each agent's spaces up once.

Example:
    >>> t = Transition.from_step(
    ...     index=1, obs={"a": 0}, rewards={"a": 1.0}, terminateds={"__all__": True},
    ...     truncateds={"__all__": False}, infos={}, actions={"a": 1},
    ...     possible_agents=["a"], possible_now=["a"], agents_before=["a"], agents_after=[],
    ...     appeared=frozenset({"a"}), done_before=frozenset())
    >>> t.over, t.actors
    (True, [])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from marlhub.contract import rules
from marlhub.core import ALL
from marlhub.episode.status import actors_of, done_agents, episode_over, flag
from marlhub.rewards import reward_space_of

__all__ = ["Issue", "SpaceCache", "Transition"]


@dataclass
class Issue:
    """What one check saw wrong in one transition.

    Attributes:
        message: the house-style message (what, actual value, expected, fix).
        agent: the agent concerned, when one is.
        severity: overrides the rule's default severity when not None.
    """

    message: str
    agent: Any = None
    severity: Optional[rules.Severity] = None


@dataclass
class Transition:
    """One reset or step, with what the driver knows of the episode around it.

    Attributes:
        kind: ``"reset"`` or ``"step"``.
        index: 0 for the reset, k for the k-th step.
        obs, rewards, terminateds, truncateds, infos: what the call returned
            (rewards and done dicts are empty for a reset).
        actions: the action dict sent (empty for a reset).
        possible_agents: ``possible_agents`` when the episode began.
        possible_now: ``possible_agents`` after this call.
        agents_before, agents_after: ``env.agents`` around the call (None when unreadable).
        appeared: agents that had an observation earlier in the episode.
        done_before: agents that were done before this call.
    """

    kind: str
    index: int
    obs: Mapping[Any, Any]
    infos: Mapping[Any, Any]
    possible_agents: list[Any]
    possible_now: list[Any]
    agents_before: Optional[list[Any]]
    agents_after: Optional[list[Any]]
    appeared: frozenset[Any]
    done_before: frozenset[Any]
    rewards: Mapping[Any, Any] = field(default_factory=dict)
    terminateds: Mapping[Any, Any] = field(default_factory=dict)
    truncateds: Mapping[Any, Any] = field(default_factory=dict)
    actions: Mapping[Any, Any] = field(default_factory=dict)

    @classmethod
    def from_step(cls, **fields: Any) -> "Transition":
        """Build the transition of a step from keyword fields."""
        return cls(kind="step", **fields)

    @property
    def terminated_all(self) -> bool:
        """Whether ``__all__`` is True in terminateds."""
        return flag(self.terminateds, ALL)

    @property
    def truncated_all(self) -> bool:
        """Whether ``__all__`` is True in truncateds."""
        return flag(self.truncateds, ALL)

    @property
    def over(self) -> bool:
        """Whether this call ended the episode."""
        return episode_over(self.terminateds, self.truncateds)

    @property
    def done_now(self) -> set[Any]:
        """Agents flagged terminated or truncated in this call."""
        return done_agents(self.terminateds, self.truncateds)

    @property
    def actors(self) -> list[Any]:
        """Agents in the obs dict that are not done in it: they act next."""
        return actors_of(self.obs, self.terminateds, self.truncateds)


class SpaceCache:
    """The env's per-agent spaces, looked up once per agent.

    A lookup that raises is remembered as None; ``space.defined`` reports it.
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self._obs: dict[Any, Any] = {}
        self._act: dict[Any, Any] = {}
        self._reward: dict[Any, Any] = {}

    def observation_space(self, agent: Any) -> Any:
        """Return the agent's observation space, or None when it cannot be had."""
        if agent not in self._obs:
            self._obs[agent] = self._look_up("get_observation_space", agent)
        return self._obs[agent]

    def action_space(self, agent: Any) -> Any:
        """Return the agent's action space, or None when it cannot be had."""
        if agent not in self._act:
            self._act[agent] = self._look_up("get_action_space", agent)
        return self._act[agent]

    def reward_space(self, agent: Any) -> Any:
        """Return the agent's declared reward space, or None (a scalar reward, or no answer)."""
        if agent not in self._reward:
            try:
                self._reward[agent] = reward_space_of(self.env, agent)
            except Exception:
                self._reward[agent] = None
        return self._reward[agent]

    def _look_up(self, getter: str, agent: Any) -> Any:
        try:
            return getattr(self.env, getter)(agent)
        except Exception:
            return None
