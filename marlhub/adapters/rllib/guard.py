"""The episode rules RLlib enforces, checked on every reset and step of an adapted env.

RLlib's ``MultiAgentEpisode`` raises deep inside an env runner, with little
context, when an env sends data for an agent that is done, forgets the reward
of an agent that acted, or truncates an agent without its last observation.
:class:`EpisodeGuard` judges each transition with the conformance suite's own
checks (:mod:`marlhub.contract.checks`) and raises
:class:`~marlhub.errors.EnvContractError` naming the rule at the step where it
is broken, before RLlib sees the data.

Example:
    >>> guard = EpisodeGuard("MyEnv", ["a", "b"])
    >>> guard.on_reset({"a": 0}, {}, agents=["a", "b"])
    >>> guard.on_step({"a": 1}, ({"a": 0, "b": 0}, {}, {"__all__": False}, {"__all__": False}, {}),
    ...               agents_before=["a", "b"], agents_after=["a", "b"], possible_now=["a", "b"])
    Traceback (most recent call last):
    ...
    marlhub.errors.EnvContractError: MyEnv broke the contract rule 'reward.present': 'a' acted and got an observation but has no entry in rewards (keys []); RLlib raises on this. Report rewards['a'] = 0.0 when there is nothing to give (at step 1 of the episode). Run `marlhub check` on it for a full report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional

from marlhub.contract import rules
from marlhub.contract.checks import TRANSITION_CHECKS, Issue, Transition
from marlhub.core import AgentID
from marlhub.errors import EnvContractError

__all__ = ["GUARDED_RULES", "EpisodeGuard"]

_Check = Callable[[Transition, Any], Iterable[Issue]]

#: The rules checked on every transition: those whose breach makes RLlib raise
#: or loop forever (ids, actors, done flags, final data, rewards).
_RLLIB_RAISES_ON = frozenset({
    rules.IDS_KNOWN, rules.TURN_ACTORS_EXIST, rules.DONE_ALL_PRESENT, rules.DONE_FLAGS_BOOL,
    rules.DONE_ALL_CONSISTENT, rules.DONE_FINAL, rules.DONE_TRUNCATION_HAS_OBS,
    rules.REWARD_PRESENT, rules.REWARD_SCALAR,
})
#: ``(rule id, check function)`` of every rule :class:`EpisodeGuard` checks, in the
#: order of :data:`~marlhub.contract.checks.TRANSITION_CHECKS`.
GUARDED_RULES: list[tuple[str, _Check]] = [
    (rule, check) for rule, check in TRANSITION_CHECKS if rule in _RLLIB_RAISES_ON
]


class EpisodeGuard:
    """Follow one episode at a time and raise at the first transition that breaks a guarded rule.

    Args:
        env_name: how the env is named in error messages.
        possible_agents: the env's ``possible_agents``.
        spaces: the env's :class:`~marlhub.contract.transition.SpaceCache`, for the rules
            that read spaces (a declared reward space makes rewards arrays); None: none.

    Attributes:
        done: agents done earlier in the current episode.
        appeared: agents that had an observation in the current episode.
    """

    #: None in guards pickled before the field existed (0.1.0's), which then read no spaces.
    spaces: Any = None

    def __init__(self, env_name: str, possible_agents: Sequence[AgentID],
                 spaces: Any = None) -> None:
        self.env_name = env_name
        self.spaces = spaces
        self.possible_agents = list(possible_agents)
        self.done: set[AgentID] = set()
        self.appeared: set[AgentID] = set()
        self._index = 0

    def on_reset(
        self, obs: Mapping[Any, Any], infos: Mapping[Any, Any], *,
        agents: Optional[Sequence[Any]],
    ) -> None:
        """Start following a new episode from what ``reset`` returned.

        Raises:
            EnvContractError: the reset breaks a guarded rule.
        """
        self.done = set()
        self.appeared = set()
        self._index = 0
        t = Transition(
            kind="reset", index=0, obs=obs, infos=infos,
            possible_agents=self.possible_agents, possible_now=self.possible_agents,
            agents_before=None, agents_after=None if agents is None else list(agents),
            appeared=frozenset(), done_before=frozenset(),
        )
        self._judge(t)
        self.appeared.update(obs)

    def on_step(
        self,
        actions: Mapping[Any, Any],
        result: tuple[Mapping[Any, Any], ...],
        *,
        agents_before: Optional[Sequence[Any]],
        agents_after: Optional[Sequence[Any]],
        possible_now: Sequence[Any],
    ) -> None:
        """Judge one step: ``result`` is ``(obs, rewards, terminateds, truncateds, infos)``.

        Raises:
            EnvContractError: the step breaks a guarded rule.
        """
        obs, rewards, terminateds, truncateds, infos = result
        self._index += 1
        t = Transition.from_step(
            index=self._index, obs=obs, rewards=rewards, terminateds=terminateds,
            truncateds=truncateds, infos=infos, actions=actions,
            possible_agents=self.possible_agents, possible_now=list(possible_now),
            agents_before=None if agents_before is None else list(agents_before),
            agents_after=None if agents_after is None else list(agents_after),
            appeared=frozenset(self.appeared), done_before=frozenset(self.done),
        )
        self._judge(t)
        self.appeared.update(obs)
        self.done |= t.done_now

    def _judge(self, t: Transition) -> None:
        for rule, check in GUARDED_RULES:
            for issue in check(t, self.spaces):
                if issue.severity not in (None, "error"):
                    continue
                where = "reset()" if t.kind == "reset" else f"step {t.index} of the episode"
                raise EnvContractError(
                    self.env_name, rule, f"{issue.message.rstrip('.')} (at {where})"
                )
