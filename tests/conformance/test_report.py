"""Reports read well in a terminal, a notebook and JSON; assert_conforms fails loudly."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest

from marlhub.conformance import Finding, Report, Reproducer, assert_conforms, check
from marlhub.conformance import rules as R
from tests.conformance import rule_breakers as B


def test_str_is_a_verdict_line_then_findings_grouped_by_rule() -> None:
    text = str(check(B.ActorWithoutReward, episodes=2))
    lines = text.splitlines()
    assert lines[0].startswith(
        "FAIL tests.conformance.rule_breakers:ActorWithoutReward: 2 episodes, 12 steps, 2 errors, "
        "0 warnings in ")
    assert lines[1].startswith("  error reward.present: 2 finding(s)")
    assert lines[2].startswith("    - episode 0, step 6, agent 'b': 'b' acted and got an observation")
    assert re.fullmatch(r'      reproduce: env\.reset\(seed=0\), then step\(\) with 6 action dicts: '
                        r'\{"a": \d\}, \{"b": \d\}, \{"a": \d\}, \{"b": \d\}, \{"a": \d\}, '
                        r'\{"a": \d, "b": \d\}', lines[3]), lines[3]
    many = str(check(B.Float64Obs, episodes=1))
    assert "    ... and 6 more" in many  # only the first three findings of a rule are spelled out


def test_to_dict_is_json_serialisable_with_numpy_values() -> None:
    report = Report("t", findings=[Finding(R.OBS_IN_SPACE, "error", "m", 0, 1, np.int64(3),
                                           Reproducer(5, [{"a": np.int64(2)}]))])
    data = json.loads(json.dumps(report.to_dict()))
    assert data["findings"][0]["agent"] == 3
    assert data["findings"][0]["reproducer"] == {"seed": 5, "actions": [{"a": 2}]}


def test_html_table_for_notebooks_escapes_text() -> None:
    report = Report("<env>", findings=[Finding(R.INFO_KEYS, "error", "a < b", 1, 2, "x")])
    html = report._repr_html_()
    assert "&lt;env&gt;" in html and "a &lt; b" in html and "<code>info.keys</code>" in html
    assert "No findings." in Report("ok")._repr_html_()


def test_assert_conforms_raises_with_the_readable_report() -> None:
    with pytest.raises(AssertionError, match=r"(?s)breaks the MultiAgentEnv contract.*reward\.scalar"):
        assert_conforms(B.BoolReward, episodes=1)
    assert assert_conforms(B.Duel, episodes=1).ok


def test_check_rejects_nonsense_options() -> None:
    with pytest.raises(ValueError, match="episodes >= 1"):
        check(B.Duel, episodes=0)


def test_the_envs_own_warnings_are_collected_into_the_report_not_printed() -> None:
    import warnings

    from marlhub.conformance import check

    class Chatty(B.Duel):
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            warnings.warn("the duel is about to begin", UserWarning, stacklevel=1)
            return super().reset(seed=seed, options=options)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may escape check()
        report = check(Chatty, episodes=2)
    (warned,) = report.native_warnings
    assert report.ok and warned.startswith("UserWarning: the duel is about to begin")
    assert "the env's libraries warned: UserWarning: the duel" in str(report)
    assert report.to_dict()["warnings"] == report.native_warnings
