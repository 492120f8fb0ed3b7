"""--targets: each target library's own checker on the converted env, refusals, round trips."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.cli import main
from marlhub.conformance import check, roundtrip
from marlhub.conformance.interop import TARGET_NAMES, check_targets, parse_targets
from marlhub.envs import RockPaperScissors
from marlhub.errors import ConfigError
from tests.conformance.valid_envs import ActionsStartAtOne

pytest.importorskip("pettingzoo")
pytest.importorskip("pyspiel")


def _by_target(results: list[Any]) -> dict[str, Any]:
    return {r.target: r for r in results}


def test_reference_envs_pass_every_installed_checker() -> None:
    results = _by_target(check_targets(lambda: marlhub.make("rock_paper_scissors"),
                                       TARGET_NAMES))
    for target in ("pettingzoo.aec", "pettingzoo.parallel", "openspiel", "gymnasium"):
        assert results[target].status == "pass", results[target]
    assert {r.status for r in results.values()} <= {"pass", "skipped"}


def test_structural_refusals_say_why() -> None:
    results = _by_target(check_targets(lambda: marlhub.make("tic_tac_toe"),
                                       ["pettingzoo.parallel", "pettingzoo.aec"]))
    refused = results["pettingzoo.parallel"]
    assert refused.status == "refused" and "turn-based" in refused.reason
    assert "turn_based='pad'" in refused.reason and results["pettingzoo.aec"].status == "pass"
    continuous = check_targets(lambda: marlhub.make("gymnasium/MountainCarContinuous-v0"),
                               ["openspiel"])[0]
    assert continuous.status == "refused" and "integer actions" in continuous.reason


class ForgetsWhenCopied(RockPaperScissors):
    """Deep-copies as a new, never reset env, as an env whose world lives in C does."""

    def __deepcopy__(self, memo: dict[int, Any]) -> "ForgetsWhenCopied":
        return type(self)()


def test_an_env_openspiel_cannot_clone_is_refused_and_other_config_errors_fail(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """to_openspiel's UncopyableEnvError is a refusal by structure; any other ConfigError of
    the conversion is a failure still."""
    refused = check_targets(ForgetsWhenCopied, ["openspiel"])[0]
    assert refused.status == "refused"
    assert refused.reason.startswith("state that does not copy: a copy of the env in the middle "
                                     "of an episode starts over, and OpenSpiel clones states")
    import marlhub.adapters.openspiel as openspiel

    def buggy(*args: Any, **kwargs: Any) -> Any:
        raise ConfigError("marlhub_buggy", "a bug in the conversion")

    monkeypatch.setattr(openspiel, "to_openspiel", buggy)
    failed = check_targets(RockPaperScissors, ["openspiel"])[0]
    assert failed.status == "fail" and "a bug in the conversion" in failed.reason


def test_lunar_lander_is_refused_by_openspiel_naming_what_would_not_copy() -> None:
    """Box2D keeps the world in C++ (SWIG pointers), which pickle refuses."""
    with warnings.catch_warnings():  # SWIG's types announce they lack __module__ on import
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip("Box2D")
    report = check("gymnasium/LunarLander-v3", episodes=1, max_steps=5, interop=["openspiel"])
    conversion = report.conversions[0]
    assert report.ok and conversion.status == "refused", conversion
    assert "(TypeError: cannot pickle 'SwigPyObject' object)" in conversion.reason


class LyingSpaces(RockPaperScissors):
    """Says its observations are Discrete(2) but sends values up to 3: PettingZoo notices."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.observation_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}


def test_a_checker_failure_is_reported_with_the_checkers_words() -> None:
    result = check_targets(LyingSpaces, ["pettingzoo.aec"])[0]
    assert result.status == "fail" and result.reason


def test_a_lossy_round_trip_is_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    class HalfRewards(RockPaperScissors):
        def step(self, action_dict: Any) -> Any:
            obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
            return obs, {a: r / 2 for a, r in rewards.items()}, terminateds, truncateds, infos

    monkeypatch.setitem(roundtrip.ROUND_TRIPS, "gymnasium", lambda make, seed: HalfRewards())
    problem = roundtrip.compare_round_trip("gymnasium", RockPaperScissors, seed=0)
    assert problem is not None and "earned" in problem
    result = check_targets(RockPaperScissors, ["gymnasium"])[0]
    assert result.status == "fail" and "round trip through gymnasium" in result.reason


def test_round_trips_keep_returns_and_action_counts() -> None:
    for env_id in ("rock_paper_scissors", "tic_tac_toe", "traffic", "openspiel/kuhn_poker"):
        for target in ("pettingzoo.aec", "openspiel"):
            problem = roundtrip.compare_round_trip(target, lambda: marlhub.make(env_id), seed=3)
            assert problem is None, (env_id, target, problem)


