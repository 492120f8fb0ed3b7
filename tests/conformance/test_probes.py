"""The probes around the episodes: what each finds, and that its message says how to fix it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from marlhub.conformance import Finding, Report, check
from marlhub.conformance import rules as R
from marlhub.conformance.probes import why_not_refused
from tests.conformance import round3_breakers as C
from tests.conformance import rule_breakers as B


def only(report: Report, rule: str) -> list[Finding]:
    assert report.rules_broken() == [rule], str(report)
    return report.by_rule()[rule]


def test_step_after_the_end_must_refuse_an_empty_dict_too() -> None:
    before, after = only(check(B.StepsOnAfterTheEnd, episodes=2), R.EPISODE_STEP_AFTER_END)
    assert "before the first reset() returned normally" in before.message
    assert "with {} it returned normally instead of raising" in after.message
    assert "the last action dict" not in after.message.split("Check at the top")[0]


def test_a_crash_from_inside_is_no_refusal_and_is_located() -> None:
    _, after = only(check(B.CrashesAfterTheEnd, episodes=2), R.EPISODE_STEP_AFTER_END)
    assert "raised TypeError" in after.message and "rule_breakers.py:" in after.message
    assert "a crash inside the env rather than a refusal" in after.message
    assert why_not_refused(B.Duel(), {}) is None  # ResetNeededError: a clear refusal


def test_numpy_actions_are_named_with_their_form() -> None:
    [finding] = only(check(B.LogsActionsAsJson, episodes=2), R.TURN_ACTIONS_ACCEPTED)
    assert "np.int64(" in finding.message and "not JSON serializable" in finding.message
    assert (finding.episode, finding.step) == (0, 1)
    assert len(finding.reproducer.actions) == 1


def test_a_reset_mid_episode_says_how_to_reproduce_it() -> None:
    [finding] = only(check(B.KeepsTallyAcrossResets, episodes=2), R.RESET_MID_EPISODE)
    assert "reproduce: env.reset(seed=0), 3 of the episode's action dicts" in finding.message


def test_a_fresh_instance_plays_the_first_episode_again() -> None:
    [finding] = only(check(B.SaltedByInstanceCount, episodes=2), R.SEED_REPRODUCIBLE)
    assert finding.message.startswith("this instance and a fresh one, stepped in turn with the "
                                      "same seed (0)")
    assert "a fresh instance alone plays another episode too" in finding.message
    assert check(B.duel_instance, episodes=2).ok  # one given instance: nothing to rebuild


def test_resets_without_seed_and_with_options_are_probed_once_each() -> None:
    assert [f.message.split(" raised")[0] for f in only(check(B.NeedsASeed, episodes=2),
                                                        R.ENV_RAISED)] == [
        "reset()", "reset(options={})"]
    # A reset that fails for every seed is reported per episode, not probed again.
    assert len(only(check(B.ResetRaises, episodes=3), R.ENV_RAISED)) == 3


def test_a_changed_action_dict_is_reported_once_and_replays_use_what_was_sent() -> None:
    [finding] = only(check(B.PadsTheActionDict, episodes=3), R.TURN_ACTION_DICT_UNTOUCHED)
    assert finding.reproducer.actions == [{"a": finding.reproducer.actions[0]["a"]}]


def test_an_unseeded_reset_must_go_on_with_the_seeded_generator() -> None:
    assert check(B.NoisyDuel, episodes=2).ok
    [finding] = only(check(B.ReseedsFromTheOsOnUnseededReset, episodes=2), R.SEED_REPRODUCIBLE)
    assert finding.message.startswith("after reset(seed=0) and the same")
    assert "reset() without a seed gave different" in finding.message
    assert "not draw a new one from the OS" in finding.message


def test_two_instances_stepped_in_turn_must_each_replay_their_episode() -> None:
    # The global generators as a check of these envs leaves them are already seeded with 0,
    # so a reset that seeds them with 0 again would change nothing: draw first.
    np.random.random(), random.random()
    report = check(C.SeedsNumpysGlobalGenerator, episodes=2)
    assert report.rules_broken() == [R.SEED_GLOBAL_STATE, R.SEED_REPRODUCIBLE]
    [replayed] = report.by_rule()[R.SEED_REPRODUCIBLE]
    assert "stepped in turn" in replayed.message
    assert "each plays its seeded episode alone, so they share state" in replayed.message
    [touched] = report.by_rule()[R.SEED_GLOBAL_STATE]
    assert touched.message.startswith("reset() changed the state of numpy's global generator")
    assert touched.severity == "warning"
    random.random()
    python = check(C.SeedsPythonsRandom, episodes=2).by_rule()[R.SEED_GLOBAL_STATE]
    assert python[0].message.startswith("reset() changed the state of Python's random module")


def test_a_reset_after_a_death_finds_the_dead_kept() -> None:
    [finding] = only(check(C.ForgetsItsDeadInStep, episodes=2), R.RESET_MID_EPISODE)
    assert "after 3 of its 6 steps" in finding.message  # 'c' died at step 2
    assert "keys ['a', 'b', 'c'] vs ['a', 'b']" in finding.message


def test_stored_returns_that_change_later_name_the_call() -> None:
    [obs] = only(check(C.WritesObsInPlace, episodes=2), R.OBS_UNTOUCHED)
    assert obs.message.startswith("the observations returned by call 0 of episode 0")
    [infos] = only(check(C.EditsInfosLater, episodes=2), R.OBS_UNTOUCHED)
    assert infos.message.startswith("the infos returned by call 0 of episode 0")


def test_refusing_0d_arrays_is_a_warning_that_names_who_sends_them() -> None:
    report = check(C.RefusesZeroDimArrays, episodes=2)
    [finding] = only(report, R.TURN_ACTIONS_ACCEPTED)
    assert report.ok and finding.severity == "warning"
    assert "Only the 0-d arrays are refused" in finding.message and "TorchRL" in finding.message
    assert not check(C.RefusesZeroDimArrays, episodes=2, strict=True).ok


def test_a_dropped_action_0_is_named() -> None:
    findings = only(check(C.DropsActionZero, episodes=2), R.ACTION_EFFECTIVE)
    assert [f.agent for f in findings] == ["a", "b"]  # both agents drop it
    assert "'a''s action 0 played out exactly as the last action that took effect" in (
        findings[0].message)
    # An action that shows only later (a round paid when complete) is no finding.
    assert check(C.AppliesTheLastTurnsAction, episodes=2, strict=True).ok


@pytest.mark.parametrize(("breaker", "words"), [
    (C.HoldsALock, "copy.deepcopy(env) after reset(seed=0) and 3 steps of episode 0 raised "
                   "TypeError"),
    (C.CloseRaisesTheSecondTime, "close() a second time after reset(seed=0) raised RuntimeError"),
    (C.StepsOnAfterClose, "step() after close() returned normally"),
    (C.RendersTextAsRgbArray, "render() after reset(seed=0) got str where rgb_array promises"),
    (C.TimeLimitAsTermination, "the episode ended at step 6, the limit the env declares "
                               "(max_steps = 6)"),
    (C.InfiniteObs, "obs['a'] holds inf at [0]"),
])
def test_each_round_3_finding_says_what_happened(breaker: type, words: str) -> None:
    messages = [f.message for f in check(breaker, episodes=2).findings]
    assert any(words in m for m in messages), messages
