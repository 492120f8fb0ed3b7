"""Ray pickles by module path: envs and creators pickled by release 0.1.0 still load."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.rllib")

from marlhub.adapters.rllib.view import hub_rllib_env_class  # noqa: E402
from marlhub.envs import TicTacToe  # noqa: E402
from marlhub.registry.ray import RayEnvCreator  # noqa: E402

#: Made by marlhub 0.1.0 (before the move): {"env": to_rllib(make("tic_tac_toe")),
#: "creator": RayEnvCreator("tic_tac_toe")}, whose classes lived in
#: marlhub.adapters._rllib_to and marlhub.adapters._rllib_register.
OLD = Path(__file__).parent / "data" / "release_0_1_0.pkl"


def test_the_pickle_names_the_old_module_paths() -> None:
    raw = OLD.read_bytes()
    assert b"marlhub.adapters._rllib_to" in raw and b"marlhub.adapters._rllib_register" in raw


def test_old_pickles_load_as_the_new_classes_and_work() -> None:
    data = pickle.loads(OLD.read_bytes())
    assert data["version"] == "0.1.0"
    env, creator = data["env"], data["creator"]
    assert type(env) is hub_rllib_env_class() and isinstance(env.env, TicTacToe)
    assert type(creator) is RayEnvCreator and creator == RayEnvCreator("tic_tac_toe")
    obs, _ = env.reset(seed=0)
    assert len(obs) == 1
    assert type(creator({})) is hub_rllib_env_class()


def test_old_pickles_load_in_a_fresh_interpreter_that_never_imported_marlhub() -> None:
    # What a Ray worker does: unpickle first, so the old module path is the first
    # marlhub import of the process.
    code = (f"import pickle; d = pickle.load(open({str(OLD)!r}, 'rb')); "
            "print(type(d['env']).__module__, type(d['creator']).__module__)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["marlhub.adapters.rllib.view", "marlhub.registry.ray"]