def test_an_openspiel_round_trip_lets_only_a_player_with_nothing_but_pass_sit_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # traffic's waiting cars PASS at OpenSpiel's simultaneous nodes (the test above); a player
    # that shows up as an actor with real choices where the original had none is a failure.
    class WaiterChooses:
        """tic-tac-toe whose waiting player gets the mover's observation, choices and all."""

        def __init__(self) -> None:
            self.env = marlhub.make("tic_tac_toe")
            self.possible_agents = self.env.possible_agents

        def _both(self, obs: dict) -> dict:
            (ob,) = obs.values() if len(obs) == 1 else (None,)
            return obs if ob is None else {a: obs.get(a, ob) for a in self.possible_agents}

        def reset(self, *, seed: Any = None) -> Any:
            obs, infos = self.env.reset(seed=seed)
            return self._both(obs), infos

        def step(self, action_dict: dict) -> Any:
            moves = {a: x for a, x in action_dict.items() if a in self.env.actors}
            obs, rewards, terminateds, truncateds, infos = self.env.step(moves)
            return self._both(obs), rewards, terminateds, truncateds, infos

        def get_action_space(self, agent: Any) -> Any:
            return self.env.get_action_space(agent)

    monkeypatch.setitem(roundtrip.ROUND_TRIPS, "openspiel", lambda make, seed: WaiterChooses())
    problem = roundtrip.compare_round_trip("openspiel", lambda: marlhub.make("tic_tac_toe"))
    assert problem is not None and "acts in the round trip but not in the original" in problem


def test_a_round_trip_through_openspiel_counts_actions_from_zero() -> None:
    # OpenSpiel's actions are 0..n-1, so Discrete(3, start=1)'s 1..3 come back as 0..2.
    problem = roundtrip.compare_round_trip("openspiel", ActionsStartAtOne, seed=0)
    assert problem is None, problem
    assert check_targets(ActionsStartAtOne, ["openspiel"])[0].status == "pass"


def test_a_missing_library_is_skipped_naming_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray.rllib.utils.pre_checks.env", None)
    result = check_targets(RockPaperScissors, ["rllib"])[0]
    assert result.status == "skipped" and "marlhub[rllib]" in result.reason


def test_target_names_parse_and_unknown_ones_are_listed() -> None:
    assert parse_targets("all") == list(TARGET_NAMES)
    with pytest.raises(ConfigError, match=r"unknown target\(s\) \['dm_env'\]"):
        parse_targets("openspiel,dm_env")


def test_check_reports_conversions_and_fails_on_a_failed_one() -> None:
    report = check(LyingSpaces, episodes=1, interop=["pettingzoo.aec"])
    assert not report.ok and report.conversions[0].status == "fail"
    assert "conversions 1 fail" in report.summary_line()
    assert "target pettingzoo.aec: fail" in str(report)
    assert report.to_dict()["conversions"][0]["status"] == "fail"


def test_the_cli_prints_json_and_junit_per_target(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "tic_tac_toe", "--episodes", "2", "--targets",
                 "pettingzoo.aec,pettingzoo.parallel", "--json", str(tmp_path / "r.json"),
                 "--junit", str(tmp_path / "r.xml")])
    assert code == 0
    text = capsys.readouterr().out
    assert "target pettingzoo.aec: pass" in text and "target pettingzoo.parallel: refused" in text
    data = json.loads((tmp_path / "r.json").read_text())
    statuses = {c["target"]: c["status"] for c in data["targets"][0]["conversions"]}
    assert statuses == {"pettingzoo.aec": "pass", "pettingzoo.parallel": "refused"}
    xml = (tmp_path / "r.xml").read_text()
    assert 'name="target.pettingzoo.aec"' in xml and "<skipped" in xml
    assert main(["check", "tic_tac_toe", "--targets", "nope"]) == 2


def test_an_instance_target_is_converted_through_copies() -> None:
    env = RockPaperScissors()
    env.reset(seed=0)
    report = check(env, episodes=1, interop=["pettingzoo.aec"])
    assert report.conversions[0].status == "pass"
    assert np.isfinite(report.seconds)


def test_known_native_faults_are_reported_as_such_not_as_failures() -> None:
    report = check("gymnasium/Blackjack-v1", episodes=1, interop=["pettingzoo.aec"])
    conversion = report.conversions[0]
    assert conversion.status == "known-fault" and "Tuple observation spaces" in conversion.reason
    assert report.ok
    native = check("openspiel/python_hangman", episodes=1, interop=["openspiel"])
    assert native.conversions[0].status == "known-fault"
    assert "lacks _action_to_string" in native.conversions[0].reason


def test_pettingzoos_api_test_fails_natively_on_tuple_observations() -> None:
    # The fault reproduces without marlhub: a PettingZoo env of its own that observes a Tuple.
    import gymnasium
    from pettingzoo.test import api_test
    from pettingzoo.utils.env import AECEnv

    class TupleObserver(AECEnv):
        metadata = {"name": "tuple_observer", "is_parallelizable": False}

        def __init__(self) -> None:
            super().__init__()
            self.possible_agents = ["a"]
            self.spaces = (gymnasium.spaces.Tuple([gymnasium.spaces.Discrete(2)]),
                           gymnasium.spaces.Discrete(2))

        def observation_space(self, agent: Any) -> gymnasium.Space:
            return self.spaces[0]

        def action_space(self, agent: Any) -> gymnasium.Space:
            return self.spaces[1]

        def reset(self, seed: Any = None, options: Any = None) -> None:
            self.agents = ["a"]
            self.rewards = self._cumulative_rewards = {"a": 0}
            self.terminations, self.truncations, self.infos = {"a": False}, {"a": False}, {"a": {}}
            self.agent_selection = "a"

        def observe(self, agent: Any) -> Any:
            return (0,)

        def step(self, action: Any) -> None:
            if self.terminations["a"]:
                self._was_dead_step(action)
                return
            self.terminations = {"a": True}

    with warnings.catch_warnings(), \
            pytest.raises(AttributeError, match="'tuple' object has no attribute 'dtype'"):
        warnings.simplefilter("ignore")  # its advice before it fails
        api_test(TupleObserver(), num_cycles=2, verbose_progress=False)
