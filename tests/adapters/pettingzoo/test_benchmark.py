"""The overhead benchmark runs (in its quick mode) and prints its table; no timings are asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "pettingzoo_overhead.py"


def test_benchmark_quick_mode_prints_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("pettingzoo_overhead", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--quick"]) == 0
    out = capsys.readouterr().out
    tables = ["classic/connect_four-v3 (AEC)", "classic/tictactoe-v3 (AEC)",
              "butterfly/pistonball-v6 (parallel"]
    many_agents = bool(importlib.util.find_spec("mpe2") and importlib.util.find_spec("magent2"))
    if many_agents:
        tables += ["mpe2/simple_spread-v3 (AEC", "mpe2/simple_spread-v3 (parallel",
                   "magent2/battle-v4 (AEC, 162 agents", "magent2/battle-v4 (parallel, 162 agents"]
    for title in tables:
        assert title in out
    assert out.count("marlhub from_pettingzoo") == len(tables)
    assert ("magent2/battle-v4 (parallel) by number of agents" in out) == many_agents
