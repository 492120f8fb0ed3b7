"""examples/write_your_own_env.py: the guide's env keeps the contract, and its faults are caught."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from marlhub import ActionError, ResetNeededError
from marlhub.cli import main
from marlhub.conformance import check

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "write_your_own_env.py"


def _nim() -> Any:
    spec = importlib.util.spec_from_file_location("example_nim", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Nim


def test_the_script_checks_its_env() -> None:
    run = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("PASS") and "0 errors, 0 warnings" in run.stdout


def test_marlhub_check_takes_it_by_path() -> None:
    assert main(["check", f"{EXAMPLE}:Nim", "--strict", "--episodes", "5"]) == 0


def test_bad_actions_and_steps_out_of_an_episode_are_refused() -> None:
    env = _nim()()
    with pytest.raises(ResetNeededError):
        env.step({"first": 1})
    obs, _ = env.reset(seed=0)
    (actor,) = obs
    with pytest.raises(ActionError, match="Discrete"):
        env.step({actor: 4})
    sticks = env.sticks
    assert sticks == int(obs[actor]["sticks"][0])


def test_a_broken_variant_is_caught() -> None:
    class GlobalRandom(_nim()):  # type: ignore[misc]
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            obs, infos = super().reset(seed=seed, options=options)
            import random
            self.sticks = random.randint(10, 15)  # not from self.np_random
            return self._observe(), infos

    assert not check(GlobalRandom, episodes=5).ok
