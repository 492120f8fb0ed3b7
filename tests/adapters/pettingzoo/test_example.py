"""The PettingZoo round-trip example runs and passes its own checks."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "pettingzoo_roundtrip.py"


@pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")
def test_pettingzoo_roundtrip_example(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("pettingzoo_roundtrip", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main() == 0
    out = capsys.readouterr().out
    assert "3. lockstep with a native instance, 5 games: 0 differences" in out
    assert "4. conformance: PASS" in out
    assert "to_pettingzoo(env) is the native env: True" in out
    assert out.rstrip().endswith("all checks passed")
