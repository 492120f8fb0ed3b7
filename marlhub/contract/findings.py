"""Findings: one breach of one rule, where it happened, and how to replay it.

A :class:`Finding` names the rule it breaks, where (episode, step, agent) and
carries a :class:`Reproducer`: the seed and the actions that lead to the
failure, which :meth:`Reproducer.replay` plays again on a fresh env. Checks,
lockstep comparisons and the conformance suite all speak in findings.

Example:
    >>> f = Finding("obs.in_space", "error", "obs['a'] is 3, not in Discrete(2)", episode=0, step=1, agent="a")
    >>> f.location()
    "episode 0, step 1, agent 'a'"
    >>> Reproducer(0, [{"a": 1}]).describe()
    'env.reset(seed=0), then step() with 1 action dicts: {"a": 1}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from marlhub.contract.rules import Severity

__all__ = ["Finding", "Reproducer", "jsonable"]


def jsonable(value: Any) -> Any:
    """Return ``value`` with numpy scalars and arrays turned into plain JSON types.

    Example:
        >>> jsonable({"a": np.int64(2), "b": np.zeros(2, np.float32), 3: (True,)})
        {'a': 2, 'b': [0.0, 0.0], '3': [True]}
    """
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


@dataclass
class Reproducer:
    """The seed and the action dicts that lead from ``reset`` to a finding.

    Attributes:
        seed: the seed passed to ``reset``.
        actions: the action dicts passed to ``step``, in order; empty when the
            finding comes from ``reset`` itself.
    """

    seed: Optional[int]
    actions: list[dict[Any, Any]] = field(default_factory=list)

    def replay(self, env: Any) -> tuple[Any, ...]:
        """Reset ``env`` with the seed, step it through the actions; return the last result.

        Returns the ``(obs, infos)`` of reset when there are no actions, else the
        5-tuple of the last step, so the failing values can be inspected.
        """
        result: tuple[Any, ...] = env.reset(seed=self.seed)
        for action_dict in self.actions:
            result = env.step(action_dict)
        return result

    def describe(self, limit: int = 6) -> str:
        """Return a one-line recipe: the seed and the actions (long lists shortened)."""
        head = f"env.reset(seed={self.seed!r})"
        if not self.actions:
            return head
        acts = [json.dumps(jsonable(a)) for a in self.actions]
        if len(acts) > limit:
            acts = acts[:2] + [f"... {len(acts) - 4} more ..."] + acts[-2:]
        return f"{head}, then step() with {len(self.actions)} action dicts: " + ", ".join(acts)

    def to_dict(self) -> dict[str, Any]:
        """Return the reproducer as JSON-able data."""
        return {"seed": self.seed, "actions": jsonable(self.actions)}


@dataclass
class Finding:
    """One breach of one rule.

    Attributes:
        rule: the rule id (see :mod:`marlhub.contract.rules`).
        severity: ``"error"`` or ``"warning"``.
        message: what was wrong, the actual value, what was expected, how to fix it.
        episode: the episode index (0-based), None for target-level findings.
        step: the step index in the episode (0 = the reset), None when not tied to one.
        agent: the agent concerned, when one is.
        reproducer: how to replay it, when it happened inside an episode.
    """

    rule: str
    severity: Severity
    message: str
    episode: Optional[int] = None
    step: Optional[int] = None
    agent: Any = None
    reproducer: Optional[Reproducer] = None

    def location(self) -> str:
        """Return ``episode E, step S, agent 'a'`` (only the parts that apply)."""
        parts = []
        if self.episode is not None:
            parts.append(f"episode {self.episode}")
        if self.step is not None:
            parts.append(f"step {self.step}")
        if self.agent is not None:
            parts.append(f"agent {self.agent!r}")
        return ", ".join(parts) or "target"

    def to_dict(self) -> dict[str, Any]:
        """Return the finding as JSON-able data (the ``--json`` shape)."""
        data: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            "message": self.message,
            "episode": self.episode,
            "step": self.step,
            "agent": None if self.agent is None else jsonable(self.agent),
        }
        if self.reproducer is not None:
            data["reproducer"] = self.reproducer.to_dict()
        return data

