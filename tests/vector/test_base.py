"""Autoreset modes, seeds, and Ray's base class taken without importing Ray."""

from __future__ import annotations

import subprocess
import sys

import pytest

from marlhub.errors import VectorEnvError
from marlhub.vector.base import AUTORESET_MODES, parse_autoreset_mode, seeds_for


@pytest.mark.parametrize(("given", "expected"), [
    ("next_step", "next_step"), ("NextStep", "next_step"), ("SAME-STEP", "same_step"),
    ("Disabled", "disabled"),
])
def test_autoreset_modes_in_any_spelling(given: str, expected: str) -> None:
    assert parse_autoreset_mode(given) == expected


def test_gymnasiums_autoreset_enum_is_taken() -> None:
    from gymnasium.vector import AutoresetMode

    assert [parse_autoreset_mode(m) for m in AutoresetMode] == list(AUTORESET_MODES)
    with pytest.raises(VectorEnvError, match="unknown autoreset_mode 3"):
        parse_autoreset_mode(3)


def test_seeds() -> None:
    assert seeds_for("V", None, 2) == [None, None]
    assert seeds_for("V", (4, None), 2) == [4, None]
    with pytest.raises(VectorEnvError, match="got 1 seeds for 2 copies"):
        seeds_for("V", [1], 2)
    with pytest.raises(VectorEnvError, match="got the seed True"):
        seeds_for("V", True, 2)


_SUBCLASS_CHECK = """
import sys
import marlhub
from marlhub.envs import TicTacToe
from marlhub.vector import SyncVectorMultiAgentEnv
venv = SyncVectorMultiAgentEnv([TicTacToe])
assert "ray" not in sys.modules, "marlhub imported Ray"
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv
assert isinstance(venv, VectorMultiAgentEnv), type(venv).__mro__
import ray.rllib.env.vector.vector_multi_agent_env as module
assert module.VectorMultiAgentEnv is VectorMultiAgentEnv
print("ok")
"""


def test_a_subclass_of_rays_class_once_ray_is_imported_after_marlhub() -> None:
    pytest.importorskip("ray")
    run = subprocess.run([sys.executable, "-c", _SUBCLASS_CHECK], capture_output=True, text=True,
                         timeout=120)
    assert run.stdout.strip() == "ok", run.stderr


def test_a_subclass_of_rays_class_when_ray_came_first() -> None:
    pytest.importorskip("ray")
    code = ("from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv as V\n"
            "from marlhub.vector import AsyncVectorMultiAgentEnv as A\n"
            "assert issubclass(A, V); print('ok')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() == "ok", run.stderr
