"""Findings of rules the native env itself breaks become warnings that name the upstream fault.

A family may list, by id, rules its native envs are known to break
(``known_faults(rest) -> {rule id: reason}``, or ``"target.<api>"`` for a
conversion a library's own checker fails natively). :func:`mark_known_faults`
turns a report's errors under those rules into warnings that say so, for the
main check (:func:`~marlhub.conformance.check`) and the vector check
(:func:`~marlhub.conformance.vector.check_vector`) alike. A ``remote/`` id
takes the known faults of the id its server serves (the family's
``served_id``).

Example:
    >>> from marlhub.conformance.report import Finding, Report
    >>> from marlhub.registry import default_registry
    >>> report = Report("pettingzoo/classic/hanabi-v5 --vector 2",
    ...                 findings=[Finding("vector.equiv", "error", "copy 0 differs")])
    >>> mark_known_faults(report, "pettingzoo/classic/hanabi-v5", default_registry())
    >>> report.findings[0].severity, report.findings[0].message[:40]
    ('warning', 'Known fault of the native env, not of th')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from marlhub.conformance.report import Report
from marlhub.errors import MarlhubError
from marlhub.registry import Registry
from marlhub.registry.ids import split_id

__all__ = ["known_faults_of", "mark_known_faults"]


def mark_known_faults(report: Report, env_id: Optional[str], registry: Registry,
                      config: Optional[Mapping[str, Any]] = None) -> None:
    """Downgrade findings of rules the native env is known to break to warnings that say so."""
    faults = known_faults_of(env_id, registry, config) \
        if report.findings or report.conversions else {}
    for finding in report.findings:
        reason = faults.get(finding.rule)
        if reason and not finding.message.startswith("Known fault"):
            finding.severity = "warning"
            finding.message = (
                f"Known fault of the native env, not of the adapter ({reason}): {finding.message}"
            )
    for conversion in report.conversions:  # keyed "target.<api>" in known_faults
        reason = faults.get(f"target.{conversion.target}")
        if reason and conversion.status == "fail":
            conversion.status = "known-fault"
            conversion.reason = f"known fault of the native env ({reason}): {conversion.reason}"


def known_faults_of(env_id: Optional[str], registry: Registry,
                    config: Optional[Mapping[str, Any]] = None) -> dict[str, str]:
    """``{rule id: reason}`` of the id's family, or of the id a ``remote/`` server serves.

    Example:
        >>> from marlhub.registry import default_registry
        >>> sorted(known_faults_of("pettingzoo/butterfly/knights_archers_zombies-v11",
        ...                        default_registry()))
        ['reset.mid_episode', 'seed.reproducible']
        >>> known_faults_of("tic_tac_toe", default_registry())
        {}
    """
    family_name, rest = split_id(env_id) if env_id else (None, "")
    family = registry.families.get(family_name) if family_name else None
    served = getattr(family, "served_id", None)
    if callable(served):
        try:
            inner = served(rest, config)
        except MarlhubError:  # the server went away: nothing is known of it
            return {}
        return known_faults_of(inner, registry) if inner and inner != env_id else {}
    known = getattr(family, "known_faults", None)
    return dict(known(rest)) if callable(known) else {}
