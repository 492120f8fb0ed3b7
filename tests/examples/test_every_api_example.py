"""examples/every_api.py: one env through every API gives the same returns."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("pyspiel")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "every_api.py"


def test_every_api_gives_the_original_returns(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_every_api", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 8 and "DIFFERENT" not in "\n".join(table)
    assert all(line.endswith("same") for line in table[1:])
