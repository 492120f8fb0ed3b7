"""check_vector and `marlhub check --vector N`: a vector env equals its copies, or says where not."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import pytest

from marlhub.cli import main
from marlhub.conformance.vector import (
    check_vector,
    check_vector_targets,
    vector_env_fns,
)
from marlhub.contract.rules import ENV_RAISED, ENV_TIMEOUT, VECTOR_EQUIV
from marlhub.envs import RockPaperScissors, Traffic
from marlhub.errors import TargetError
from tests.conformance.valid_envs import VALID_ENVS
from tests.vector.envs import no_worker_left_behind  # noqa: F401 (autouse)


@pytest.mark.parametrize("env_id", ["rock_paper_scissors", "tic_tac_toe", "traffic",
                                    "gymnasium/CartPole-v1"])
def test_the_built_in_envs_equal_their_copies_in_every_mode(env_id: str) -> None:
    report = check_vector(env_id, 3, episodes=2, timeout=60)
    assert report.ok, str(report)
    assert report.episodes >= 6 * 3 * 2 and report.target == f"{env_id} --vector 3"


@pytest.mark.parametrize("env_id", ["openspiel/kuhn_poker", "openspiel/goofspiel",
                                    "pettingzoo/classic/connect_four-v3"])
def test_family_envs_turn_based_and_simultaneous(env_id: str) -> None:
    pytest.importorskip("pyspiel" if env_id.startswith("openspiel") else "pettingzoo")
    assert check_vector(env_id, 2, episodes=1, timeout=60).ok


@pytest.mark.parametrize("env_class", VALID_ENVS, ids=lambda c: c.__name__)
def test_envs_that_keep_the_rules_in_unusual_ways(env_class: type) -> None:
    report = check_vector(env_class, 2, episodes=2, timeout=60)
    assert report.ok, str(report)


def test_a_copy_that_differs_from_its_separate_twin_is_found() -> None:
    made = itertools.count()

    def drifting() -> Any:  # the vector's copies and the separate envs differ
        return Traffic({"num_cars": 2, "max_steps": 5 + next(made) % 2})

    report = check_vector(drifting, 1, episodes=1, vectorization_modes=("sync",),
                          autoreset_modes=("next_step",))
    assert report.rules_broken() == [VECTOR_EQUIV]
    (finding,) = report.findings
    assert finding.message.startswith("sync/next_step: copy 0's ")
    assert "separately made env seeded 0 + 0" in finding.message


class _SlowInWorkers(RockPaperScissors):
    """Quick in the test's process, 50 ms a step in the async env's workers, forked or
    spawned (importing torchrl makes "spawn" the default start method)."""

    def step(self, action_dict: Any) -> Any:
        if multiprocessing.parent_process() is not None:
            time.sleep(0.05)
        return super().step(action_dict)


def test_a_vector_check_past_its_limit_stops_and_says_so() -> None:
    # `marlhub check --vector N --timeout S` passes S as the limit; it used to bind only the
    # async env's wait for each call, and a slow target's vector check ran on unbounded.
    start = time.perf_counter()
    (report,) = check_vector_targets([_SlowInWorkers], 2, episodes=40, timeout=60, limit=3.0)
    assert time.perf_counter() - start < 20
    assert report.rules_broken() == [ENV_TIMEOUT], str(report)
    assert "took longer than its 3s limit" in report.findings[0].message
    assert report.target.endswith(" --vector 2")


def test_a_vector_env_that_cannot_be_made_is_a_finding() -> None:
    def broken() -> Any:
        raise RuntimeError("no env today")

    report = check_vector(broken, 2, vectorization_modes=("sync",), autoreset_modes=("disabled",))
    assert report.rules_broken() == [ENV_RAISED] and "no env today" in report.findings[0].message


def test_targets_must_make_copies() -> None:
    with pytest.raises(TargetError, match="one env instance"):
        vector_env_fns(RockPaperScissors(), 2)
    assert len(vector_env_fns("tests.conformance.valid_envs:LateJoiners", 3)) == 3


def test_the_cli_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = main(["check", "traffic", "--episodes", "2", "--vector", "2", "--json", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "PASS traffic --vector 2:" in printed
    entries = json.loads(out.read_text())["targets"]
    assert [e["target"] for e in entries] == ["traffic", "traffic --vector 2"]
    assert all(e["status"] == "pass" for e in entries)


def test_the_native_envs_known_faults_are_marked_in_the_vector_check_too() -> None:
    pytest.importorskip("pyspiel")
    # open_spiel's chat_game declares fewer actions than it offers: the adapter refuses it at
    # reset, a known fault of the openspiel family, in every copy and every separate twin.
    report = check_vector("openspiel/chat_game", 2, episodes=1)
    assert report.ok and not report.errors
    assert report.warnings and all(f.message.startswith("Known fault of the native env")
                                   for f in report.warnings)


def test_the_cli_timeout_binds_the_vector_check_too(capsys: pytest.CaptureFixture[str]) -> None:
    start = time.perf_counter()
    code = main(["check", "tests.conformance.test_vector:_SlowInWorkers", "--episodes", "40",
                 "--vector", "2", "--timeout", "3"])
    printed = capsys.readouterr().out
    assert time.perf_counter() - start < 30
    assert code == 1, printed
    assert "PASS tests.conformance.test_vector:_SlowInWorkers:" in printed  # the main check
    assert "env.timeout" in printed and "took longer than its 3s limit" in printed
