"""benchmarks/torchrl_overhead.py runs in a tiny mode and prints both tables; no timing is asserted."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("vmas")
pytest.importorskip("pettingzoo")

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "torchrl_overhead.py"


@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested:UserWarning")
def test_both_tables_and_the_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("torchrl_overhead", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out_file = tmp_path / "out.json"
    module.main(["--rounds", "1", "--steps", "12", "--json", str(out_file)])
    out = capsys.readouterr().out
    for row in ("tic_tac_toe (AEC)", "rock_paper_scissors", "pistonball", "vmas/balance"):
        assert row in out
    data = json.loads(out_file.read_text())
    assert set(data["ratios"]["vmas/navigation"]) == {"native", "from_torchrl", "torchrl.VmasEnv"}
    assert data["machine"]["cpus"] and data["measured"]
