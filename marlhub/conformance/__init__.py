"""The conformance suite: the contract of DESIGN.md section 2, checked rule by rule."""

from marlhub.conformance.report import Finding, Report, Reproducer
from marlhub.conformance.rules import RULES, Rule

__all__ = ["RULES", "Finding", "Report", "Reproducer", "Rule"]
