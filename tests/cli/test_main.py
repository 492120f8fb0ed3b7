"""The marlhub command: exit codes and output of list, run and --version."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

import marlhub
from marlhub.cli import main
from marlhub.envs import BUILTIN_ENVS, Traffic
from marlhub.errors import MissingDependencyError
from marlhub.registry import default_registry


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--version") == (0, f"marlhub {marlhub.__version__}\n", "")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 2 and out == ""
    assert "give a command" in err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "frobnicate")
    assert code == 2 and "invalid choice: 'frobnicate'" in err


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "list" in out and "run" in out


# -- list -------------------------------------------------------------------------


def test_list_prints_aligned_ids_and_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = {line.split()[0]: line for line in out.splitlines()}
    for name, (_, description) in BUILTIN_ENVS.items():
        assert lines[name].endswith(description)
    columns = {lines[name].index(BUILTIN_ENVS[name][1]) for name in BUILTIN_ENVS}
    assert len(columns) == 1  # descriptions start in one column


def test_list_with_a_pattern(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "list", "tic*")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["tic_tac_toe"]


def test_list_without_matches_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "list", "no_such_env*")
    assert (code, out) == (1, "")
    assert "no registered id matches 'no_such_env*'" in err


class MissingBackend:
    name = "zz_missing"
    description = "a family whose backend is not installed"

    def ids(self) -> list[tuple[str, str]]:
        raise MissingDependencyError("zzbackend", "zz", "The zz_missing family")

    def make(self, rest: str, config: Any) -> Any:
        raise MissingDependencyError("zzbackend", "zz", "The zz_missing family")


@pytest.fixture
def missing_family() -> Iterator[None]:
    default_registry().register_family(MissingBackend())
    yield
    default_registry().unregister_family("zz_missing")


def test_list_names_the_extra_of_a_missing_backend(
    capsys: pytest.CaptureFixture[str], missing_family: None
) -> None:
    code, out, err = run(capsys, "list", "*")
    assert code == 0
    assert "traffic" in out and "zz_missing" not in out
    (line,) = [line for line in err.splitlines() if "zz_missing" in line]
    assert "pip install 'marlhub[zz]'" in line
    code, _, err = run(capsys, "list", "tr*")
    assert code == 0 and "zz_missing" not in err


# -- run ----------------------------------------------------------------------------


def test_run_traffic_prints_per_agent_returns(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "traffic", "--episodes", "200")
    assert code == 0 and err == ""
    assert re.match(r"traffic: 200 episodes, seed 0, [\d,]+ steps in [\d.]+ s \([\d,]+ steps/s\)", out)
    assert "episode length: mean" in out
    table = out.splitlines()[2:]
    assert table[0].split() == ["agent", "mean", "return", "std", "episodes"]
    agents = [row.split()[0] for row in table[1:]]
    assert agents == Traffic().possible_agents
    for row in table[1:]:
        _, mean, std, episodes = row.split()
        float(mean), float(std)
        assert episodes == "200"


def test_run_is_reproducible_and_takes_config(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("run", "traffic", "--episodes", "5", "--seed", "3", "--config", '{"num_cars": 2}')
    code, first, _ = run(capsys, *args)
    assert code == 0
    _, second, _ = run(capsys, *args)
    assert first.splitlines()[1:] == second.splitlines()[1:]  # all but the timing line
    assert [row.split()[0] for row in first.splitlines()[3:]] == ["car_0", "car_1", "light"]


def test_run_reports_episodes_cut_by_max_steps(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "run", "traffic", "--episodes", "3", "--max-steps", "2")
    assert code == 0
    assert "mean 2.0, min 2, max 2, 3 cut short by --max-steps" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "tic_tac_to"], "Did you mean 'tic_tac_toe'?"),
        (["run", "traffic", "--config", '{"num_cars: 2}'], "--config is not valid JSON"),
        (["run", "traffic", "--config", "[1, 2]"], "--config must be a JSON object"),
        (["run", "traffic", "--config", '{"bogus": 1}'], "unknown key 'bogus'. Accepted keys:"),
        (["run", "traffic", "--config", '{"num_cars": 0}'], "'num_cars' must be an integer >= 1"),
        (["run", "traffic", "--episodes", "0"], "expected a number >= 1, got 0"),
        (["run", "traffic", "--episodes", "many"], "expected a whole number, got 'many'"),
        (["run", "traffic", "--seed", "-1"], "expected a number >= 0, got -1"),
        (["run"], "the following arguments are required: ID"),
    ],
)
def test_run_usage_errors_exit_2_without_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert message in err
    assert "Traceback" not in err


class Crashing(Traffic):
    def step(self, action_dict: dict) -> Any:
        raise ZeroDivisionError("the env divided by zero")


@pytest.fixture
def crashing_env() -> Iterator[str]:
    default_registry().register("test_cli_crashing", Crashing)
    yield "test_cli_crashing"
    default_registry().unregister("test_cli_crashing")


def test_env_crash_during_run_exits_1_with_its_traceback(
    capsys: pytest.CaptureFixture[str], crashing_env: str
) -> None:
    code, out, err = run(capsys, "run", crashing_env, "--episodes", "2")
    assert (code, out) == (1, "")
    assert f"{crashing_env} raised during the rollout (seed 0)" in err
    assert "ZeroDivisionError: the env divided by zero" in err



def test_list_shows_only_the_first_line_of_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    default_registry().register("test_cli_multiline", Traffic, description="first line\nsecond line")
    try:
        code, out, _ = run(capsys, "list", "test_cli_multiline")
    finally:
        default_registry().unregister("test_cli_multiline")
    assert (code, out) == (0, "test_cli_multiline  first line\n")
