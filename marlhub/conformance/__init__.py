"""The conformance suite: the contract, checked rule by rule.

* :func:`check` plays seeded random legal episodes on a target and returns a
  :class:`Report` of :class:`Finding` objects (rule id, severity, message,
  episode, step, agent and a :class:`Reproducer`).
* :func:`assert_conforms` raises ``AssertionError`` with the readable report,
  for users' own test suites.
* :data:`RULES` holds every rule id with its severity and summary.

Example:
    >>> from marlhub.conformance import check
    >>> check("traffic", episodes=3).ok
    True
"""

from marlhub.conformance.report import Finding, Report, Reproducer
from marlhub.conformance.suite import assert_conforms, check
from marlhub.contract import rules  # noqa: F401  (marlhub.conformance.rules, as in 0.1.0)
from marlhub.contract.rules import RULES, Rule

__all__ = ["RULES", "Finding", "Report", "Reproducer", "Rule", "assert_conforms", "check"]
