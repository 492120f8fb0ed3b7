"""Every rule of the contract is reported on an env that breaks it, and only that rule."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from marlhub.conformance import RULES, check
from marlhub.conformance import rules as R
from tests.conformance import round3_breakers as C
from tests.conformance import round4_breakers as D
from tests.conformance import rule_breakers as B

MODULE = B.__name__

# (target, the one rule it breaks, check() options, the severity when not the rule's own).
# A target is an env class, or a `module:attr` string where a fresh process must build it.
BREAKERS: list[tuple[Any, str, dict[str, Any], Optional[str]]] = [
    (B.ResetReturnsObsOnly, R.RESET_RETURNS_DICTS, {}, None),
    (B.ResetWithoutOptions, R.RESET_RETURNS_DICTS, {}, None),
    (B.KeepsTallyAcrossResets, R.RESET_MID_EPISODE, {}, None),
    (B.StepReturnsGymFourTuple, R.STEP_RETURNS_TUPLE, {}, None),
    (B.StepReturnsListObs, R.STEP_RETURNS_TUPLE, {}, None),
    (B.RewardsUnknownAgent, R.IDS_KNOWN, {}, None),
    (B.AgentsMissActor, R.IDS_AGENTS_CONSISTENT, {}, None),
    (B.KeepsAgentsAtTheEnd, R.IDS_AGENTS_CONSISTENT, {}, "warning"),
    (B.NewSpaceEachCall, R.SPACE_DEFINED, {}, None),
    (B.RebuildsSpacesOnReset, R.SPACE_DEFINED, {}, None),
    (B.SwapsActionSpaceMidEpisode, R.SPACE_DEFINED, {}, None),
    (B.Float64Obs, R.OBS_IN_SPACE, {}, None),
    (B.MaskAsListInObs, R.OBS_IN_SPACE, {}, None),
    (B.MaskOfWrongDtypeInObs, R.OBS_IN_SPACE, {}, None),
    (B.RaisesOnAction2, R.TURN_ACTIONS_ACCEPTED, {}, None),
    (B.MaskAllowsNothing, R.TURN_ACTIONS_ACCEPTED, {}, None),
    (B.LogsActionsAsJson, R.TURN_ACTIONS_ACCEPTED, {}, None),
    (B.NobodyActsAtStep3, R.TURN_ACTORS_EXIST, {}, None),
    (B.MaskAsListInInfos, R.TURN_MASK_VALID, {}, None),
    (B.ProbabilityMaskInInfos, R.TURN_MASK_VALID, {}, None),
    (B.PadsTheActionDict, R.TURN_ACTION_DICT_UNTOUCHED, {}, None),
    (B.NoAllInTruncateds, R.DONE_ALL_PRESENT, {}, None),
    (B.IntDoneFlags, R.DONE_FLAGS_BOOL, {}, None),
    (B.AllDoneButNoAll, R.DONE_ALL_CONSISTENT, {}, None),
    (B.RewardsDeadAgent, R.DONE_FINAL, {}, None),
    (B.TruncatesWithoutObs, R.DONE_TRUNCATION_HAS_OBS, {}, None),
    (B.TruncatesWaitingAgentWithoutObs, R.DONE_TRUNCATION_HAS_OBS, {}, None),
    (B.WinnerWithoutFinalObs, R.DONE_FINAL_OBS, {}, None),
    (B.PaysAWatcherWithoutObs, R.DONE_FINAL_OBS, {}, None),
    (B.ActorWithoutReward, R.REWARD_PRESENT, {}, None),
    (B.BoolReward, R.REWARD_SCALAR, {}, None),
    (B.NanReward, R.REWARD_SCALAR, {}, None),
    (B.RewardsAbsentAgent, R.REWARD_ANY_AGENT, {}, None),
    (B.InfoForIdleAgent, R.INFO_KEYS, {}, None),
    (B.InfoNotDict, R.INFO_KEYS, {}, None),
    (B.GlobalRandomRewards, R.SEED_REPRODUCIBLE, {}, None),
    (B.SaltedByInstanceCount, R.SEED_REPRODUCIBLE, {}, None),
    (f"{MODULE}:SetOrderMatters", R.SEED_REPRODUCIBLE, {}, None),
    (B.NeverEnds, R.EPISODE_ENDS, {"max_steps": 30}, None),
    (B.StepAfterEndWorks, R.EPISODE_STEP_AFTER_END, {}, None),
    (B.StepsOnAfterTheEnd, R.EPISODE_STEP_AFTER_END, {}, None),
    (B.CrashesAfterTheEnd, R.EPISODE_STEP_AFTER_END, {}, None),
    (B.HoardsFrames, R.RESOURCE_MEMORY_BOUNDED, {}, None),
    (B.ResetRaises, R.ENV_RAISED, {}, None),
    (B.NeedsASeed, R.ENV_RAISED, {}, None),
    (B.ReadsOptionKeys, R.ENV_RAISED, {}, None),
    (B.HangsAtStep2, R.ENV_TIMEOUT, {"timeout": 0.5}, None),
    # Round 3: beside another instance, stored, copied, closed, rendered.
    (C.ReseedsNumpysGlobalGenerator, R.SEED_GLOBAL_STATE, {}, None),
    (C.SeedsNumpysGlobalGenerator, R.SEED_REPRODUCIBLE, {}, None),
    (C.SeedsPythonsRandom, R.SEED_REPRODUCIBLE, {}, None),
    (C.ForgetsItsDeadInStep, R.RESET_MID_EPISODE, {}, None),
    (C.InfiniteObs, R.OBS_FINITE, {}, None),
    (C.WritesObsInPlace, R.OBS_UNTOUCHED, {}, None),
    (C.EditsInfosLater, R.OBS_UNTOUCHED, {}, None),
    (C.TimeLimitAsTermination, R.DONE_TIME_LIMIT, {}, None),
    (C.DropsActionZero, R.ACTION_EFFECTIVE, {}, None),
    (C.HoldsALock, R.ENV_COPYABLE, {}, None),
    (C.CloseRaisesTheSecondTime, R.ENV_CLOSE, {}, None),
    (C.StepsOnAfterClose, R.ENV_CLOSE, {}, None),
    (C.RendersTextAsRgbArray, R.RENDER_MODE, {}, None),
    (C.RefusesZeroDimArrays, R.TURN_ACTIONS_ACCEPTED, {}, "warning"),
    (D.TerminatesEachAgentAtTheLimit, R.DONE_TIME_LIMIT, {}, None),
    (D.CountsRoundsToItsLimit, R.DONE_TIME_LIMIT, {}, None),
    (D.StartsFromOneSeedUnseeded, R.SEED_REPRODUCIBLE, {}, "warning"),
    (D.KeepsItsMapOnAnEarlyReset, R.RESET_MID_EPISODE, {}, None),
    (D.StepsOnAfterTruncation, R.EPISODE_STEP_AFTER_END, {}, None),
    (D.EndsWhenAnyoneDies, R.EPISODE_STEP_AFTER_END, {}, None),
    (D.SharesStateWithItsCopy, R.ENV_COPYABLE, {}, None),
    (D.CloseBeforeResetRaises, R.ENV_CLOSE, {}, None),
    (D.DropsAllZeroVectors, R.ACTION_EFFECTIVE, {}, None),
]

#: Rules a breaker breaks besides its own, because its one bug breaks them too.
ALSO = {
    # Drawing from numpy's global generator is itself a seed.global_state warning.
    "GlobalRandomRewards": [R.SEED_GLOBAL_STATE],
    "SeedsNumpysGlobalGenerator": [R.SEED_GLOBAL_STATE],
    "SeedsPythonsRandom": [R.SEED_GLOBAL_STATE],
    # Duel gives its final obs to the agents it lists, so the unlisted 'b' gets none.
    "AgentsMissActor": [R.DONE_FINAL_OBS],
}


def _name(target: Any) -> str:
    return target.rpartition(":")[2] if isinstance(target, str) else target.__name__


def test_the_well_behaved_env_keeps_every_rule() -> None:
    report = check(B.Duel, episodes=5, strict=True)
    assert report.ok, str(report)
    assert report.findings == []
    assert report.steps == 5 * B.Duel.LENGTH


def test_every_contract_rule_has_a_breaker() -> None:
    covered = {rule for _, rule, _, _ in BREAKERS}
    lockstep = {R.EQUIV_TRAJECTORY, R.EQUIV_RETURNS}  # tested with the adapters
    # Broken vector envs: tests/conformance/test_vector.py and test_batched_vector.py.
    vector = {R.VECTOR_EQUIV, R.VECTOR_RESET_INFOS}
    assert set(RULES) - lockstep - vector <= covered


@pytest.mark.parametrize(("target", "rule", "options", "severity"), BREAKERS,
                         ids=[f"{_name(t)}-{r}" for t, r, _, _ in BREAKERS])
def test_breaker_is_reported_under_its_rule_only(target: Any, rule: str, options: dict,
                                                 severity: Optional[str]) -> None:
    report = check(target, episodes=3, **options)
    also = ALSO.get(_name(target), [])
    assert sorted(report.rules_broken()) == sorted([rule, *also]), str(report)
    expected_severity = severity or RULES[rule].severity
    assert {f.severity for f in report.findings if f.rule == rule} == {expected_severity}
    assert report.ok == all(s == "warning" for s in [expected_severity,
                                                      *(RULES[r].severity for r in also)])
    for finding in report.findings:
        assert finding.message.endswith(".") or finding.message.endswith(")"), finding.message


def test_strict_mode_fails_on_warnings_and_makes_step_after_end_an_error() -> None:
    report = check(B.StepAfterEndWorks, episodes=2, strict=True)
    assert not report.ok
    # Probed twice: on a fresh instance before any reset, and after the first episode ended.
    assert [(f.severity, f.episode) for f in report.findings] == [("error", None), ("error", 0)]
    assert "before the first reset()" in report.findings[0].message
    assert "after the episode ended" in report.findings[1].message
    assert not check(B.NeverEnds, episodes=1, max_steps=10, strict=True).ok


def test_findings_point_at_episode_step_and_agent() -> None:
    report = check(B.Float64Obs, episodes=2)
    first = report.findings[0]
    assert (first.episode, first.step, first.agent) == (0, 0, "a")
    assert "float64" in first.message and "float32" in first.message


@pytest.mark.parametrize(("env_cls", "rule", "check_replay"), [
    (B.Float64Obs, R.OBS_IN_SPACE, lambda result, f: result[0][f.agent].dtype.name == "float64"),
    (B.RewardsDeadAgent, R.DONE_FINAL, lambda result, f: "b" in result[1]),
    (B.BoolReward, R.REWARD_SCALAR, lambda result, f: isinstance(result[1][f.agent], bool)),
    (B.TruncatesWithoutObs, R.DONE_TRUNCATION_HAS_OBS,
     lambda result, f: result[3]["__all__"] and f.agent not in result[0]),
])
def test_reproducer_replays_the_failure_on_a_fresh_env(env_cls: type, rule: str, check_replay) -> None:
    report = check(env_cls, episodes=2, seed=7)
    finding = report.by_rule()[rule][0]
    assert finding.reproducer is not None
    assert finding.reproducer.seed == 7 + finding.episode
    assert len(finding.reproducer.actions) == finding.step
    result = finding.reproducer.replay(env_cls())
    assert check_replay(result, finding)


def test_the_suite_goes_on_after_findings_and_counts_every_episode() -> None:
    report = check(B.ResetRaises, episodes=4)
    assert report.episodes == 4
    assert len(report.by_rule()[R.ENV_RAISED]) == 4


def test_findings_per_rule_are_capped_and_the_rest_counted() -> None:
    report = check(B.Float64Obs, episodes=20)
    found = report.by_rule()[R.OBS_IN_SPACE]
    assert len(found) == 26  # 25 kept + one line counting the rest
    assert "more findings under obs.in_space" in found[-1].message


def test_the_env_under_test_is_not_mutated_beyond_reset_and_step() -> None:
    env = B.Duel()
    space_state = env.action_spaces["a"].np_random.bit_generator.state
    check(env, episodes=3)
    assert env.action_spaces["a"].np_random.bit_generator.state == space_state
    assert env.possible_agents == ["a", "b"]


def test_docs_envs_verbatim_break_exactly_what_marlhub_fixes() -> None:
    """The RLlib docs' examples: truncateds without __all__, global RNG for the start player."""
    from tests.rllib_docs_envs import DocsRockPaperScissors, DocsTicTacToe

    rps = check(DocsRockPaperScissors, episodes=3)
    assert set(rps.rules_broken()) == {
        R.DONE_ALL_PRESENT, R.IDS_AGENTS_CONSISTENT, R.EPISODE_STEP_AFTER_END,
        R.TURN_ACTIONS_ACCEPTED,
    }
    # WIN_MATRIX[move1, move2] takes np.int64 (it hashes as an int) but not a 0-d array,
    # which Discrete.contains accepts (and torch's .numpy() gives); marlhub's env takes both.
    [forms] = rps.by_rule()[R.TURN_ACTIONS_ACCEPTED]
    assert "unhashable type: 'numpy.ndarray'" in forms.message and "0-d" in forms.message
    assert check("rock_paper_scissors", episodes=3).ok
    assert all(f.severity == "warning" for f in rps.by_rule()[R.IDS_AGENTS_CONSISTENT])
    assert rps.by_rule()[R.EPISODE_STEP_AFTER_END][0].severity == "warning"
    ttt = check(DocsTicTacToe, episodes=10)
    assert R.SEED_REPRODUCIBLE in ttt.rules_broken()
    assert R.DONE_ALL_PRESENT in ttt.rules_broken()
