"""The Gymnasium example script runs and finds what it says it finds."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_gymnasium_views_example(capsys: pytest.CaptureFixture[str]) -> None:
    found = runpy.run_path(str(EXAMPLES / "gymnasium_views.py"))["main"]()
    assert found["conforms"] and found["tic_tac_toe_return"] == 5.0
    assert found["individual_rewards"] == {"player1": 1.0, "player2": -1.0}
    assert "copies start apart" in capsys.readouterr().out
