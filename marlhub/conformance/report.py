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
from dataclasses import dataclass, field
from typing import Any, Optional

from marlhub.conformance.interop import TargetResult
from marlhub.contract.findings import Finding, Reproducer, jsonable
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY, RULES

__all__ = ["Finding", "Report", "Reproducer", "jsonable"]


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
        conversions: what each target API's own checker said of the converted env
            (``marlhub check --targets``); a failed one counts against ``ok``.
        lockstep_seconds: how long the comparison with the native env took
            (``--against-native``); None when it was not asked for.
        native_warnings: the warnings the env's libraries gave while it was checked,
            each once (collected here instead of printed).
    """

    target: str
    findings: list[Finding] = field(default_factory=list)
    episodes: int = 0
    steps: int = 0
    seconds: float = 0.0
    strict: bool = False
    conversions: list[TargetResult] = field(default_factory=list)
    lockstep_seconds: Optional[float] = None
    native_warnings: list[str] = field(default_factory=list)

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
        failed = any(c.status == "fail" for c in self.conversions)
        return not self.errors and not failed and not (self.strict and self.warnings)

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
        statuses = [c.status for c in self.conversions]
        converted = (", conversions " + ", ".join(
            f"{statuses.count(s)} {s}" for s in ("pass", "fail", "refused", "skipped", "known-fault")
            if s in statuses)) if statuses else ""
        return (
            f"{verdict} {self.target}: {self.episodes} episodes, {self.steps} steps, "
            f"{errs} error{'s' if errs != 1 else ''}, {warns} warning{'s' if warns != 1 else ''}"
            f"{converted}{timing}"
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
        if self.lockstep_seconds is not None:
            lines.append(self._lockstep_line())
        lines.extend(c.line() for c in self.conversions)
        if self.native_warnings:
            shown = "; ".join(w[:160] for w in self.native_warnings[:3])
            more = len(self.native_warnings) - 3
            lines.append(f"  note: the env's libraries warned: {shown}"
                         + (f"; ... ({more} more)" if more > 0 else ""))
        return "\n".join(lines)

    def _lockstep_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.rule in (EQUIV_TRAJECTORY, EQUIV_RETURNS)]

    def _lockstep_line(self) -> str:
        found = self._lockstep_findings()
        verdict = f"{len(found)} finding(s)" if found else "identical to the native env"
        return (f"  against native ({EQUIV_TRAJECTORY}, {EQUIV_RETURNS}): {verdict} "
                f"({self.lockstep_seconds or 0.0:.2f}s)")

    def __repr__(self) -> str:
        grouped = ", ".join(f"{rule} x{len(found)}" for rule, found in self.by_rule().items())
        return f"<Report {self.summary_line()}{'; ' + grouped if grouped else ''}>"

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-able data (one entry of the ``--json`` ``targets`` list)."""
        return {
            "target": self.target,
            "ok": self.ok,
            "episodes": self.episodes,
            "steps": self.steps,
            "seconds": round(self.seconds, 4),
            "findings": [f.to_dict() for f in self.findings],
            "conversions": [c.to_dict() for c in self.conversions],
            "warnings": list(self.native_warnings),
            "against_native": None if self.lockstep_seconds is None else {
                "rules": [EQUIV_TRAJECTORY, EQUIV_RETURNS],
                "ok": not any(f.severity == "error" for f in self._lockstep_findings()),
                "findings": len(self._lockstep_findings()),
                "seconds": round(self.lockstep_seconds, 4),
            },
        }

    def _repr_html_(self) -> str:
        verdict = "PASS" if self.ok else "FAIL"
        colour = "#1a7f37" if self.ok else "#cf222e"
        sections = []
        for rule, found in self.by_rule().items():  # grouped by rule, as the text report is
            meta = RULES.get(rule)
            rows = "".join(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
                    f.episode, f.step, "" if f.agent is None else f.agent, f.message,
                )) + "</tr>"
                for f in found
            )
            sections.append(
                f"<details><summary><b>{html.escape(found[0].severity)}</b> "
                f"<code>{html.escape(rule)}</code>: {len(found)} finding(s)"
                f"{' (' + html.escape(meta.summary) + ')' if meta else ''}</summary>"
                "<table><thead><tr><th>episode</th><th>step</th><th>agent</th><th>message</th>"
                f"</tr></thead><tbody>{rows}</tbody></table></details>"
            )
        extra = [html.escape(line.strip()) for line in (
            [self._lockstep_line()] if self.lockstep_seconds is not None else [])]
        extra += [html.escape(c.line().strip()) for c in self.conversions]
        body = "".join(sections) or "<p>No findings.</p>"
        notes = "".join(f"<p>{line}</p>" for line in extra)
        return (
            f"<div><p><b style='color:{colour}'>{verdict}</b> {html.escape(self.target)}: "
            f"{self.episodes} episodes, {self.steps} steps, {len(self.errors)} errors, "
            f"{len(self.warnings)} warnings</p>{body}{notes}</div>"
        )
