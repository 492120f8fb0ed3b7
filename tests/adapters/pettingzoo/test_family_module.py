"""The pettingzoo-module/ family: any installed PettingZoo-API env by module or function."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("mpe2")

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from marlhub.adapters.pettingzoo.family_module import PettingZooModuleFamily  # noqa: E402
from marlhub.cli import main  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import ConfigError, MissingDependencyError, UnknownEnvError  # noqa: E402
from marlhub.registry import EnvContext  # noqa: E402

SPREAD = "pettingzoo-module/mpe2.simple_spread_v3"


def test_a_module_id_makes_its_env_or_parallel_env() -> None:
    env = marlhub.make(SPREAD)
    assert type(env) is PettingZooEnv and env.possible_agents == ["agent_0", "agent_1", "agent_2"]
    par = marlhub.make(SPREAD, {"api": "parallel", "N": 2})
    assert type(par) is ParallelPettingZooEnv and par.possible_agents == ["agent_0", "agent_1"]
    # Modules of any package in PettingZoo's layout, PettingZoo's own too.
    assert type(marlhub.make("pettingzoo-module/pettingzoo.classic.rps_v2")) is PettingZooEnv


def test_a_function_id_calls_that_function() -> None:
    env = marlhub.make(f"{SPREAD}.parallel_env", {"N": 4})
    assert type(env) is ParallelPettingZooEnv and len(env.possible_agents) == 4
    with pytest.raises(ConfigError, match=r"names the function 'parallel_env', which decides "
                                          r"the API\. Drop 'api'"):
        marlhub.make(f"{SPREAD}.parallel_env", {"api": "parallel"})


def test_parallel_config_for_a_module_with_a_parallel_env_only() -> None:
    family = PettingZooModuleFamily()
    assert family.parallel_config("mpe2.simple_spread_v3", {"N": 2}) == {"N": 2, "api": "parallel"}
    assert marlhub.registry.simultaneous_config(SPREAD, None) == {"api": "parallel"}
    # A function decides the API; tic-tac-toe has no parallel_env; no such module.
    assert family.parallel_config("mpe2.simple_spread_v3.env", None) is None
    assert family.parallel_config("pettingzoo.classic.tictactoe_v3", None) is None
    assert family.parallel_config("mpe2.nope_v1", None) is None


def test_config_is_checked_against_the_constructor() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'n'\. Accepted keys: 'N', 'api'"):
        marlhub.make(SPREAD, {"n": 2})
    with pytest.raises(ConfigError, match="tictactoe_v3 has no parallel version in the module"):
        marlhub.make("pettingzoo-module/pettingzoo.classic.tictactoe_v3", {"api": "parallel"})


@pytest.mark.parametrize(("rest", "message"), [
    ("mpe2.simple_sprad_v3", r"'mpe2' has no function 'simple_sprad_v3'\. Did you mean "
                             r"'pettingzoo-module/mpe2.simple_spread_v3'"),
    ("mpe2.simple_spread_v3.paralel_env", r"Did you mean "
                                          r"'pettingzoo-module/mpe2.simple_spread_v3.parallel_env'"),
    ("mpe2", r"'mpe2' has no function 'env' \(PettingZoo's module layout.*Did you mean "
             r"'pettingzoo-module/mpe2.collect_treasure_v1'"),
    ("no_such_package.envs", r"No module named 'no_such_package' is installed"),
    ("not a module", r"is not a dotted Python module path"),
])
def test_unknown_modules_and_functions_get_suggestions(rest: str, message: str) -> None:
    with pytest.raises(UnknownEnvError, match=message):
        marlhub.make(f"pettingzoo-module/{rest}")


@pytest.mark.skipif(importlib.util.find_spec("multi_agent_ale_py") is not None,
                    reason="the atari dependencies are installed")
def test_a_missing_dependency_of_the_module_is_named() -> None:
    with pytest.raises(MissingDependencyError, match=r"needs the 'multi_agent_ale_py' package"):
        marlhub.make("pettingzoo-module/pettingzoo.atari.pong_v3")


def test_the_family_lists_no_ids() -> None:
    assert list(PettingZooModuleFamily().ids()) == []


def test_lockstep_and_check_against_native() -> None:
    family = PettingZooModuleFamily()
    config = EnvContext({"api": "parallel", "N": 2})
    assert family.lockstep("mpe2.simple_spread_v3", config, episodes=2, seed=0,
                           max_steps=100) == []
    report = check(SPREAD, episodes=2, against_native=True)
    assert report.ok and report.lockstep_seconds is not None, str(report)


def test_check_and_run_from_the_shell(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", SPREAD, "--episodes", "2", "--against-native"]) == 0
    assert f"PASS {SPREAD}" in capsys.readouterr().out
    assert main(["run", SPREAD, "--episodes", "2", "--config", '{"N": 2}']) == 0
    out = capsys.readouterr().out
    assert f"{SPREAD}: 2 episodes" in out and "agent_1" in out and "agent_2" not in out
    assert main(["run", SPREAD, "--config", '{"n": 2}']) == 2
    assert "unknown key 'n'" in capsys.readouterr().err
