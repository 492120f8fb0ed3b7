"""action.effective: a falsy action that is dropped is found for every agent that drops it,
judged on the last action that took effect, and a valid env is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from marlhub.conformance import check
from marlhub.conformance import rules as R
from marlhub.conformance.action_effect import MAX_STEPS, ActionEffectProbe
from marlhub.conformance.driver import Driver
from marlhub.conformance.options import CheckOptions
from marlhub.conformance.trajectories import Recording
from tests.conformance import round3_breakers as C
from tests.conformance import tugs as T

ALL = ["tug_0", "tug_1", "tug_2"]

# (breaker, the agents that drop their falsy action)
BREAKERS: list[tuple[type, list[str]]] = [
    (T.TugsKeepTheirLastCommand, ALL),
    (T.SecondTugKeepsItsLastCommand, ["tug_1"]),
    (T.TugsDropTheirHold, ALL),
    (T.ThrottlesDropZero, ["tug_2"]),
    (T.OneDimensionalCommandsDropZero, ALL),
    (T.TugsTakeTurnsAndDropZero, ALL),
    (T.MaskedTugsDropZero, ALL),
    (C.DropsActionZero, ["a", "b"]),
]

VALID = [T.Tugs, T.TugsAtAWall, T.TugsInANarrowDock, T.TugsInAMarina, T.TugsTakeTurns,
         T.Throttles, T.ThrottlesWithADeadZone, C.AppliesTheLastTurnsAction]


def flagged(target: Any, **options: Any) -> list[str]:
    report = check(target, episodes=1, **options)
    assert set(report.rules_broken()) <= {R.ACTION_EFFECTIVE}, str(report)
    return sorted(str(f.agent) for f in report.findings if f.rule == R.ACTION_EFFECTIVE)


@pytest.mark.parametrize(("breaker", "agents"), BREAKERS, ids=lambda b: getattr(b, "__name__", ""))
@pytest.mark.parametrize("seed", range(6))
def test_every_agent_that_drops_its_falsy_action_is_named(breaker: type, agents: list[str],
                                                          seed: int) -> None:
    assert flagged(breaker, seed=seed) == agents


@pytest.mark.parametrize("breaker", [b for b, _ in BREAKERS], ids=lambda b: b.__name__)
def test_the_finding_is_a_warning_that_fails_strict_only(breaker: type) -> None:
    report = check(breaker, episodes=2)
    assert report.ok and report.rules_broken() == [R.ACTION_EFFECTIVE], str(report)
    assert {f.severity for f in report.findings} == {"warning"}
    assert not check(breaker, episodes=2, strict=True).ok


@pytest.mark.parametrize("env_cls", VALID, ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(6))
def test_a_valid_env_has_no_finding(env_cls: type, seed: int) -> None:
    report = check(env_cls, episodes=1, seed=seed, strict=True)
    assert report.findings == [], str(report)


def test_a_dropped_0_is_judged_on_the_last_action_that_took_effect() -> None:
    # tug_1 sends 2 once, then 0 at each turn: from step 2 on, the previous action it sent
    # is 0 while the env still plays 2. tug_0, the first agent found, is right.
    env = T.SecondTugKeepsItsLastCommand()
    driver = Driver(env, "tugs", CheckOptions())
    sent = [{"tug_0": 1, "tug_1": 2, "tug_2": 1}] + [{"tug_0": 1, "tug_1": 0, "tug_2": 1}] * 6
    ActionEffectProbe(driver).run(Recording(0, 0, sent))
    [finding] = driver.report.findings
    assert (finding.rule, finding.agent, finding.severity) == (R.ACTION_EFFECTIVE, "tug_1",
                                                                "warning")
    assert ("(4 turns): at step 2 as 2, sent at step 0, and as 1 once 1 was sent at step 1 "
            "instead") in finding.message


def test_the_finding_says_what_played_and_how_to_fix_it() -> None:
    [finding] = check(T.SecondTugKeepsItsLastCommand, episodes=1).findings
    assert finding.message.startswith(
        "'tug_1''s action 0 played out exactly as the last action that took effect, wherever "
        "it was tried in episode 0 (4 turns): at step 2 as 1, sent at step 0, and as 2 once 2 "
        "was sent at step 1 instead; other actions played out otherwise.")
    assert "`if action_dict.get(agent):` takes 0 for no action" in finding.message
    assert finding.reproducer.actions[-1]["tug_1"] == 0


def test_a_falsy_array_is_named_as_an_array() -> None:
    [finding] = check(T.ThrottlesDropZero, episodes=1).findings
    assert finding.message.startswith("'tug_2''s action [0.] played out exactly as")
    assert "The env drops [0.] and keeps the last command" in finding.message


class ManyTugs(T.TugsKeepTheirLastCommand):
    """Forty tugs, every one dropping 0."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.possible_agents = [f"tug_{i}" for i in range(40)]
        self.DROPPING = tuple(self.possible_agents)
        box, commands = self.observation_spaces["tug_0"], self.action_spaces["tug_0"]
        self.observation_spaces = {a: box for a in self.possible_agents}
        self.action_spaces = {a: commands for a in self.possible_agents}


def test_the_replays_are_bounded_however_many_agents_there_are() -> None:
    env = ManyTugs()
    driver = Driver(env, "many", CheckOptions())
    probe = ActionEffectProbe(driver)
    sent = [{a: 2 for a in env.possible_agents}] + [{a: 0 for a in env.possible_agents}] * 6
    probe.run(Recording(0, 0, sent))
    named = [f.agent for f in driver.report.findings]
    assert probe.steps <= MAX_STEPS + 100  # the last turn may finish past the budget
    assert 5 <= len(named) < 40 and named == env.possible_agents[:len(named)]
