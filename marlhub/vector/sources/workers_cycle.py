"""Whoever is ready first, in worker processes: ``async_reset``, ``recv`` and ``send`` of the
async vector env, and their array forms.

:class:`WorkerCycle` is the part of
:class:`~marlhub.vector.AsyncVectorMultiAgentEnv` that runs the cycle of
:mod:`marlhub.vector.ready`: ``send`` groups the copies by worker and sends each
worker one request for its copies (queued behind any it has not answered yet);
``recv`` takes in whatever answers have come (:meth:`WorkerPool.receive_any
<marlhub.vector.sources.processes.WorkerPool.receive_any>` waits on every busy worker's
pipe and process at once) until ``batch_size`` copies are ready. A worker
answers for the copies of one request together, so copies of different
workers never wait for each other. What arrives is recorded in the env's book
(:meth:`~marlhub.vector.book.CopyBook.arrive_step` and the others).

With ``array_face=True`` the array forms run the same cycle on the shared arrays
(:mod:`marlhub.vector.sources.memory`), as EnvPool's and PufferLib's ``recv`` and
``send`` do: ``send_arrays(actions, copy_ids)`` checks the action rows at once
(spaces, and the masks in shared memory), writes them into the shared action
arrays and sends each worker one message naming its copies; the worker steps
just those and writes just their rows, and only the infos dicts come back
through the pipes. ``recv_arrays()`` copies the ready rows out of the block
(with ``copy=False``, views of them where they are one run). A copy's rows are
written only by a request that includes it, which it must be held for.

Example:
    >>> import marlhub
    >>> from marlhub.vector import AsyncVectorMultiAgentEnv
    >>> fns = marlhub.registry.vector.env_fns_for("rock_paper_scissors", 4, None)
    >>> with AsyncVectorMultiAgentEnv(fns, num_workers=2, array_face=True,
    ...                               batch_size=2) as envs:
    ...     envs.async_reset_arrays(seed=0)
    ...     batch, copy_ids = envs.recv_arrays()
    ...     actions = {"agents": np.zeros((len(copy_ids), 2), np.int64)}
    ...     envs.send_arrays(actions, copy_ids)
    ...     batch.acting["agents"].shape, len(envs.recv_arrays().copy_ids)
    ((2, 2), 2)
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from marlhub.errors import WorkerError
from marlhub.vector.arguments import reset_mask_of, seeds_for
from marlhub.vector.autoreset import SAME_STEP
from marlhub.vector.book import ARRAYS, DICTS
from marlhub.vector.faces.arrays import row_index
from marlhub.vector.ready import (
    ReadyCopies,
    Received,
    ReceivedArrays,
    count_of,
    received,
    rows_of,
)

if TYPE_CHECKING:
    from marlhub.vector.book import CopyBook
    from marlhub.vector.faces.group_actions import GroupActions
    from marlhub.vector.sources.processes import WorkerPool
    from marlhub.vector.sources.memory import SharedObs, SlotArrays

__all__ = ["WorkerCycle"]


class WorkerCycle:
    """``async_reset``, ``recv`` and ``send`` of the async vector env (see the module)."""

    if TYPE_CHECKING:  # what the async vector env provides
        num_envs: int
        autoreset_mode: str
        timeout: Optional[float]
        _pool: WorkerPool
        _book: CopyBook
        _shared: Optional[SharedObs]
        _cycle: ReadyCopies
        _requests: list[deque[tuple[str, list[int], int]]]
        _failure: Optional[str]
        _slots: Optional[SlotArrays]
        _group_actions: GroupActions
        _masked: set[str]
        copy: bool

        def name(self) -> str: ...

        def _check_idle(self) -> None: ...


    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        """Start a reset of every copy (or of those ``options["reset_mask"]`` selects, which
        must be held or parked) for ``recv`` in ``face``, built from the copies' dicts;
        ``recv`` returns them as their workers answer, rewards ``{}`` and done flags False."""
        call = "async_reset()" if face == DICTS else "async_reset_arrays()"
        seeds, mask, rest, rows = self._resets_to_start(seed, options, call, face)
        self._request("reset", rows, lambda r, mine, block: (
            block, [(seeds[i], rest) if i in mine else None for i in r]))

    def _resets_to_start(self, seed: Any, options: Optional[dict[str, Any]], call: str,
                         face: str) -> tuple[list[Any], Optional[np.ndarray],
                                             Optional[dict[str, Any]], list[int]]:
        """The seeds, reset mask, options for the copies and rows of ``call`` (an
        ``async_reset`` of ``face``, which a reset of every copy claims), once the copies it
        resets are found resettable and the workers alive."""
        self._check_idle()
        seeds = seeds_for(self.name(), seed, self.num_envs)
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        rows = rows_of(mask, self.num_envs)
        if mask is None:
            self._cycle.check_idle(call)
        else:
            self._book.check_face(face, call, cycle=True)
            self._cycle.check_resettable(rows)
        self._check_workers(call)
        if mask is None:
            self._book.claim_face(face)
        return seeds, mask, rest, rows

    def _request(self, what: str, rows: list[int],
                 payload: Callable[[range, list[int], int], Any]) -> None:
        """Send each worker that holds some of the copies ``rows`` one request ``(what,
        payload(its copies, those of rows, shared block))``, queue it for :meth:`_pump`, and
        mark ``rows`` running. Only the dict face's requests take a block of shared
        observations."""
        shared = self._shared if what in ("reset", "step") else None
        for w, r in enumerate(self._pool.ranges):
            mine = [i for i in rows if i in r]
            if mine:
                block = shared.next_block() if shared is not None else 0
                self._pool.send_to(w, (what, payload(r, mine, block)))
                self._requests[w].append((what, mine, block))
        self._cycle.start(rows)

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Send the copies ``copy_ids`` their actions (``actions[k]`` for ``copy_ids[k]``), one
        request per worker; ``recv`` returns their results as they come (a dead worker
        raises :class:`~marlhub.errors.WorkerError`)."""
        self._check_idle()
        rows = self._cycle.check_send(copy_ids, count_of(self.name(), actions))
        checked = self._book.check_rows(actions, rows)
        self._check_workers("send()")
        position = {i: k for k, i in enumerate(rows)}
        self._request("step", rows, lambda r, mine, block: (
            block, [checked[position[i]] for i in mine], [i - r.start for i in mine]))

    def _recv(self) -> Received:
        """Wait for the next ``batch_size`` copies to be ready (fewer when no more can come)
        and return their results, first in first: a :class:`~marlhub.errors.WorkerError`
        when a worker died (whatever other copies are ready), a copy raised, or no worker
        answered within the vector env's ``timeout``."""
        self._check_idle()
        self._check_workers("recv()")
        while self._cycle.ready_count() < self._cycle.batch_size and self._cycle.running:
            self._pump()
        rows, results = self._cycle.take_some()
        return received(rows, results)

    def _pump(self) -> None:
        """Take in every answer the workers have for send()/async_reset() (waiting for one)."""
        busy = [w for w, pending in enumerate(self._requests) if pending]
        try:
            replies = self._pool.receive_any(busy, "recv()", self.timeout)
        except WorkerError as exc:
            self._failure = f"copy {exc.copy_index} (worker {exc.worker_index}) {exc.reason}"
            raise
        # every reply read here answers its worker's oldest request: take them all off the
        # queues first, so that a copy's error does not wait out an answer read already
        answered = [(self._requests[w].popleft(), reply) for w, reply in replies]
        for (what, rows, block), (status, payload) in answered:
            if status != "ok":
                error = self._pool.raised(payload, f"recv() ({what})")
                self._book.broken = (f"copy {error.copy_index} raised {error.exception_type} "
                                     f"in a {what}, so the copies are out of step")
                self._drain()
                raise error
            if what in ("reset_arrays", "step_arrays"):  # the rows are in shared memory
                self._arrived_arrays(rows, *payload)
                continue
            if what == "reset":
                payload = [p for p in payload if p is not None]
                self._book.arrive_reset(rows, [self._read(i, p[0], block)
                                               for i, p in zip(rows, payload)],
                                        [p[1] for p in payload])
            else:
                self._book.arrive_step(rows, [(self._read(i, p[0], block), *p[1:5])
                                              for i, p in zip(rows, payload)],
                                       [p[5] for p in payload])

    def _drain(self) -> None:
        """After a copy raised: wait out every request still under way and drop what waits for
        ``recv``, so that a ``reset()`` can start over."""
        while any(self._requests):
            busy = [w for w, pending in enumerate(self._requests) if pending]
            for w, _ in self._pool.receive_any(busy, "recv()", self.timeout):
                self._requests[w].popleft()
        self._cycle.clear()

    def _check_workers(self, call: str) -> None:
        try:
            self._pool.check_alive(call)
        except WorkerError as exc:
            self._failure = f"copy {exc.copy_index} (worker {exc.worker_index}) {exc.reason}"
            raise

    def _read(self, i: int, sent: Any, block: int) -> Any:
        return self._shared.read(i, sent, block) if self._shared is not None else sent

    # -- the array face in shared memory (array_face=True) -------------------------------

    def async_reset_arrays(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """Start a reset of every copy (or of those ``options["reset_mask"]`` selects, which
        must be held or parked) on the array face; :meth:`recv_arrays` returns them as their
        workers answer, rewards zero and done flags False."""
        if self._slots is None:  # built from the copies' dicts
            return super().async_reset_arrays(seed, options)  # type: ignore[misc]
        seeds, mask, rest, rows = self._resets_to_start(seed, options, "async_reset_arrays()",
                                                        ARRAYS)
        if mask is None:
            self._masked = set()
        self._request("reset_arrays", rows, lambda r, mine, _: (
            [(seeds[i], rest) if i in mine else None for i in r], True))

    def send_arrays(self, actions: Any, copy_ids: Any) -> None:
        """Send the copies ``copy_ids`` their actions: per group, one row per copy id
        (``(len(copy_ids), n, ...)``; slots that do not act are ignored); one message per
        worker; :meth:`recv_arrays` returns their results as they come.

        Raises:
            VectorEnvError: a copy that is not held (not returned by the last
                :meth:`recv_arrays`, or sent twice), or arrays of the wrong groups, shape or
                dtype.
            ActionError: an acting slot's action outside its space or mask (group, copy and
                agent named); nothing was sent.
            WorkerError: a worker died.
        """
        if self._slots is None:
            return super().send_arrays(actions, copy_ids)  # type: ignore[misc]
        slots = self._slots
        self._check_idle()
        self._book.check_face(ARRAYS, "send_arrays()", cycle=True)
        rows = self._cycle.check_send(copy_ids)
        where = row_index(rows)
        binding = self._book.masks_binding[0]
        acting = {name: flags[where] for name, flags in slots.flags["acting"].items()}
        masks = {name: slots.masks[name][where] for name in self._masked} if binding else {}
        checker = self._group_actions
        checked = checker.check(actions, acting, masks, copy_ids=rows)
        for name, value in checked.items():
            slots.actions[name][where] = checker.host(name, value)
        self._check_workers("send_arrays()")
        self._request("step_arrays", rows, _copies_of_worker)

    def recv_arrays(self) -> ReceivedArrays:
        """Wait for the next ``batch_size`` copies to be ready (fewer when no more can come)
        and return their rows, as :class:`ReceivedArrays`: the
        :class:`~marlhub.vector.faces.arrays.ArrayBatch` and ``copy_ids``. Its arrays are copies
        of the shared rows; with ``copy=False`` views of them when the copy ids are one
        ascending run (one worker's copies, or neighbours), valid until those copies are
        sent again.

        Raises:
            VectorEnvError: no copy is running or ready, or the face holds dicts.
            WorkerError: a worker died (whatever other copies are ready), a copy raised,
                or no worker answered within the vector env's ``timeout``.
        """
        if self._slots is None:
            return super().recv_arrays()  # type: ignore[misc]
        slots = self._slots
        self._check_idle()
        self._book.check_face(ARRAYS, "recv_arrays()", cycle=True)
        self._check_workers("recv_arrays()")
        while self._cycle.ready_count() < self._cycle.batch_size and self._cycle.running:
            self._pump()
        rows, infos = self._cycle.take_some()
        batch = slots.batch(infos, sorted(self._masked), self.copy,
                            self.autoreset_mode == SAME_STEP, rows)
        return ReceivedArrays(batch, np.asarray(rows, dtype=np.int64))

    def _arrived_arrays(self, rows: Sequence[int], infos: Sequence[Any],
                        masked: Sequence[str]) -> None:
        """A worker answered for the copies ``rows``: their rows are in the block."""
        slots = self._slots
        assert slots is not None
        self._masked.update(masked)
        self._book.arrived(rows, infos, [bool(slots.episode_terminated[i]
                                              or slots.episode_truncated[i]) for i in rows])


def _copies_of_worker(copies: range, mine: list[int], _block: int) -> Optional[list[int]]:
    """The copies ``mine`` of the worker that holds ``copies``, by their index there; None
    when they are all of its copies in order (the worker then steps them as in
    ``step_arrays``, on whole slices of its rows).

    Example:
        >>> worker = range(4, 8)
        >>> _copies_of_worker(worker, [4, 5, 6, 7], 0)
        >>> _copies_of_worker(worker, [5, 4, 6, 7], 0), _copies_of_worker(worker, [4, 5], 0)
        ([1, 0, 2, 3], [0, 1])
    """
    if len(mine) == len(copies) and mine[0] == copies.start and mine == list(copies):
        return None
    return [i - copies.start for i in mine]
