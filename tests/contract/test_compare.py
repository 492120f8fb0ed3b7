"""why_different says where two values differ: the comparison every lockstep and replay uses."""

from __future__ import annotations

import numpy as np

from marlhub.contract.compare import returns_findings, why_different
from marlhub.contract.rules import EQUIV_RETURNS


def test_equal_values_are_equal_nan_included() -> None:
    assert why_different({"a": np.array([np.nan, 1.0])}, {"a": np.array([np.nan, 1.0])}) is None
    assert why_different((1, [2, {"x": 3}]), [1, (2, {"x": 3})]) is None


def test_where_and_how_they_differ() -> None:
    assert why_different({"a": 1, "b": 2}, {"b": 2, "a": 1}) == "keys: keys ['a', 'b'] vs ['b', 'a']"
    assert why_different({"a": np.zeros(2, np.float32)}, {"a": np.zeros(2)}) == \
        "['a']: dtypes float32 vs float64"
    assert why_different({"a": np.zeros(2, np.float32)}, {"a": np.zeros(2)},
                         check_dtype=False) is None
    assert why_different([1, 2], [1]) == "sequence: lengths 2 vs 1"


def test_returns_findings_name_each_agent_that_differs() -> None:
    findings = returns_findings({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 3.0}, episode=2, seed=7,
                                actions=[{"a": 0}])
    assert [(f.rule, f.agent, f.episode) for f in findings] == [(EQUIV_RETURNS, "b", 2)]
