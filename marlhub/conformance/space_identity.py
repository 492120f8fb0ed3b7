"""``space.defined``: every possible agent has spaces, and they stay the same objects.

:class:`SpaceWatch` reads each agent's observation and action space before the
first reset, remembers the objects, and checks that later reads return the
very same objects: after every reset and while episodes run. RLlib, the
adapters and the views read spaces once; an env that builds new ones on
reset (or swaps an action space mid-episode) detaches them, and their RNG
state, from the env.

Example:
    >>> import marlhub
    >>> found = []
    >>> watch = SpaceWatch(marlhub.make("traffic"), lambda rule, message, **where: found.append(rule))
    >>> watch.check_all(), found
    (True, [])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from marlhub.contract import rules

__all__ = ["SpaceWatch"]

KINDS = ("observation", "action")


class SpaceWatch:
    """The spaces an env returned first, and checks that it keeps returning them.

    Args:
        env: the env under test.
        add: ``add(rule, message, **where)`` records a finding.
    """

    def __init__(self, env: Any, add: Callable[..., None]) -> None:
        self.env = env
        self.add = add
        self.first: dict[tuple[str, Any], Any] = {}
        self._reported: set[tuple[str, Any]] = set()

    def read(self, kind: str, agent: Any) -> Any:
        """Return ``get_<kind>_space(agent)`` (or the ``<kind>_spaces`` dict's entry)."""
        getter = getattr(self.env, f"get_{kind}_space", None)
        return getter(agent) if getter else self.env.__dict__[f"{kind}_spaces"][agent]

    def check_all(self) -> bool:
        """Check every possible agent's spaces before the first reset; False when unusable."""
        try:
            possible = list(self.env.possible_agents)
        except Exception as exc:
            self.add(rules.SPACE_DEFINED,
                     f"possible_agents cannot be read as a list ({type(exc).__name__}: {exc}); "
                     "set self.possible_agents to every agent id that can ever appear.")
            return False
        if not possible:
            self.add(rules.SPACE_DEFINED,
                     "possible_agents is empty; set self.possible_agents to every agent id that "
                     "can ever appear, before the first reset.")
            return False
        ok = True
        for agent in possible:
            for kind in KINDS:
                ok = self._check_first(kind, agent) and ok
        return ok

    def _check_first(self, kind: str, agent: Any) -> bool:
        try:
            first, second = self.read(kind, agent), self.read(kind, agent)
        except Exception as exc:
            self.add(rules.SPACE_DEFINED,
                     f"get_{kind}_space({agent!r}) raised {type(exc).__name__}: {exc}; "
                     f"define {kind}_spaces for every agent in possible_agents.", agent=agent)
            return False
        if not isinstance(first, gym.Space):
            self.add(rules.SPACE_DEFINED,
                     f"get_{kind}_space({agent!r}) returned {first!r} ({type(first).__name__}), "
                     "not a gymnasium Space; return a gymnasium.spaces.Space for every possible "
                     "agent.", agent=agent)
            return kind == "observation"
        self.first[kind, agent] = first
        if second is not first:
            self._reported.add((kind, agent))
            self.add(rules.SPACE_DEFINED,
                     f"get_{kind}_space({agent!r}) returned a new object on each call; build "
                     "spaces once (in __init__) and return the same object, so their RNG state "
                     "and identity stay stable.", agent=agent)
        return True

    def reread_all(self, when: str, where: Mapping[str, Any]) -> None:
        """Read every space again (after a reset) and report the ones that changed."""
        for kind, agent in list(self.first):
            if (kind, agent) in self._reported:
                continue
            try:
                space = self.read(kind, agent)
            except Exception as exc:
                self._reported.add((kind, agent))
                self.add(rules.SPACE_DEFINED,
                         f"get_{kind}_space({agent!r}) raised {type(exc).__name__}: {exc} {when}, "
                         "though it worked before; keep every possible agent's spaces for the "
                         "env's whole life.", **{**where, "agent": agent})
                continue
            self.same(kind, agent, space, when, where)

    def same(self, kind: str, agent: Any, space: Any, when: str,
             where: Mapping[str, Any]) -> None:
        """Report ``space`` (just read for ``agent``) unless it is the object read first."""
        first = self.first.get((kind, agent))
        if first is None or space is first or (kind, agent) in self._reported:
            return
        self._reported.add((kind, agent))
        self.add(rules.SPACE_DEFINED,
                 f"get_{kind}_space({agent!r}) returned another object {when} ({space}, where "
                 f"it first returned {first}); build spaces once, in __init__, and return the "
                 "same object ever after: RLlib and the adapters read spaces once, so a rebuilt "
                 "one is not the space they use.", **{**where, "agent": agent})
