"""JUnit XML for ``marlhub check --junit FILE``: one testcase per target and rule.

CI systems (GitHub Actions, GitLab, Jenkins) show each rule of each target as
a test: a rule with an error finding fails, one with only warnings passes with
the warnings in its ``system-out`` (fails under ``--strict``), a rule that was
not exercised (the lockstep rules without ``--against-native``) is left out.

Example:
    >>> from marlhub.conformance.report import Finding, Report
    >>> r = Report("my_env", findings=[Finding("obs.in_space", "error", "bad obs", 0, 1, "a")])
    >>> xml = junit_xml([r])
    >>> '<testcase classname="my_env" name="obs.in_space"' in xml, 'failures="1"' in xml
    (True, True)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Optional

from marlhub.conformance.report import Report
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY, RULES

__all__ = ["junit_xml"]

_LOCKSTEP = {EQUIV_TRAJECTORY, EQUIV_RETURNS}


def junit_xml(
    reports: Sequence[Report],
    *,
    load_errors: Optional[dict[str, str]] = None,
    skipped: Optional[dict[str, str]] = None,
    against_native: bool = False,
) -> str:
    """Return a JUnit XML document for ``reports`` (and targets that failed to load).

    Args:
        reports: one report per checked target.
        load_errors: target -> message, for targets that could not be loaded.
        skipped: target -> why, for targets a glob found that do not load as they are.
        against_native: whether the lockstep rules were exercised.
    """
    suites = ET.Element("testsuites", name="marlhub check")
    for report in reports:
        suite = ET.SubElement(suites, "testsuite", name=report.target)
        grouped = report.by_rule()
        failures = 0
        for rule_id in [*RULES, *(r for r in grouped if r not in RULES)]:
            if rule_id in _LOCKSTEP and not against_native and rule_id not in grouped:
                continue
            case = ET.SubElement(suite, "testcase", classname=report.target, name=rule_id,
                                 time=f"{report.seconds / max(len(RULES), 1):.4f}")
            found = grouped.get(rule_id, [])
            failing = [f for f in found if f.severity == "error" or report.strict]
            text = "\n".join(
                f"{f.severity} at {f.location()}: {f.message}"
                + (f"\n  reproduce: {f.reproducer.describe()}" if f.reproducer else "")
                for f in found
            )
            if failing:
                failures += 1
                failure = ET.SubElement(case, "failure", type=rule_id,
                                        message=failing[0].message[:500])
                failure.text = text
            elif found:
                ET.SubElement(case, "system-out").text = text
        failures += _conversion_cases(suite, report)
        suite.set("tests", str(len(suite)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("time", f"{report.seconds:.3f}")
    for target, message in (load_errors or {}).items():
        suite = ET.SubElement(suites, "testsuite", name=target, tests="1", failures="0",
                              errors="1", time="0")
        case = ET.SubElement(suite, "testcase", classname=target, name="load")
        ET.SubElement(case, "error", type="load", message=message[:500]).text = message
    for target, why in (skipped or {}).items():
        suite = ET.SubElement(suites, "testsuite", name=target, tests="1", failures="0",
                              errors="0", skipped="1", time="0")
        case = ET.SubElement(suite, "testcase", classname=target, name="load")
        ET.SubElement(case, "skipped", message=why[:500])
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _conversion_cases(suite: ET.Element, report: Report) -> int:
    """Add one testcase per converted API (``--targets``); return how many failed."""
    failures = 0
    for result in report.conversions:
        case = ET.SubElement(suite, "testcase", classname=report.target,
                             name=f"target.{result.target}", time=f"{result.seconds:.4f}")
        if result.status == "fail":
            failures += 1
            ET.SubElement(case, "failure", type=f"target.{result.target}",
                          message=result.reason[:500]).text = result.reason
        elif result.status in ("refused", "skipped", "known-fault"):
            ET.SubElement(case, "skipped", message=f"{result.status}: {result.reason}"[:500])
    return failures
