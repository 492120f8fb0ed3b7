"""examples/vector_envs.py: lists of dicts in workers, agent slots, and (with Ray) RLlib."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_envs.py"


def test_the_script_runs_its_parts() -> None:
    pytest.importorskip("pyspiel")
    run = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "60"], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("traffic x4 (async): 60 steps, ")
    assert lines[1].startswith("kuhn_poker x8 as slots: observation (8, 2, ")


def test_the_rllib_part() -> None:
    pytest.importorskip("ray.rllib")
    pytest.importorskip("torch")
    pytest.importorskip("pyspiel")
    run = subprocess.run([sys.executable, str(EXAMPLE), "--steps", "10", "--rllib"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-1].startswith("RLlib PPO on tic_tac_toe x4 (async): ")
