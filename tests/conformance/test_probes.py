"""The probes around the episodes: what each finds, and that its message says how to fix it."""

from __future__ import annotations

from marlhub.conformance import Finding, Report, check
from marlhub.conformance import rules as R
from marlhub.conformance.probes import why_not_refused
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
    assert finding.message.startswith("a fresh instance, reset with the same seed (0)")
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
