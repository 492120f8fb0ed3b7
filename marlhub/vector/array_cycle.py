"""Whoever is ready first, on the workers' array face: ``async_reset_arrays``, ``recv_arrays``
and ``send_arrays`` of an async vector env made with ``array_face=True``.

:class:`ArrayCycle` is the part of :class:`~marlhub.vector.AsyncVectorMultiAgentEnv`
that runs the cycle of :mod:`marlhub.vector.ready` on the shared arrays of
:mod:`marlhub.vector.slot_memory`, as EnvPool's and PufferLib's ``recv`` and
``send`` do: ``send_arrays(actions, copy_ids)`` checks the action rows at
once (spaces, and the masks in shared memory), writes them into the shared
action arrays and sends each worker one message naming its copies; the
worker steps just those and writes just their rows. Only the infos dicts come
back through the pipes. ``recv_arrays()`` waits until ``batch_size`` copies
are ready and copies their rows out of the block (with ``copy=False``, views of
them where they are one run). A copy's rows are written only by a request that
includes it, which it must be held for: the rows of a copy that waits for
``recv`` stay as its worker wrote them.

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

from marlhub.vector.arrays import row_index
from marlhub.vector.autoreset import SAME_STEP
from marlhub.vector.book import ARRAYS
from marlhub.vector.ready import ReadyCopies, ReceivedArrays

if TYPE_CHECKING:
    from marlhub.vector.group_actions import GroupActions
    from marlhub.vector.processes import WorkerPool
    from marlhub.vector.slot_memory import SlotArrays

__all__ = ["ArrayCycle"]


class ArrayCycle:
    """``async_reset_arrays``, ``send_arrays`` and ``recv_arrays`` on the workers' shared
    arrays (see the module)."""

    if TYPE_CHECKING:  # what the async vector env provides
        num_envs: int
        autoreset_mode: str
        copy: bool
        _pool: WorkerPool
        _cycle: ReadyCopies
        _slots: Optional[SlotArrays]
        _group_actions: GroupActions
        _requests: list[deque[tuple[str, list[int], int]]]
        _masked: set[str]
        _book: Any

        def name(self) -> str: ...

        def _check_idle(self) -> None: ...

        def _check_workers(self, call: str) -> None: ...

        def _pump(self) -> None: ...

        def _resets_to_start(self, seed: Any, options: Optional[dict[str, Any]], call: str,
                             face: str) -> tuple[list[Any], Optional[np.ndarray],
                                                 Optional[dict[str, Any]], list[int]]: ...

        def _request(self, what: str, rows: list[int],
                     payload: Callable[[range, list[int], int], Any]) -> None: ...

        def recv(self) -> Any: ...

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
        :class:`~marlhub.vector.arrays.ArrayBatch` and ``copy_ids``. Its arrays are copies
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
