"""The OpenSpiel examples run and show what they claim."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pyspiel")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mcts_beats_random_on_the_hubs_tic_tac_toe() -> None:
    example = load("openspiel_mcts_tic_tac_toe")
    tally = example.play(games=10, simulations=40, seed=1)
    assert sum(tally.values()) == 10
    assert tally["wins"] >= 7 and tally["wins"] > tally["losses"], tally


def test_mcts_example_main_prints_the_tally(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("openspiel_mcts_tic_tac_toe").main(["--games", "2", "--simulations", "10"]) == 0
    assert "MCTS (10 simulations) vs random on the hub's TicTacToe, 2 games:" in capsys.readouterr().out


def test_cfr_policy_evaluated_through_the_hub_beats_random() -> None:
    result = load("openspiel_poker_cfr").evaluate(iterations=100, hands=1500, seed=0)
    assert result["exploitability"] < 0.05
    # Well above zero: about four standard errors at these settings.
    assert result["mean_return"] > 2 * result["stderr"] > 0, result


def test_cfr_example_main_prints_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("openspiel_poker_cfr").main(["--iterations", "5", "--hands", "20"]) == 0
    assert "Kuhn poker, CFR (5 iterations" in capsys.readouterr().out
