"""Whoever is ready first: where each copy stands in a vector env's ``recv``/``send`` cycle.

As in EnvPool and PufferLib, ``async_reset()`` starts the copies, ``recv()`` returns the
next ``batch_size`` ready ones with their ``copy_ids``, and ``send(actions, copy_ids)``
steps exactly those. :class:`ReadyCopies` keeps each copy held (the caller owes it
actions), running, ready (waiting for ``recv``, first in first out) or parked (its
episode ended under ``disabled``, until a ``reset_mask`` restarts it).

Example:
    >>> pool = ReadyCopies("Vec", 3, batch_size=2)
    >>> pool.start([0, 1, 2])
    >>> pool.arrive(2, "r2"); pool.arrive(0, "r0")
    >>> pool.take()
    ([0, 2], ['r0', 'r2'])
    >>> pool.check_send([0, 1])
    Traceback (most recent call last):
    ...
    marlhub.errors.VectorEnvError: Vec: send() got copy 1, which is running (sent, its results not in yet). Send actions only to the copies the last recv() returned (its copy_ids), each once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from copy import deepcopy
from typing import Any, NamedTuple, Optional

import numpy as np

from marlhub.errors import VectorEnvError

__all__ = ["HELD", "PARKED", "READY", "RUNNING", "ReadyCopies", "Received", "ReceivedArrays",
           "count_of", "received", "rows_of", "spread"]

HELD, RUNNING, READY, PARKED = "held", "running", "ready", "parked"

_WHY_NOT = {RUNNING: "which is running (sent, its results not in yet)",
            READY: "whose results wait for recv()",
            PARKED: "whose episode ended under autoreset_mode 'disabled' (reset it with "
                    "async_reset(options={'reset_mask': mask}) first)"}


class Received(NamedTuple):
    """What ``recv()`` returns: the five lists of ``step`` for the copies ``copy_ids``."""

    obs: list[Any]
    rewards: list[Any]
    terminateds: list[Any]
    truncateds: list[Any]
    infos: list[Any]
    copy_ids: np.ndarray


class ReceivedArrays(NamedTuple):
    """What ``recv_arrays()`` returns: the ``ArrayBatch`` of the copies ``copy_ids``."""

    batch: Any
    copy_ids: np.ndarray


def received(rows: Sequence[int], results: Sequence[tuple[Any, ...]], *,
             copy: bool = False) -> Received:
    """The :class:`Received` of the copies ``rows`` (observations deep-copied with ``copy``)."""
    obs, rewards, terminateds, truncateds, infos = (
        [list(column) for column in zip(*results)] if results else [[] for _ in range(5)])
    return Received(deepcopy(obs) if copy else obs, rewards, terminateds, truncateds, infos,
                    np.asarray(rows, dtype=np.int64))


def spread(rows: Sequence[int], values: Sequence[Any], count: int) -> list[Any]:
    """``values`` of the copies ``rows`` as one list over ``count`` copies (``{}`` elsewhere).

    Example:
        >>> spread([2, 0], ["c", "a"], 3)
        ['a', {}, 'c']
    """
    spread_out: list[Any] = [{} for _ in range(count)]
    for i, value in zip(rows, values):
        spread_out[i] = value
    return spread_out


def rows_of(mask: Optional[np.ndarray], num_envs: int) -> list[int]:
    """The copies a reset with the ``reset_mask`` ``mask`` restarts (every copy for None)."""
    return list(range(num_envs)) if mask is None else np.flatnonzero(mask).tolist()


def count_of(env_name: str, actions: Any) -> int:
    """How many action dicts ``send()`` got, or raise when it is not a list of them."""
    if isinstance(actions, (str, bytes, Mapping)) or not isinstance(actions, Sequence):
        raise VectorEnvError(env_name, f"send() got actions of type {type(actions).__name__}",
                             "Pass a list of action dicts, one per copy id, in the order of "
                             "copy_ids.")
    return len(actions)


class ReadyCopies:
    """Each of ``num_envs`` copies' state in the cycle, and the results waiting for ``recv``
    (``batch_size`` at a time)."""

    def __init__(self, env_name: str, num_envs: int, batch_size: Optional[int] = None) -> None:
        self.env_name = env_name
        self.num_envs = num_envs
        if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or isinstance(
                batch_size, bool) or not 1 <= batch_size <= num_envs):
            raise VectorEnvError(env_name, f"batch_size must be an int from 1 to num_envs="
                                 f"{num_envs}, got {batch_size!r}", "Pass e.g. batch_size="
                                 "num_envs // 2, or None for all copies (the synchronous call).")
        self.batch_size = num_envs if batch_size is None else int(batch_size)
        self.state = [HELD] * num_envs
        self.running = 0
        self._queue: deque[int] = deque()
        self._results: dict[int, Any] = {}
        self._parks: set[int] = set()

    def check_idle(self, call: str) -> None:
        """Raise unless no copy is running or waits for ``recv`` (before a synchronous call)."""
        if self.running or self._queue:
            raise VectorEnvError(
                self.env_name, f"{call} was called while a recv()/send() cycle is under way "
                f"({self.running} copies running, {len(self._queue)} waiting for recv())",
                "recv() every copy sent before calling reset() or step(); to restart copies "
                "during the cycle, use async_reset(options={'reset_mask': mask}).")

    def check_resettable(self, rows: Iterable[int]) -> None:
        """Raise unless every copy of ``rows`` is held or parked (a reset may restart it)."""
        for i in rows:
            if self.state[i] in (RUNNING, READY):
                raise VectorEnvError(
                    self.env_name, f"async_reset() would reset copy {i}, {_WHY_NOT[self.state[i]]}",
                    "recv() it first, or leave it out of the reset_mask.")

    def check_send(self, copy_ids: Any, count: Optional[int] = None) -> list[int]:
        """Return ``copy_ids`` as a list of ints, or raise: each a held copy, once (``count``:
        how many action dicts came with them)."""
        ids = np.asarray(copy_ids)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
            raise VectorEnvError(self.env_name, f"send() got copy_ids {copy_ids!r}",
                                 "Pass the copy_ids the last recv() returned: one int per "
                                 "action dict.")
        rows = ids.tolist()
        if count is not None and count != len(rows):
            raise VectorEnvError(self.env_name, f"send() got {count} action dicts for "
                                 f"{len(rows)} copy_ids", "Pass one action dict per copy id, "
                                 "in the order of copy_ids.")
        seen: set[int] = set()
        for i in rows:
            if not 0 <= i < self.num_envs:
                raise VectorEnvError(self.env_name, f"send() got copy {i}, but the copies are "
                                     f"0 to {self.num_envs - 1}", "Pass the copy_ids the last "
                                     "recv() returned.")
            if i in seen or self.state[i] != HELD:
                why = "twice" if i in seen else _WHY_NOT[self.state[i]]
                raise VectorEnvError(
                    self.env_name, f"send() got copy {i}, {why}",
                    "Send actions only to the copies the last recv() returned (its copy_ids), "
                    "each once.")
            seen.add(i)
        return rows

    def start(self, rows: Sequence[int]) -> None:
        """Mark ``rows`` running (sent, or reset by ``async_reset``)."""
        for i in rows:
            self.state[i] = RUNNING
        self.running += len(rows)

    def arrive(self, i: int, result: Any, park: bool = False) -> None:
        """Copy ``i``'s results are in; ``park``: its episode ended under ``disabled``."""
        self.state[i] = READY
        self.running -= 1
        self._results[i] = result
        self._queue.append(i)
        if park:
            self._parks.add(i)

    def take(self) -> tuple[list[int], list[Any]]:
        """Hand out up to ``batch_size`` ready copies (first in first out, by id): their ids and
        results; they are held now, or parked. Raise when none is ready."""
        if not self._queue:
            raise VectorEnvError(
                self.env_name, "recv() was called, but no copy is running or ready",
                "send() actions to the copies the last recv() returned, or start with "
                "async_reset(); copies parked under autoreset_mode 'disabled' come back "
                "after async_reset(options={'reset_mask': mask}).")
        rows = sorted(self._queue.popleft() for _ in range(min(self.batch_size,
                                                                len(self._queue))))
        for i in rows:
            self.state[i] = PARKED if i in self._parks else HELD
            self._parks.discard(i)
        return rows, [self._results.pop(i) for i in rows]

    def ready_count(self) -> int:
        """How many copies wait for ``recv``."""
        return len(self._queue)

    def clear(self) -> None:
        """Forget the cycle: nothing running or ready, every copy held (after a failure)."""
        self.state = [HELD] * self.num_envs
        self.running = 0
        self._queue.clear()
        self._results.clear()
        self._parks.clear()

    def held(self, rows: Iterable[int]) -> None:
        """Mark ``rows`` held (a synchronous ``reset`` or ``step`` returned their results)."""
        for i in rows:
            self.state[i] = HELD
