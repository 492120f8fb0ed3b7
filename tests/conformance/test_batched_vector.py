"""check --vector of a batched simulator: a batch of one is the hub env; the faces agree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from marlhub.conformance.vector import check_vector
from marlhub.registry import default_registry

pytest.importorskip("vmas")

CONFIG = {"max_steps": 4, "continuous_actions": False}


class _Family:
    """``broken/balance``: VMAS's balance, whose batched simulator is ``source`` (a VmasBatch)."""

    name = "broken"
    description = "VMAS's balance with a broken batch"

    def __init__(self, source: type, known: bool = True) -> None:
        self.source = source
        self.known = known

    def ids(self) -> Iterator[tuple[str, str]]:
        yield "broken/balance", self.description

    def make(self, rest: str, config: Any) -> Any:
        from marlhub.adapters.vmas.family import VmasFamily

        return VmasFamily().make(rest, config)

    def known_faults(self, rest: str) -> dict[str, str]:
        from marlhub.adapters.vmas.family import VmasFamily

        return VmasFamily().known_faults(rest) if self.known else {}

    def batched_lockstep(self, rest: str, config: Any, envs: Any, **kwargs: Any) -> Any:
        from marlhub.adapters.vmas.family import VmasFamily

        return VmasFamily().batched_lockstep(rest, config, envs, **kwargs)

    def make_batched(self, rest: str, config: Any, num_envs: int) -> Any:
        import vmas

        return self.source(vmas.make_env(rest, num_envs=num_envs, **config))


def _check(source: type, known: bool = True) -> Any:
    registry = default_registry()
    registry.register_family(_Family(source, known))
    try:
        return check_vector("broken/balance", 2, episodes=2, vectorization_modes=["batched"],
                            config=CONFIG)
    finally:
        registry.unregister_family("broken")


def _vmas_batch() -> type:
    from marlhub.adapters.vmas.batched import VmasBatch

    return VmasBatch


def test_the_real_batch_passes() -> None:
    report = _check(_vmas_batch())
    assert report.ok, report.findings
    assert report.target == "broken/balance --vector 2" and report.steps > 0


def test_reset_infos_of_the_last_step_are_found_where_not_known() -> None:
    report = _check(_vmas_batch(), known=False)  # VMAS's stale reset infos, not marked known
    assert not report.ok
    assert report.rules_broken() == ["vector.reset_infos"], report.findings
    assert "batched/next_step" in report.findings[0].message


def test_rewards_paid_twice_are_found() -> None:
    class PaysTwice(_vmas_batch()):  # type: ignore[misc]
        def step(self, actions: Any) -> Any:
            batch = super().step(actions)
            batch.rewards = {k: 2 * v for k, v in batch.rewards.items()}
            return batch

    report = _check(PaysTwice)
    assert not report.ok
    assert any(f.rule == "vector.equiv" and "rewards at step 1" in f.message
               and "batched/next_step" in f.message for f in report.findings), report.findings


def test_a_partial_reset_that_resets_the_wrong_copy_is_found() -> None:
    class ResetsCopyZero(_vmas_batch()):  # type: ignore[misc]
        def reset_rows(self, rows: Any) -> Any:
            return super().reset_rows([0] * len(rows))

    report = _check(ResetsCopyZero)
    assert not report.ok
    assert [f.rule for f in report.findings if f.severity == "error"] == \
        ["equiv.trajectory"], report.findings
    assert "native VMAS batch of 2 copies" in report.findings[-1].message


def test_recv_send_that_hands_a_copy_another_copys_results_is_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from marlhub.vector.sources.batched_cycle import BatchedCycle

    arrived = BatchedCycle.__init__

    def swapping(self: Any, env: Any) -> None:  # copies 0 and 1 trade their results
        arrived(self, env)
        book_arrived = self.book.arrived

        def swapped(rows: Any, results: Any, ended: Any = None) -> None:
            if list(rows) == [0, 1]:
                results = [results[1], results[0]]
            book_arrived(rows, results, ended)

        self.book.arrived = swapped

    monkeypatch.setattr(BatchedCycle, "__init__", swapping)
    report = _check(_vmas_batch())
    assert not report.ok
    assert {f.rule for f in report.findings if f.severity == "error"} == {"vector.equiv"}
    assert all("recv/send batch_size=1" in f.message for f in report.findings
               if f.severity == "error"), report.findings
