"""Check many targets: in this process, or in worker processes that a hang or crash cannot take down.

With ``jobs=1`` targets run one after another in this process (a hang in
Python code is ended by the per-target timeout). With ``jobs >= 2`` each
target runs in one of ``jobs`` worker processes; a worker whose target runs
past its timeout, or that dies (a segfault in native code, say), is replaced,
and the target gets an ``env.timeout`` or ``env.raised`` finding.

Example:
    >>> outcomes = run_targets(["rock_paper_scissors", "no_such_env"], CheckOptions(episodes=2))
    >>> [(o.target, o.report is not None, o.load_error is not None) for o in outcomes]
    [('rock_paper_scissors', True, False), ('no_such_env', False, True)]
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Optional

from marlhub.conformance.fresh_process import (
    FRESH_PROCESS_SECONDS,
    discard_prefetched,
    prefetch,
)
from marlhub.conformance.options import CheckOptions
from marlhub.conformance.report import Finding, Report
from marlhub.conformance.suite import check
from marlhub.contract import rules

__all__ = ["CheckOptions", "CheckSettings", "Outcome", "run_targets"]

#: Extra seconds a worker gets beyond the target's own timeout before it is killed
#: (the in-worker timer normally ends the target first and reports it properly).
KILL_GRACE_SECONDS = 5.0


#: The name of :class:`CheckOptions` in 0.1.0, where the two were separate classes.
CheckSettings = CheckOptions


@dataclass
class Outcome:
    """What checking one target gave: a report, or why the target could not be loaded."""

    target: str
    report: Optional[Report] = None
    load_error: Optional[str] = None


def _check_one(target: str, settings: CheckOptions,
               on_episode: Optional[Callable[[int, int], None]] = None) -> Outcome:
    try:
        return Outcome(target, report=check(target, **asdict(settings), on_episode=on_episode))
    except Exception as exc:
        # check() turns every fault of a built env into findings; what escapes it is a
        # load error (bad id, bad module, a creator or factory raising).
        return Outcome(target, load_error=f"{type(exc).__name__}: {exc}")


def run_targets(
    targets: Sequence[str],
    settings: CheckOptions,
    *,
    jobs: int = 1,
    on_done: Optional[Callable[[Outcome, int, int], None]] = None,
    on_episode: Optional[Callable[[str, int, int], None]] = None,
) -> list[Outcome]:
    """Check every target and return the outcomes in the order of ``targets``.

    Args:
        targets: target strings (globs already expanded).
        settings: the check options for every target.
        jobs: worker processes; 1 runs in this process. With 2 or more every target
            runs in a worker, a single one included, so a crash or hang in native code
            becomes a finding of that target and the others go on.
        on_done: called as ``on_done(outcome, finished_count, total)`` after each target.
        on_episode: called as ``on_episode(target, episodes_done, episodes)`` after each
            episode of a target checked in this process (``jobs=1``).
    """
    if jobs <= 1 or not targets:
        return _run_here(list(targets), settings, on_done, on_episode)
    return _WorkerPool(settings, min(jobs, len(targets))).run(list(targets), on_done)


def _run_here(targets: list[str], settings: CheckOptions,
              on_done: Optional[Callable[[Outcome, int, int], None]],
              on_episode: Optional[Callable[[str, int, int], None]] = None) -> list[Outcome]:
    """Check the targets one after another, each one's fresh process started a target ahead."""
    outcomes = []
    try:
        for i, target in enumerate(targets):
            if settings.replay and i + 1 < len(targets):
                prefetch(targets[i + 1], seed=settings.seed, max_steps=settings.max_steps,
                         seconds=min(FRESH_PROCESS_SECONDS, settings.timeout or FRESH_PROCESS_SECONDS),
                         config=settings.config)
            progress = (None if on_episode is None
                        else lambda done, total, t=target: on_episode(t, done, total))
            outcomes.append(_check_one(target, settings, progress))
            discard_prefetched(target)  # its child, if the check did not take it
            if on_done:
                on_done(outcomes[-1], i + 1, len(targets))
    finally:
        discard_prefetched()
    return outcomes


