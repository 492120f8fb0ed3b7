"""The one request path of the async vector env: every call is requests to workers and answers.

A call sends each worker that holds some of its copies one request naming them
(``_request``) and takes the answers in as they come (``_replies``). The synchronous
calls wait for every answer (``_collect``); the cycle (``async_reset``, ``send``,
``recv``) hands them to the book as they arrive, so workers never wait for each other.
A copy that raised, a dead worker and a time-out are handled here, once. With
``array_face=True`` the workers write their rows of the shared arrays instead
(:mod:`marlhub.vector.sources.memory`), and only the infos come back through the pipes.

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
from typing import Any, Optional

import numpy as np

from marlhub.errors import VectorEnvError, WorkerError
from marlhub.vector.arguments import reset_mask_of, seeds_for
from marlhub.vector.autoreset import SAME_STEP
from marlhub.vector.book import ARRAYS, DICTS
from marlhub.vector.faces.arrays import row_index
from marlhub.vector.ready import Received, ReceivedArrays, received, rows_of

from marlhub.vector.base import VectorMultiAgentEnv
from marlhub.vector.faces.group_actions import GroupActions
from marlhub.vector.ready import ReadyCopies
from marlhub.vector.sources.memory import SharedObs, SlotArrays
from marlhub.vector.sources.processes import WorkerPool

__all__ = ["Answer", "WorkerCycle"]

#: One answered request: ``(what, its copies, its shared block, the worker's payload)``.
Answer = tuple[str, Sequence[int], int, Any]

#: Requests whose failure leaves the copies out of step (a reset must follow).
_MOVES = ("reset", "step", "reset_arrays", "step_arrays")


class WorkerCycle(VectorMultiAgentEnv):
    """A vector env of copies in workers: its requests, answers and ``recv``/``send`` cycle (see
    the module); :class:`~marlhub.vector.AsyncVectorMultiAgentEnv` builds it."""

    timeout: Optional[float]
    copy: bool
    _pool: WorkerPool
    _cycle: ReadyCopies
    _shared: Optional[SharedObs]
    _slots: Optional[SlotArrays]
    _group_actions: GroupActions
    _masked: set[str]

    # -- requests and answers: the one path of every call ------------------------------

    def _start_requests(self, num_workers: int) -> None:
        # per worker, the requests it has yet to answer, oldest first: (what, copies, block)
        self._requests: list[deque[tuple[str, Sequence[int], int]]] = [
            deque() for _ in range(num_workers)]
        self._pending: Optional[str] = None  # the synchronous call under way
        self._failure: Optional[str] = None  # why the env cannot go on

    def _request(self, what: str, rows: Sequence[int],
                 payload: Callable[[range, Sequence[int], int], Any]) -> None:
        """Send each worker that holds some of ``rows`` one request ``(what, payload(its
        copies, those of rows, shared block))`` and queue it."""
        shared = self._shared if what in ("reset", "step") else None
        block = shared.next_block() if shared is not None else 0
        every = len(rows) == self.num_envs
        for w, r in enumerate(self._pool.ranges):
            mine = r if every else [i for i in rows if i in r]
            if mine:
                self._pool.send_to(w, (what, payload(r, mine, block)))
                self._requests[w].append((what, mine, block))

    def _replies(self, call: str, timeout: Optional[float] = None) -> list[Answer]:
        """Wait for an answer; return every answered request (raise :class:`WorkerError` when a
        worker died or was late, or a copy raised, once the other requests are waited out)."""
        busy = [w for w, pending in enumerate(self._requests) if pending]
        try:
            replies = self._pool.receive_any(busy, call, self.timeout if timeout is None
                                             else timeout)
        except WorkerError as exc:
            self._failure = (f"copy {exc.copy_index} (worker {exc.worker_index}) {exc.reason} "
                             f"during {call}")
            raise
        answered: list[Answer] = []  # every reply read answers its worker's oldest request
        failed: list[Answer] = []
        for w, (status, payload) in replies:
            what, rows, block = self._requests[w].popleft()
            (answered if status == "ok" else failed).append((what, rows, block, payload))
        if failed:
            what, _, _, payload = min(failed, key=lambda f: f[3][0])
            error = self._pool.raised(payload, call)
            if what in _MOVES and self._book is not None:
                self._book.broken = (f"copy {error.copy_index} raised {error.exception_type} "
                                     f"in a {what}, so the copies are out of step")
            self._drain(call)
            raise error
        return answered

    def _collect(self, call: str, timeout: Optional[float] = None) -> list[Answer]:
        """Every answer to ``call``, the synchronous call under way, in the order of the copies."""
        if self._pending != call or self.closed:
            self._check_idle(pending=call)
        try:
            return self._answers(call, timeout)
        finally:
            self._pending = None

    def _answers(self, call: str, timeout: Optional[float] = None) -> list[Answer]:
        """Every answer to the requests under way, in the order of their copies."""
        answered: list[Answer] = []
        while any(self._requests):
            answered += self._replies(call, timeout)
        answered.sort(key=lambda answer: answer[1][0])
        return answered

    def _drain(self, call: str) -> None:
        """After a copy raised: wait out every request and drop the cycle, for a ``reset()``."""
        while any(self._requests):
            busy = [w for w, pending in enumerate(self._requests) if pending]
            for w, _ in self._pool.receive_any(busy, call, self.timeout):
                self._requests[w].popleft()
        self._cycle.clear()

    def _results(self, answer: Answer) -> list[tuple[Any, ...]]:
        """One result per copy of an answered ``reset`` (obs, infos) or ``step`` (the 5-tuple
        and the outcome), observations read from the shared block."""
        what, rows, block, payload = answer
        if what == "reset":  # None for the copies a reset_mask leaves alone
            payload = [p for p in payload if p is not None]
        shared = self._shared
        if shared is None:
            return [tuple(p) for p in payload]
        return [(shared.read(i, p[0], block), *p[1:]) for i, p in zip(rows, payload)]

    def _check_idle(self, pending: Optional[str] = None) -> None:
        """Raise when closed, broken, or another synchronous call than ``pending`` is under way."""
        self._check_open()
        if self._failure is not None:
            raise VectorEnvError(self.name(), f"it cannot go on: {self._failure}",
                                 "close() it (which ends the workers) and make a new one.")
        if self._pending != pending:
            verb = (pending or self._pending or "").split("(")[0]
            if pending is not None:
                raise VectorEnvError(self.name(), f"{verb}_wait() was called but no {pending} "
                                     f"is under way (pending: {self._pending})",
                                     f"Call {verb}_async() first.")
            raise VectorEnvError(self.name(), f"a {self._pending} is under way",
                                 f"Call {verb}_wait() first.")

    def _check_workers(self, call: str) -> None:
        try:
            self._pool.check_alive(call)
        except WorkerError as exc:
            self._failure = f"copy {exc.copy_index} (worker {exc.worker_index}) {exc.reason}"
            raise

    # -- the cycle: async_reset, send and recv -----------------------------------------

    def _reset_request(self, seed: Any, options: Optional[dict[str, Any]], what: str,
                       call: str, face: Optional[str] = None) -> tuple[Any, list[int]]:
        """Request a reset of every copy (or of a ``reset_mask``'s): of the cycle in ``face``,
        else a synchronous one; return the mask and the copies reset."""
        self._check_idle()
        seeds = seeds_for(self.name(), seed, self.num_envs)
        if face is None:
            mask, rest = reset_mask_of(self.name(), options, self.num_envs)
            rows = rows_of(mask, self.num_envs)
            self._cycle.check_idle(call)
        else:
            mask, rest, rows = self._book.start_reset(options, face)
        self._check_workers(call)
        resets = [(seeds[i], rest) if mask is None or mask[i] else None
                  for i in range(self.num_envs)]
        if what == "reset":
            self._request(what, rows, lambda r, _, block: (block, resets[r.start:r.stop]))
        else:  # only the copies reset write their rows (async_reset), or every copy
            only = face is not None
            self._request(what, rows if only else range(self.num_envs),
                          lambda r, _, block: (resets[r.start:r.stop], only))
        return mask, rows

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        """Start a reset for ``recv`` in ``face`` (the shared arrays' with ``array_face=True``)."""
        call = "async_reset()" if face == DICTS else "async_reset_arrays()"
        what = "reset_arrays" if face == ARRAYS and self._slots is not None else "reset"
        mask, rows = self._reset_request(seed, options, what, call, face)
        if mask is None:
            self._book.claim_face(face)
            if what == "reset_arrays":
                self._masked = set()
        self._cycle.start(rows)

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Send the copies ``copy_ids`` their action dicts, one request per worker."""
        self._check_idle()
        rows, checked = self._book.check_send(actions, copy_ids)
        self._check_workers("send()")
        position = {i: k for k, i in enumerate(rows)}
        self._request("step", rows, lambda r, mine, block: (
            block, [checked[position[i]] for i in mine], [i - r.start for i in mine]))
        self._cycle.start(rows)

    def _recv(self) -> Received:
        rows, results = self._take("recv()")
        return received(rows, results)

    def _take(self, call: str) -> tuple[list[int], list[Any]]:
        """Take in answers until ``batch_size`` copies are ready (or none runs); hand them out."""
        self._check_idle()
        self._check_workers(call)
        cycle = self._cycle
        while cycle.ready_count() < cycle.batch_size and cycle.running:
            for answer in self._replies(call):
                what, rows, _, payload = answer
                if what in ("reset_arrays", "step_arrays"):  # the rows are in shared memory
                    self._arrived_arrays(rows, *payload)
                elif what == "reset":
                    obs, infos = zip(*self._results(answer))
                    self._book.arrive_reset(rows, obs, infos)
                else:
                    results = self._results(answer)
                    self._book.arrive_step(rows, [r[:5] for r in results], [r[5] for r in results])
        return cycle.take()

    # -- the cycle of the array face in shared memory (array_face=True) ------------------

    def _send_batch(self, actions: Any, copy_ids: Any) -> None:
        """The action rows, checked and written into shared memory; one message per worker."""
        if self._slots is None:  # built from the copies' dicts
            return super()._send_batch(actions, copy_ids)
        self._check_idle()
        rows = self._cycle.check_send(copy_ids)
        self._write_actions(actions, rows)
        self._check_workers("send_arrays()")
        self._request("step_arrays", rows, _copies_of_worker)
        self._cycle.start(rows)

    def _recv_batch(self) -> ReceivedArrays:
        """The ready copies' rows (with ``copy=False`` views where they are one run, valid
        until those copies are sent again)."""
        if self._slots is None:
            return super()._recv_batch()
        rows, infos = self._take("recv_arrays()")
        batch = self._slots.batch(infos, sorted(self._masked), self.copy,
                                  self.autoreset_mode == SAME_STEP, rows)
        return ReceivedArrays(batch, np.asarray(rows, dtype=np.int64))

    def _write_actions(self, actions: Any, rows: Optional[list[int]]) -> None:
        """Check the action rows of ``rows`` (None: all) at once; write them into shared memory."""
        slots, checker = self._slots, self._group_actions
        assert slots is not None
        where = slice(None) if rows is None else row_index(rows)
        acting = {name: flags[where] for name, flags in slots.flags["acting"].items()}
        masks = {name: slots.masks[name][where] for name in self._masked} \
            if self._book.masks_binding[0] else {}
        for name, value in checker.check(actions, acting, masks, copy_ids=rows).items():
            slots.actions[name][where] = checker.host(name, value)

    def _arrived_arrays(self, rows: Sequence[int], infos: Sequence[Any],
                        masked: Sequence[str]) -> None:
        """A worker answered for the copies ``rows``: their rows are in the block."""
        slots = self._slots
        assert slots is not None
        self._masked.update(masked)
        self._book.arrived(rows, infos, [bool(slots.episode_terminated[i]
                                              or slots.episode_truncated[i]) for i in rows])


def _copies_of_worker(copies: range, mine: Sequence[int], _block: int) -> Optional[list[int]]:
    """The copies ``mine`` of the worker holding ``copies``, by index there (None: all, in order)."""
    if len(mine) == len(copies) and mine[0] == copies.start and list(mine) == list(copies):
        return None
    return [i - copies.start for i in mine]
