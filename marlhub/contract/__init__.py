"""The contract as data: rule ids, findings, transition checks, comparison.

* :mod:`~marlhub.contract.rules`: every rule id as a constant, with its severity.
* :mod:`~marlhub.contract.findings`: :class:`Finding` and :class:`Reproducer`.
* :mod:`~marlhub.contract.checks`: the per-transition checks, one function per rule.
* :mod:`~marlhub.contract.compare`: :func:`why_different` and the ``equiv.*`` findings.

Example:
    >>> from marlhub.contract import rules
    >>> rules.RULES[rules.DONE_FINAL].severity
    'error'
"""

from __future__ import annotations

from marlhub.contract import rules
from marlhub.contract.findings import Finding, Reproducer
from marlhub.contract.rules import RULES, Rule

__all__ = ["RULES", "Finding", "Reproducer", "Rule", "rules"]
