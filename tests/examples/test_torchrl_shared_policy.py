"""examples/torchrl_shared_policy.py: a TorchRL PPO loop on a hub env, and VMAS as PettingZoo."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

pytest.importorskip("torchrl")
pytest.importorskip("vmas")
pytest.importorskip("pettingzoo")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torchrl_shared_policy.py"


# TorchRL 0.14 deprecates its own weight updater classes when its collectors are imported.
@pytest.mark.filterwarnings("ignore:Creating .*WeightUpdater which inherits:DeprecationWarning")
# tensordict 0.13 (the oldest supported) announces a change of its own to_module().
@pytest.mark.filterwarnings("ignore:TensorDict.to_module.. is replacing:FutureWarning")
def test_the_example_trains_briefly_and_checks_vmas(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("example_torchrl_shared_policy", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    means = module.shared_policy_ppo("vmas/navigation", {"n_agents": 2, "max_steps": 20},
                                     iterations=2, frames=100)
    assert len(means) == 2 and all(math.isfinite(m) for m in means)
    env = module.vmas_as_pettingzoo()
    assert env.possible_agents == ["agent_0", "agent_1", "agent_2"]
    out = capsys.readouterr().out
    assert "iteration 2: mean reward per agent-step" in out
    assert "parallel_api_test passed on vmas/balance" in out
