"""Findings and reports: what the conformance suite found, in a form to read, replay and export.

A :class:`Finding` names the rule it breaks, where (episode, step, agent) and
carries a :class:`Reproducer`: the seed and the actions that lead to the
failure, which :meth:`Reproducer.replay` plays again on a fresh env.

Example:
    >>> f = Finding("obs.in_space", "error", "obs['a'] is 3, not in Discrete(2)", episode=0, step=1, agent="a")
    >>> r = Report("my_env", findings=[f], episodes=1, steps=4)
    >>> r.ok
    False
    >>> print(str(r).splitlines()[0])
    FAIL my_env: 1 episodes, 4 steps, 1 error, 0 warnings
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from marlhub.conformance.rules import RULES, Severity

__all__ = ["Finding", "Report", "Reproducer", "jsonable"]


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
        rule: the rule id (see :mod:`marlhub.conformance.rules`).
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


@dataclass
class Report:
    """Everything one check of one target found.

    Attributes:
        target: the target as given (an id, a spec string, or a repr).
        findings: every finding, in the order found.
        episodes: how many episodes were played.
        steps: how many step() calls were made (replays not counted).
        seconds: how long the check took.
        strict: whether warnings count against ``ok``.
    """

    target: str
    findings: list[Finding] = field(default_factory=list)
    episodes: int = 0
    steps: int = 0
    seconds: float = 0.0
    strict: bool = False

    @property
    def errors(self) -> list[Finding]:
        """The findings of severity ``error``."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The findings of severity ``warning``."""
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        """True when there is no error finding (and, in strict mode, no warning)."""
        return not self.errors and not (self.strict and self.warnings)

    def rules_broken(self) -> list[str]:
        """Return the ids of the rules with findings, in the order first found."""
        return list(dict.fromkeys(f.rule for f in self.findings))

    def by_rule(self) -> dict[str, list[Finding]]:
        """Return the findings grouped by rule id."""
        grouped: dict[str, list[Finding]] = {}
        for f in self.findings:
            grouped.setdefault(f.rule, []).append(f)
        return grouped

    def summary_line(self) -> str:
        """Return the one-line verdict: PASS/FAIL, target, episodes, steps, counts."""
        verdict = "PASS" if self.ok else "FAIL"
        errs, warns = len(self.errors), len(self.warnings)
        timing = f" in {self.seconds:.2f}s" if self.seconds else ""
        return (
            f"{verdict} {self.target}: {self.episodes} episodes, {self.steps} steps, "
            f"{errs} error{'s' if errs != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
            f"{timing}"
        )

    def __str__(self) -> str:
        lines = [self.summary_line()]
        for rule, found in self.by_rule().items():
            meta = RULES.get(rule)
            summary = f" ({meta.summary})" if meta else ""
            lines.append(f"  {found[0].severity} {rule}: {len(found)} finding(s){summary}")
            for f in found[:3]:
                lines.append(f"    - {f.location()}: {f.message}")
                if f.reproducer is not None:
                    lines.append(f"      reproduce: {f.reproducer.describe()}")
            if len(found) > 3:
                lines.append(f"    ... and {len(found) - 3} more")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-able data (one entry of the ``--json`` ``targets`` list)."""
        return {
            "target": self.target,
            "ok": self.ok,
            "episodes": self.episodes,
            "steps": self.steps,
            "seconds": round(self.seconds, 4),
            "findings": [f.to_dict() for f in self.findings],
        }

    def _repr_html_(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        colour = "#1a7f37" if self.ok else "#cf222e"
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
                f.rule, f.severity, f.episode, f.step,
                "" if f.agent is None else f.agent, f.message,
            )) + "</tr>"
            for f in self.findings
        )
        table = (
            "<table><thead><tr><th>rule</th><th>severity</th><th>episode</th><th>step</th>"
            f"<th>agent</th><th>message</th></tr></thead><tbody>{rows}</tbody></table>"
            if self.findings else "<p>No findings.</p>"
        )
        return (
            f"<div><p><b style='color:{colour}'>{verdict}</b> {html.escape(self.target)}: "
            f"{self.episodes} episodes, {self.steps} steps, {len(self.errors)} errors, "
            f"{len(self.warnings)} warnings</p>{table}</div>"
        )

