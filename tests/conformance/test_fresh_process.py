"""Episode 0 in a fresh process: another hash seed, a bounded time, and skipped when it cannot run."""

from __future__ import annotations

import time
from typing import Any

import pytest

from marlhub.conformance import check
from marlhub.conformance import fresh_process as F
from marlhub.conformance import rules as R
from marlhub.conformance.options import CheckOptions
from marlhub.conformance.runner import run_targets
from marlhub.registry import Registry
from tests.conformance import rule_breakers as B

MODULE = B.__name__


def test_the_child_hashes_with_another_seed() -> None:
    assert F.other_hash_seed("41") == "42"
    assert F.other_hash_seed("4294967295") == "0"
    assert F.other_hash_seed(None) == F.other_hash_seed("random") == "1"


def test_a_set_ordered_episode_is_found_only_in_another_process() -> None:
    assert check(B.SetOrderMatters, episodes=3).ok  # the class itself: no fresh process
    report = check(f"{MODULE}:SetOrderMatters", episodes=3)
    [finding] = report.findings
    assert finding.rule == R.SEED_REPRODUCIBLE and finding.episode == 0
    assert "in a fresh process with PYTHONHASHSEED=" in finding.message
    assert "order of a set" in finding.message


def test_a_target_the_child_cannot_build_is_skipped_without_a_finding() -> None:
    registry = Registry()
    registry.register("only_here", B.SetOrderMatters)
    assert check("only_here", episodes=2, registry=registry).ok  # a custom registry: no child
    child = F.FreshProcess("no_such_module_xyz:Env", seed=0, max_steps=10, reset_kwargs={})
    assert child.result()["status"] == "load_error"
    child.stop()


def test_the_child_builds_the_target_with_the_checks_config() -> None:
    """Else a configured env would differ in the child from the one checked here."""
    config = {"num_cars": 5, "road_length": 4}
    here = F.play_first_episode("traffic", 3, 40, {"options": None}, config)
    child = F.FreshProcess("traffic", seed=3, max_steps=40, reset_kwargs={"options": None},
                           config=config)
    try:
        assert child.result() == here
    finally:
        child.stop()
    assert F.play_first_episode("traffic", 3, 40, {"options": None})["digests"] != here["digests"]
    with pytest.raises(ValueError, match="does not go into JSON"):
        F.FreshProcess("traffic", seed=3, max_steps=40, reset_kwargs={}, config={"x": object()})


def test_a_hanging_child_ends_itself_within_its_seconds() -> None:
    child = F.FreshProcess(f"{MODULE}:HangsAtStep2", seed=0, max_steps=10,
                           reset_kwargs={"options": None}, seconds=1.0)
    start = time.monotonic()
    assert child.result() is None
    assert time.monotonic() - start < 10
    assert child.process.poll() is not None
    child.stop()


def test_without_replays_no_child_is_started(monkeypatch: pytest.MonkeyPatch) -> None:
    started = []
    monkeypatch.setattr(F.FreshProcess, "__init__", lambda *a, **k: started.append(a))
    assert check(f"{MODULE}:Duel", episodes=2, replay=False).ok
    assert started == []


def test_the_runner_starts_the_next_targets_child_ahead_and_leaves_none_behind() -> None:
    outcomes = run_targets([f"{MODULE}:Duel", f"{MODULE}:SetOrderMatters", "tic_tac_toe"],
                           CheckOptions(episodes=2))
    assert [o.report.rules_broken() for o in outcomes if o.report] == [
        [], [R.SEED_REPRODUCIBLE], []]
    assert F._PREFETCHED == {}


def test_the_child_of_a_target_that_fails_to_load_is_reaped_when_its_turn_ends() -> None:
    children: list[F.FreshProcess] = []
    seen_while_next_ran: list[list[str]] = []

    def watch(outcome: Any, done: int, total: int) -> None:
        children.extend(c for c in F._PREFETCHED.values() if c not in children)
        seen_while_next_ran.append(sorted(key[0] for key in F._PREFETCHED))

    outcomes = run_targets(["tic_tac_toe", "openspiel/add_noise", "traffic"],
                           CheckOptions(episodes=1, max_steps=20), on_done=watch)
    assert outcomes[1].load_error and outcomes[2].report and outcomes[2].report.ok
    # After add_noise (which never took its child) only traffic's child waits.
    assert seen_while_next_ran[1] == ["traffic"]
    assert all(child.process.returncode is not None for child in children)  # all reaped
