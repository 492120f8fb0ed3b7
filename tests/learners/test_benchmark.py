"""The learner bridges' benchmark runs (one short round) and prints its table; no timings are
asserted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("supersuit")
pytest.importorskip("pettingzoo.butterfly.pistonball_v6")

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "learner_bridges.py"


def test_benchmark_prints_every_contestant(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("learner_bridges", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--copies", "2", "--workers", "1", "--rounds", "1", "--seconds", "0.2",
                        "--max-cycles", "20", "--pause", "0"]) == 0
    out = capsys.readouterr().out
    names = ["native", "supersuit", "to_sb3", "supersuit procs", "to_sb3 async"]
    if importlib.util.find_spec("pufferlib") is not None:
        names += ["puffer emulation", "puffer to_pufferlib", "hub async arrays"]
    for name in names:
        assert any(line.startswith(f"{name} ") for line in out.splitlines()), (name, out)
