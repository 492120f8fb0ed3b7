"""benchmarks/external_throughput.py runs in a tiny mode and prints its table; no timing asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc")

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "external_throughput.py"


def test_the_benchmark_prints_every_contestant() -> None:
    run = subprocess.run([sys.executable, str(BENCHMARK), "--rounds", "1", "--seconds", "0.1",
                          "--simulators", "1", "2"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    header = next(line for line in lines if line.startswith("simulators"))
    for name in ("echo dec/s", "echo+thread dec/s", "marlhub dec/s", "added / echo"):
        assert name in header
    returns = [line for line in lines if line.startswith("simulators")][1]
    for name in ("+returns / echo", "+unary returns / echo", "+returns / marlhub"):
        assert name in returns  # a decision with its rewards, carried or in a call of its own
    assert sum(1 for line in lines if line.split("|")[0].strip() in ("1", "2")) == 4
    scaling = next(line for line in lines if line.lstrip().startswith("2 over 1:"))
    for name in ("echo", "echo stream", "echo+thread", "marlhub", "+returns", "+unary returns"):
        assert f" {name} " in scaling  # the ratio of medians, then (median [lowest, highest])
    assert scaling.count("[") == 6
