"""examples/external_simulator_ppo.py: RLlib's PPO learns from simulators in other processes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("grpc")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "external_simulator_ppo.py"


def test_ppo_learns_from_simulators_that_call_in(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_external_simulator_ppo", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    returns = module.train(iterations=3, simulators=2)
    assert len(returns) == 3
    assert returns[-1] > returns[0] + 1.0  # random picks score about 2 of 6
    assert "iteration 3: mean episode return" in capsys.readouterr().out
