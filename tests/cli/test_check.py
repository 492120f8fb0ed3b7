"""`marlhub check`: targets of every form, exit codes, --json, --junit, --jobs, --timeout."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from marlhub.cli import main
from marlhub.conformance import rules as R

BREAKERS = "tests/conformance/rule_breakers.py"


def test_reference_envs_pass_and_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "rock_paper_scissors", "tic_tac_toe", "traffic", "--strict"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["PASS"] * 3
    assert lines[-1] == "3 passed, 0 failed"


def test_config_goes_to_the_env_the_fresh_process_and_the_vector_env(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    assert main(["check", "traffic", "--config", '{"num_cars": 5}', "--episodes", "3",
                 "--vector", "2", "--strict", "--json", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 0 failed"
    assert main(["check", "traffic", "--config", '{"nope": 1}', "-q"]) == 2
    assert "unknown key 'nope'" in capsys.readouterr().err


def test_a_config_that_is_no_json_object_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "traffic", "--config", "[1]"]) == 2
    assert "--config must be a JSON object" in capsys.readouterr().err


def test_a_glob_over_ids_expands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "ro*", "t*", "--episodes", "2", "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == "3 passed, 0 failed"


def test_failing_file_target_exits_1_with_findings_grouped_by_rule_and_a_reproducer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", f"{BREAKERS}:ActorWithoutReward", "--episodes", "2"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith(f"FAIL {BREAKERS}:ActorWithoutReward: 2 episodes")
    assert "error reward.present:" in out
    assert "reproduce: env.reset(seed=0), then step() with" in out


@pytest.mark.parametrize("attr", ["Duel", "duel_instance", "make_duel"])
def test_module_attr_targets_class_instance_and_factory(attr: str) -> None:
    assert main(["check", f"tests.conformance.rule_breakers:{attr}", "--episodes", "2"]) == 0


def test_warnings_pass_unless_strict(capsys: pytest.CaptureFixture[str]) -> None:
    target = f"{BREAKERS}:StepAfterEndWorks"
    assert main(["check", target, "--episodes", "2"]) == 0
    assert main(["check", target, "--episodes", "2", "--strict"]) == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["check", "tic_tac_to"], "Did you mean 'tic_tac_toe'"),
    (["check", "nothing_like_this*"], "the glob matches no registered id"),
    (["check", "no/such/file.py:Env"], "there is no file"),
    (["check", f"{BREAKERS}:NoSuchEnv"], "has no attribute 'NoSuchEnv'"),
    (["check", "no_such_module_xyz:Env"], "importing module 'no_such_module_xyz' failed"),
    (["check", "tic_tac_toe", "--episodes", "0"], "expected a number >= 1"),
    (["check", "tic_tac_toe", "--timeout", "-1"], "expected a number of seconds > 0"),
])
def test_usage_and_load_errors_exit_2(argv: list[str], message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_load_error_does_not_stop_the_other_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "tic_tac_to", "traffic", "--episodes", "2"]) == 2
    captured = capsys.readouterr()
    assert "PASS traffic" in captured.out
    assert "1 passed, 0 failed, 1 not loaded" in captured.out
    assert "ERROR tic_tac_to: UnknownEnvError" in captured.err


def test_json_has_the_documented_shape(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code = main(["check", "tic_tac_toe", f"{BREAKERS}:BoolReward", "--episodes", "2",
                 "--json", str(out)])
    assert code == 1
    doc = json.loads(out.read_text())
    assert [t["target"] for t in doc["targets"]] == ["tic_tac_toe", f"{BREAKERS}:BoolReward"]
    good, bad = doc["targets"]
    assert (good["ok"], good["episodes"], good["findings"]) == (True, 2, [])
    assert bad["ok"] is False and bad["steps"] == 12
    finding = bad["findings"][0]
    assert {"rule", "severity", "message", "episode", "step", "agent"} <= set(finding)
    assert (finding["rule"], finding["severity"]) == (R.REWARD_SCALAR, "error")
    assert isinstance(finding["episode"], int) and isinstance(finding["step"], int)
    assert finding["reproducer"]["seed"] == 0


def test_junit_has_one_testcase_per_target_and_rule(tmp_path: Path) -> None:
    out = tmp_path / "out.xml"
    main(["check", "traffic", f"{BREAKERS}:InfoNotDict", "--episodes", "2", "--junit", str(out)])
    root = ET.parse(out).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["traffic", f"{BREAKERS}:InfoNotDict"]
    for suite in suites:
        names = [c.get("name") for c in suite.findall("testcase")]
        assert R.OBS_IN_SPACE in names and R.EQUIV_RETURNS not in names
        assert len(names) == len(set(names)) == int(suite.get("tests"))
    failed = [c.get("name") for c in suites[1].findall("testcase") if c.find("failure") is not None]
    assert failed == [R.INFO_KEYS]
    assert suites[0].get("failures") == "0"


def test_jobs_survive_a_hang_and_a_crash(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    code = main(["check", f"{BREAKERS}:HangsAtStep2", f"{BREAKERS}:CrashesTheInterpreter",
                 "traffic", "--jobs", "2", "--timeout", "5", "--episodes", "2", "--json", str(out)])
    assert code == 1
    targets = {t["target"]: t for t in json.loads(out.read_text())["targets"]}
    assert [f["rule"] for f in targets[f"{BREAKERS}:HangsAtStep2"]["findings"]] == [R.ENV_TIMEOUT]
    crash = targets[f"{BREAKERS}:CrashesTheInterpreter"]["findings"]
    assert [f["rule"] for f in crash] == [R.ENV_RAISED] and "signal 11" in crash[0]["message"]
    assert targets["traffic"]["ok"] is True


def test_against_native_on_a_target_without_native_twin_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "tic_tac_toe", "--episodes", "2", "--against-native"]) == 0
    assert "has no native twin" in capsys.readouterr().out


def test_ids_a_glob_found_that_do_not_load_are_skipped_not_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    from marlhub.registry import default_registry

    def needs_parameters(config):
        raise ValueError("give me a board size")

    registry = default_registry()
    registry.register("zz_needs_params", needs_parameters)
    registry.register("zz_fine", lambda config: __import__("marlhub").make("traffic"))
    try:
        out = tmp_path / "out.json"
        assert main(["check", "zz_*", "--episodes", "2", "--json", str(out)]) == 0
        text = capsys.readouterr().out
        assert "SKIP zz_needs_params: does not load as it is (EnvCreationError: " in text
        assert text.strip().endswith("1 passed, 0 failed, 1 skipped (did not load)")
        skipped = json.loads(out.read_text())["targets"][1]
        assert skipped["target"] == "zz_needs_params" and "board size" in skipped["skipped"]
        assert main(["check", "zz_needs_params", "--episodes", "2"]) == 2  # named: an error
    finally:
        registry.unregister("zz_needs_params")
        registry.unregister("zz_fine")


# -- what the CLI shows of its work ------------------------------------------------------


def test_quiet_still_prints_the_final_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "traffic", "--episodes", "2", "-q"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "1 passed, 0 failed"


def test_skipped_ids_are_skipped_in_json_and_junit(tmp_path: Path) -> None:
    pytest.importorskip("pyspiel")
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    code = main(["check", "openspiel/efg_g*", "openspiel/kuhn_poker", "--episodes", "1",
                 "--json", str(json_path), "--junit", str(junit_path)])
    assert code == 0
    entries = {e["target"]: e for e in json.loads(json_path.read_text())["targets"]}
    assert entries["openspiel/efg_game"]["status"] == "skipped"
    assert "ok" not in entries["openspiel/efg_game"]
    assert entries["openspiel/kuhn_poker"]["status"] == "pass"
    xml = junit_path.read_text()
    assert 'testsuite name="openspiel/efg_game"' in xml and "<skipped" in xml


def test_a_missing_results_folder_is_created_and_said(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "new" / "folder" / "r.json"
    assert main(["check", "traffic", "--episodes", "1", "--json", str(path)]) == 0
    assert path.exists() and "created the folder" in capsys.readouterr().err


def test_a_glob_over_a_family_whose_backend_is_missing_names_the_extra() -> None:
    from marlhub.conformance.targets import expand_targets
    from marlhub.errors import MissingDependencyError, TargetError
    from marlhub.registry import Registry

    class NeedsFoo:
        name = "foo"
        description = "envs of the foo library"

        def ids(self) -> Any:
            raise MissingDependencyError("foo", "foo", "The foo/ family")

        def make(self, rest: str, config: Any) -> Any:
            raise MissingDependencyError("foo", "foo", "The foo/ family")

    registry = Registry(entry_point_group=None)
    registry.register_family(NeedsFoo())
    with pytest.raises(TargetError, match=r"pip install 'marlhub\[foo\]'"):
        expand_targets(["foo/*"], registry)


def test_conversions_are_refused_when_the_env_is_made() -> None:
    import marlhub
    from marlhub.errors import ConversionError, NotParallelizableError

    with pytest.raises(NotParallelizableError, match="The env is turn-based"):
        marlhub.make("tic_tac_toe", to="pettingzoo.parallel")
    assert marlhub.make("tic_tac_toe", to="pettingzoo.parallel", turn_based="pad")
    with pytest.raises(ConversionError, match="Did you mean 'pettingzoo.aec'"):
        marlhub.make("traffic", to="pettingzoo")


def test_a_single_crashing_target_under_jobs_gives_a_report_json_and_exit_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "crash.json"
    code = main(["check", f"{BREAKERS}:CrashesTheInterpreter", "--jobs", "2", "--episodes", "2",
                 "--json", str(path)])
    assert code == 1
    assert "FAIL" in capsys.readouterr().out
    (entry,) = json.loads(path.read_text())["targets"]
    assert entry["status"] == "fail"
    assert entry["findings"][0]["rule"] == R.ENV_RAISED
    assert "died (signal" in entry["findings"][0]["message"]
    assert "in episode 0" in entry["findings"][0]["message"]
    assert entry["findings"][0]["episode"] == 0


def test_against_native_shows_its_rules_and_time_in_text_and_json(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspiel")
    path = tmp_path / "r.json"
    assert main(["check", "openspiel/kuhn_poker", "--episodes", "2", "--against-native",
                 "--json", str(path)]) == 0
    text = capsys.readouterr().out
    assert "against native (equiv.trajectory, equiv.returns): identical to the native env" in text
    (entry,) = json.loads(path.read_text())["targets"]
    native = entry["against_native"]
    assert native["rules"] == [R.EQUIV_TRAJECTORY, R.EQUIV_RETURNS] and native["ok"]
    assert native["seconds"] > 0 and entry["seconds"] >= native["seconds"]
    main(["check", "openspiel/kuhn_poker", "--episodes", "1", "--json", str(path)])
    assert json.loads(path.read_text())["targets"][0]["against_native"] is None


def test_report_repr_and_html_are_grouped_by_rule() -> None:
    from marlhub.conformance import check

    report = check(f"{BREAKERS}:ActorWithoutReward", episodes=2)
    assert repr(report).startswith("<Report FAIL") and "reward.present x" in repr(report)
    page = report._repr_html_()
    assert page.count("<details>") == len(report.by_rule())
    assert "<code>reward.present</code>" in page


SLOW_ENV = '''
import time
from marlhub.envs import RockPaperScissors

class Slow(RockPaperScissors):
    def reset(self, *, seed=None, options=None):
        time.sleep(0.15)
        return super().reset(seed=seed, options=options)
'''


def _in_a_terminal(args: list[str], tmp_path: Path) -> str:
    """Run ``marlhub`` with a pseudo-terminal as stderr; return what it wrote there."""
    import os
    import pty
    import subprocess
    import sys

    main_fd, child_fd = pty.openpty()
    try:
        run = subprocess.run([sys.executable, "-m", "marlhub.cli", *args], stdout=subprocess.PIPE,
                             stderr=child_fd, timeout=120, cwd=tmp_path)
        os.close(child_fd)
        chunks = []
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main_fd)
    assert run.returncode == 0, run.stdout
    return b"".join(chunks).decode(errors="replace")


def test_a_long_single_target_shows_episodes_with_an_eta_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "slow_env.py").write_text(SLOW_ENV)
    shown = _in_a_terminal(["check", "slow_env.py:Slow", "--episodes", "6"], tmp_path)
    assert "episodes, ETA" in shown and "slow_env.py:Slow" in shown
    assert "ETA" not in _in_a_terminal(["check", "slow_env.py:Slow", "--episodes", "6", "-q"],
                                      tmp_path)
