"""action.effective: an agent's choice shows in what follows, in the step it is sent.

``if action:`` takes action 0 for "no action", and an env that then reuses the agent's
last action plays on while the choice of 0 does not count. That shows when the same
state is played again with every legal action (a replay of episode 0 from its seed,
one Discrete action of one agent changed, the recorded actions after it): action 0
plays out exactly as the agent's previous action wherever it is tried, no other value
does, and other values play out differently.

An env whose actions never change anything is left alone (some envs ignore some
agents by design), as is every continuous action space, and so is an action whose
effect shows only later (a simultaneous game played turn by turn pays when the round
is complete). The finding is a warning: two actions may legitimately play out alike
(a no-op and a move into a wall).

Example:
    >>> import marlhub
    >>> from marlhub.conformance.driver import Driver
    >>> from marlhub.conformance.options import CheckOptions
    >>> driver = Driver(marlhub.make("rock_paper_scissors"), "rps", CheckOptions())
    >>> report = driver.run()
    >>> [f.rule for f in report.findings]
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from marlhub.conformance.calls import EnvTimeout
from marlhub.conformance.host import ProbeHost
from marlhub.conformance.trajectories import (
    Recording,
    Snapshot,
    first_difference,
    play_actions,
    safe_mask,
)
from marlhub.contract import rules
from marlhub.contract.findings import Reproducer

__all__ = ["ActionEffectProbe"]

#: How far into episode 0 the probe looks, how many of an agent's turns it changes,
#: how many values it tries at each (all, up to this many: two values alike show a class
#: of equal actions, not a dropped one), and how many steps after the change it compares.
MAX_PREFIX = 16
MAX_POSITIONS = 4
MAX_CHOICES = 10
HORIZON = 3


class ActionEffectProbe:
    """The action-effect probe of one :class:`~marlhub.conformance.host.ProbeHost` (the
    :class:`~marlhub.conformance.driver.Driver` that runs it)."""

    def __init__(self, driver: ProbeHost) -> None:
        self.d = driver

    def run(self, ref: Recording) -> None:
        """Change one agent's Discrete actions in ``ref``; warn when the choice does not count."""
        agent, positions = self._turns(ref)
        if agent is None:
            return
        matches: dict[Any, int] = {}   # value -> turns where it alone played as the previous
        refuted: set[Any] = set()      # values seen to differ from it, or alike with others
        for k, previous in positions:
            outcomes = self._outcomes(ref, k, agent, previous)
            if previous not in outcomes or len(outcomes) < 2:
                continue
            first = {value: first_difference(outcomes[previous], o)
                     for value, o in outcomes.items() if value != previous}
            if not any(first.values()):
                continue  # no choice changed anything here
            alike = [value for value, difference in first.items() if difference is None]
            if len(alike) == 1:  # one value alone plays as the previous one: it may be dropped
                matches[alike[0]] = matches.get(alike[0], 0) + 1
            refuted.update(v for v, d in first.items() if d is not None or len(alike) > 1)
        # `if action:` drops the falsy action: 0.
        if matches.get(0, 0) >= 2 and 0 not in refuted:
            self.d.add(rules.ACTION_EFFECTIVE,
                       f"{agent!r}'s action 0 played out exactly as its previous action "
                       f"at every turn of episode 0 where it was tried ({matches[0]}), while "
                       "other actions played out differently: the env drops it and reuses the "
                       "last one. A test such as `if action:` takes 0 for no action: test "
                       "`if action is not None:` or `agent in action_dict`.", episode=ref.episode,
                       agent=agent, reproducer=Reproducer(ref.seed, ref.actions))

    def _turns(self, ref: Recording) -> tuple[Any, list[tuple[int, Any]]]:
        """An agent with a Discrete action space, and ``(step, its previous action)`` of its
        turns in the first :data:`MAX_PREFIX` steps after its first."""
        last: dict[Any, Any] = {}
        turns: dict[Any, list[tuple[int, Any]]] = {}
        for k, action_dict in enumerate(ref.actions[:MAX_PREFIX]):
            for agent, action in action_dict.items():
                if agent in last:
                    turns.setdefault(agent, []).append((k, last[agent]))
                last[agent] = action
        for agent, found in turns.items():
            space = self.d.spaces.action_space(agent)
            if isinstance(space, gym.spaces.Discrete) and space.n >= 2 and len(found) >= 2:
                return agent, found[:MAX_POSITIONS]
        return None, []

    def _outcomes(self, ref: Recording, k: int, agent: Any,
                  previous: Any) -> dict[Any, list[Snapshot]]:
        """What the steps from ``k`` on give with each tried legal value of ``agent``'s action."""
        try:
            obs, infos = play_actions(self.d.env, ref.seed, ref.actions[:k],
                                      self.d.reset_kwargs, [])
        except EnvTimeout:
            raise
        except Exception:
            return {}  # the episodes report what the env raises
        info = infos.get(agent) if isinstance(infos, Mapping) else None
        mask = safe_mask(obs.get(agent) if isinstance(obs, Mapping) else None, info)
        space = self.d.spaces.action_space(agent)
        start = int(space.start)
        legal = [start + i for i in range(int(space.n)) if mask is None or mask[i]]
        sent = ref.actions[k][agent]
        tried = [v for v in dict.fromkeys([previous, sent, *legal]) if v in legal][:MAX_CHOICES]
        outcomes = {}
        for value in tried:
            changed = [*ref.actions[:k], {**ref.actions[k], agent: value},
                       *ref.actions[k + 1:k + HORIZON]]
            into: list[Snapshot] = []
            try:
                play_actions(self.d.env, ref.seed, changed, self.d.reset_kwargs, into)
            except EnvTimeout:
                raise
            except Exception:
                continue  # the later recorded actions do not fit this episode: no verdict
            outcomes[value] = into[k + 1:]
        return outcomes