def _worker_main(conn: Connection, settings: CheckOptions, episodes_done: Any) -> None:
    """Loop of a worker process: receive a target, send back its outcome, until told to stop.

    ``episodes_done`` (a shared int) counts the current target's finished episodes, so
    the parent can say where a worker that dies was.
    """

    def on_episode(done: int, total: int) -> None:
        episodes_done.value = done

    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        index, target = job
        episodes_done.value = 0
        conn.send((index, _check_one(target, settings, on_episode)))


@dataclass
class _Worker:
    process: Any
    conn: Connection
    episodes_done: Any = None
    job: Optional[tuple[int, str]] = None
    deadline: float = float("inf")


class _WorkerPool:
    def __init__(self, settings: CheckOptions, size: int) -> None:
        self.settings = settings
        self.size = size
        self.context = multiprocessing.get_context("spawn")

    def _start(self) -> _Worker:
        parent, child = self.context.Pipe()
        episodes_done = self.context.Value("i", 0, lock=False)
        process = self.context.Process(target=_worker_main,
                                       args=(child, self.settings, episodes_done), daemon=True)
        process.start()
        child.close()
        return _Worker(process, parent, episodes_done)

    def run(self, targets: list[str],
            on_done: Optional[Callable[[Outcome, int, int], None]]) -> list[Outcome]:
        results: dict[int, Outcome] = {}
        queue = list(enumerate(targets))
        workers = [self._start() for _ in range(self.size)]
        limit = self.settings.timeout

        def finish(index: int, outcome: Outcome) -> None:
            results[index] = outcome
            if on_done:
                on_done(outcome, len(results), len(targets))

        try:
            while len(results) < len(targets):
                for w in workers:
                    if w.job is None and queue:
                        w.job = queue.pop(0)
                        w.deadline = (time.monotonic() + limit + KILL_GRACE_SECONDS
                                      if limit else float("inf"))
                        w.conn.send(w.job)
                busy = [w for w in workers if w.job is not None]
                nearest = min(w.deadline for w in busy)
                wait_for = None if nearest == float("inf") else max(0.0, nearest - time.monotonic())
                ready = wait([w.conn for w in busy], timeout=wait_for)
                for i, w in enumerate(workers):
                    if w.job is None:
                        continue
                    if w.conn in ready:
                        try:
                            index, outcome = w.conn.recv()
                        except (EOFError, OSError):
                            finish(w.job[0], self._died(w))
                            workers[i] = self._replace(w)
                            continue
                        finish(index, outcome)
                        w.job, w.deadline = None, float("inf")
                    elif time.monotonic() >= w.deadline:
                        finish(w.job[0], self._timed_out(w))
                        workers[i] = self._replace(w)
        finally:
            for w in workers:
                try:
                    w.conn.send(None)
                except (OSError, EOFError):
                    pass
            for w in workers:
                w.process.join(timeout=2)
                if w.process.is_alive():
                    w.process.kill()
                    w.process.join()
        return [results[i] for i in range(len(targets))]

    def _replace(self, w: _Worker) -> _Worker:
        if w.process.is_alive():
            w.process.kill()
        w.process.join()
        w.conn.close()
        return self._start()

    def _died(self, w: _Worker) -> Outcome:
        w.process.join(timeout=2)
        code = w.process.exitcode
        why = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        target = w.job[1] if w.job else "?"
        episode = w.episodes_done.value
        report = Report(target, strict=self.settings.strict, episodes=episode, findings=[Finding(
            rules.ENV_RAISED, "error",
            f"the worker process checking {target!r} died ({why}) in episode {episode} (after "
            f"{episode} finished episodes); the env crashed the interpreter: a segfault in "
            "native code, or the system killing it for memory. Run `marlhub check` on it alone "
            "to see its last output.", episode=episode,
        )])
        return Outcome(target, report=report)

    def _timed_out(self, w: _Worker) -> Outcome:
        target = w.job[1] if w.job else "?"
        episode = w.episodes_done.value
        report = Report(target, strict=self.settings.strict, episodes=episode, findings=[Finding(
            rules.ENV_TIMEOUT, "error",
            f"checking {target!r} did not finish within its {self.settings.timeout:g}s limit and "
            f"its worker was killed in episode {episode} (after {episode} finished episodes); "
            "an env call hangs (possibly in native code).", episode=episode,
        )])
        return Outcome(target, report=report)
