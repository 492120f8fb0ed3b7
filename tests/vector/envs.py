"""Small hub envs that misbehave on purpose, and a look at this process's children."""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from marlhub.envs import RockPaperScissors
from marlhub.episode import actions_are_prechecked


class RaisesAtStep(RockPaperScissors):
    """Rock-paper-scissors that raises ``RuntimeError`` in its ``at``-th step."""

    def __init__(self, at: int = 2) -> None:
        super().__init__({"num_moves": 10})
        self.at = at
        self.steps = 0

    def step(self, action_dict: Any) -> Any:
        self.steps += 1
        if self.steps == self.at:
            raise RuntimeError(f"boom in step {self.steps}")
        return super().step(action_dict)


class RecordsChecks(RockPaperScissors):
    """Rock-paper-scissors that records, at each step, whether the hub's action checks were off
    (``actions_are_prechecked()``): ``prechecked``, one bool per step, and the types of the
    actions it got: ``received``, one list per step."""

    def __init__(self) -> None:
        super().__init__({"num_moves": 10})
        self.prechecked: list[bool] = []
        self.received: list[list[str]] = []

    def step(self, action_dict: Any) -> Any:
        self.prechecked.append(actions_are_prechecked())
        self.received.append([type(a).__name__ for a in action_dict.values()])
        return super().step(action_dict)


class FailsToBuild(RockPaperScissors):
    """An env whose constructor raises."""

    def __init__(self) -> None:
        raise ValueError("this env cannot be built")


class Sleeps(RockPaperScissors):
    """Rock-paper-scissors whose step sleeps ``seconds`` (a hang, for timeouts)."""

    def __init__(self, seconds: float = 30.0) -> None:
        super().__init__({"num_moves": 10})
        self.seconds = seconds

    def step(self, action_dict: Any) -> Any:
        time.sleep(self.seconds)
        return super().step(action_dict)


class ReturnsAFunction(RockPaperScissors):
    """An env with a method whose result does not pickle."""

    def make_function(self) -> Any:
        return lambda: None


def children() -> set[int]:
    """Process ids of this process's children, zombies (not yet reaped) included (Linux).

    multiprocessing's own helper processes (the resource tracker that the spawn start
    method starts, the fork server), which live until the interpreter exits, are left out.
    """
    me, found = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (name) state ppid ...": the name may hold spaces, so split after ")".
            fields = stat.read_text().rpartition(")")[2].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if fields and int(fields[1]) == me and not _HELPERS.search(command):
            found.add(int(stat.parent.name))
    return found


_HELPERS = re.compile(rb"multiprocessing\.(resource_tracker|forkserver)")


def left_of(pids: set[int], seconds: float = 10.0) -> set[int]:
    """Wait up to ``seconds`` for ``pids`` to be gone and reaped; return those still there."""
    deadline = time.monotonic() + seconds
    while True:
        left = pids & children()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def no_worker_left_behind() -> Iterator[None]:
    """Autouse where imported: the test leaves no worker process behind."""
    before = children()
    yield
    gc.collect()
    assert left_of(children() - before) == set()
