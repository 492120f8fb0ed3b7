"""``recv`` / ``send`` over a natively batched simulator, whose copies step together.

A batched simulator (VMAS, JaxMARL, a batched TorchRL env) steps every copy in
one call, so it cannot step some copies and not others. :class:`BatchedCycle`
gives it the cycle of :mod:`marlhub.vector.ready` all the same, in both faces:
``send`` (or ``send_arrays``) checks the copies' actions at once and keeps them;
once every copy is sent (or parked under ``disabled``) the simulator steps, and
every copy is ready at once. ``recv`` hands them out ``batch_size`` at a time,
so ``batch_size < num_envs`` works as on every other source: the copies of one
step come out over several ``recv`` calls, and the next step waits until all of
them are sent back.

Example:
    >>> import marlhub
    >>> envs = marlhub.make_vec("vmas/balance", 4, {"max_steps": 5}, batch_size=2)
    >>> envs.async_reset_arrays(seed=0)
    >>> batch, copy_ids = envs.recv_arrays()
    >>> copy_ids.tolist(), batch.obs["agents"].shape
    ([0, 1], (2, 3, 16))
    >>> envs.send_arrays({"agents": np.zeros((2, 3, 2), np.float32)}, copy_ids)
    >>> envs.recv_arrays().copy_ids.tolist()  # the rest of the reset: the step waits for them
    [2, 3]
    >>> envs.close()
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from marlhub.core import ALL
from marlhub.episode.status import require_running
from marlhub.errors import VectorEnvError
from marlhub.vector.book import ARRAYS, DICTS
from marlhub.vector.faces.arrays import ArrayBatch
from marlhub.vector.ready import (
    HELD,
    PARKED,
    RUNNING,
    ReadyCopies,
    ReceivedArrays,
    count_of,
    received,
    rows_of,
)

__all__ = ["BatchedCycle", "batch_rows"]


class BatchedCycle:
    """The ``recv``/``send`` cycle of a :class:`~marlhub.vector.BatchedVectorEnv` (see the module).

    Args:
        env: the batched vector env; the cycle runs its synchronous calls underneath
            (its resets, its dict face's ``step``, its array step of checked rows) and
            keeps its copies' states in the env's book (``book.cycle``, ``book.face``).
    """

    def __init__(self, env: Any) -> None:
        self.env = env
        self.book = env._book
        self.ready: ReadyCopies = env._book.cycle
        # dicts: copy -> its checked action dict; arrays: copies -> their checked rows
        self._pending: dict[Any, Any] = {}

    # -- starting -------------------------------------------------------------------------

    def async_reset(self, face: str, seed: Any, options: Optional[dict[str, Any]]) -> None:
        """Reset every copy (or those of ``options["reset_mask"]``, which must be held or
        parked); the results wait for ``recv`` in ``face``."""
        env, ready = self.env, self.ready
        mask = None if not options or "reset_mask" not in options else options["reset_mask"]
        call = f"async_reset{'_arrays' if face == ARRAYS else ''}()"
        rows = rows_of(None if mask is None else np.asarray(mask), env.num_envs)
        if mask is None:
            ready.check_idle(call)
            self._pending.clear()
        else:
            self.book.check_face(face, call, cycle=True)
            ready.check_resettable(rows)
        if face == ARRAYS:
            batch = env._reset_arrays(seed, options)
            results: list[Any] = [(batch, i) for i in rows]
        else:
            obs, infos = env._dicts.reset(env._reset_arrays(seed, options), mask)
            results = [(obs[i], {}, {ALL: False}, {ALL: False}, infos[i]) for i in rows]
        if mask is None:
            self.book.claim_face(face)
        ready.start(rows)
        self.book.arrived(rows, results, [False] * len(rows))

    def send(self, face: str, actions: Any, copy_ids: Any) -> None:
        """Keep the actions of the copies ``copy_ids`` (checked now); step the simulator once
        every copy is sent or parked."""
        self.book.check_face(face, f"send{'_arrays' if face == ARRAYS else ''}()", cycle=True)
        env, ready = self.env, self.ready
        count = count_of(env.name(), actions) if face == DICTS else None
        rows = ready.check_send(copy_ids, count)
        if face == DICTS:
            checked = env._dicts.book.check_rows(actions, rows)
            self._pending.update(zip(rows, checked))
        else:
            self._pending[tuple(rows)] = self._checked_rows(actions, rows)
        ready.start(rows)
        if all(state in (RUNNING, PARKED) for state in ready.state):
            self._step_all(face)

    def _step_all(self, face: str) -> None:
        """Every copy is sent or parked: step the simulator, and every sent copy is ready."""
        env, ready = self.env, self.ready
        pending, self._pending = self._pending, {}
        running = [i for i, state in enumerate(ready.state) if state == RUNNING]
        if face == DICTS:
            results = env._dicts.step([pending.get(i, {}) for i in range(env.num_envs)])
            self.book.arrived(running, [tuple(column[i] for column in results)
                                        for i in running])
            return
        batch = self._step_rows(pending)
        self.book.arrived(running, [(batch, i) for i in running],
                          [bool(batch.episode_terminated[i] or batch.episode_truncated[i])
                           for i in running])

    def _checked_rows(self, actions: Any, rows: list[int]) -> dict[str, np.ndarray]:
        """The action rows of the copies ``rows``, checked against their acting slots and
        masks, as numpy."""
        env = self.env
        require_running(env.name(), env._cannot_step)
        last = env._last
        index = np.asarray(rows, dtype=np.int64)
        acting = {name: np.asarray(value)[index] for name, value in last.acting.items()}
        masks = {name: np.asarray(value)[index] for name, value in last.action_mask.items()} \
            if env.check_masks else {}
        checked = env._actions.check(actions, acting, masks, copy_ids=rows)
        return {name: env._actions.host(name, value) for name, value in checked.items()}

    def _step_rows(self, rows: dict[Any, dict[str, np.ndarray]]) -> ArrayBatch:
        """Step every copy with the rows kept (copies -> their rows; the space's zero for
        copies without any, the parked)."""
        env = self.env
        actions = {name: env._actions.blank(name) for name in env.groups}
        for copies, values in rows.items():
            for name, value in values.items():
                actions[name][list(copies)] = value
        return env._step_checked(env._idle_blanked(actions, env._last.acting))

    # -- collecting -----------------------------------------------------------------------

    def recv(self, face: str) -> Any:
        """The next ``batch_size`` ready copies, as :class:`~marlhub.vector.ready.Received`
        (dicts) or :class:`~marlhub.vector.ready.ReceivedArrays` (arrays).

        Raises:
            VectorEnvError: no copy is ready, or the copies held must be sent first (the
                simulator steps them all at once).
        """
        self.book.check_face(face, f"recv{'_arrays' if face == ARRAYS else ''}()", cycle=True)
        ready = self.ready
        if not ready.ready_count() and ready.running:
            held = [i for i, state in enumerate(ready.state) if state == HELD]
            raise VectorEnvError(
                self.env.name(), f"recv{'_arrays' if face == ARRAYS else ''}() was called "
                f"with no copy ready, and the copies {held} "
                "are held: the batched simulator steps every copy at once",
                "send() actions to every copy the earlier recv() calls returned, then recv() "
                "again.")
        rows, results = ready.take_some()
        if face == DICTS:
            return received(rows, results)
        return ReceivedArrays(batch_rows([batch for batch, _ in results],
                                         [i for _, i in results]),
                              np.asarray(rows, dtype=np.int64))

    def check_idle(self, call: str) -> None:
        """Raise while a cycle is under way (before a synchronous call)."""
        self.ready.check_idle(call)


def batch_rows(batches: Sequence[ArrayBatch], rows: Sequence[int]) -> ArrayBatch:
    """One :class:`~marlhub.vector.faces.arrays.ArrayBatch` of row ``rows[k]`` of ``batches[k]``, for
    every ``k`` (the batches of a reset and of a step may mix in one ``recv``).

    Example:
        >>> a = ArrayBatch(obs={"g": np.arange(3)[:, None]}, rewards={}, terminated={},
        ...                truncated={}, episode_terminated=np.zeros(3, bool),
        ...                episode_truncated=np.zeros(3, bool), acting={}, alive={},
        ...                infos=[{}, {}, {}])
        >>> batch_rows([a, a], [2, 0]).obs["g"].tolist()
        [[2], [0]]
        >>> b = ArrayBatch(**{**a.__dict__, "obs": {"g": np.arange(3, 6)[:, None]}})
        >>> batch_rows([b, a], [0, 1]).obs["g"].tolist()  # a reset's row and a step's
        [[3], [1]]
    """
    first = batches[0]
    if all(batch is first for batch in batches):
        index = np.asarray(rows, dtype=np.int64)
        return _take(first, lambda value: _rows(value, index), [first.infos[i] for i in rows])
    parts = [_take(batch, lambda value, i=i: _rows(value, np.asarray([i])), [batch.infos[i]])
             for batch, i in zip(batches, rows)]
    finals = [part.final_obs for part in parts]
    if all(final is None for final in finals):
        final_obs = None
    else:  # rows whose copy did not end under same_step hold zeros, as one batch has them
        final_obs = _joined([part.obs if final is None else final
                             for part, final in zip(parts, finals)])
        for k, final in enumerate(finals):
            if final is None:
                _zero_row(final_obs, k)
    fields = {name: _joined([getattr(part, name) for part in parts]) for name in _ROW_FIELDS}
    return ArrayBatch(**fields, infos=[part.infos[0] for part in parts], final_obs=final_obs)


#: The fields of an :class:`~marlhub.vector.faces.arrays.ArrayBatch` with one row per copy.
_ROW_FIELDS = ("obs", "rewards", "terminated", "truncated", "episode_terminated",
               "episode_truncated", "acting", "alive", "action_mask")


def _take(batch: ArrayBatch, take: Any, infos: list[Any]) -> ArrayBatch:
    def tree(value: Any) -> Any:
        return {k: tree(v) for k, v in value.items()} if isinstance(value, dict) else take(value)

    return ArrayBatch(
        obs=tree(batch.obs), rewards=tree(batch.rewards), terminated=tree(batch.terminated),
        truncated=tree(batch.truncated), episode_terminated=take(batch.episode_terminated),
        episode_truncated=take(batch.episode_truncated), acting=tree(batch.acting),
        alive=tree(batch.alive), action_mask=tree(batch.action_mask), infos=infos,
        final_obs=None if batch.final_obs is None else tree(batch.final_obs))


def _rows(value: Any, index: np.ndarray) -> Any:
    if hasattr(value, "detach"):  # a torch tensor stays on its device
        import torch

        return value[torch.as_tensor(index, device=value.device)]
    return np.asarray(value)[index]


def _joined(parts: Sequence[Any]) -> Any:
    """Each field or array of ``parts`` (one row each) joined along the rows."""
    first = parts[0]
    if isinstance(first, dict):
        return {key: _joined([part[key] for part in parts]) for key in first}
    if hasattr(first, "detach"):
        import torch

        return torch.cat(list(parts))
    return np.concatenate(parts)


def _zero_row(tree: Any, k: int) -> None:
    if isinstance(tree, dict):
        for value in tree.values():
            _zero_row(value, k)
    else:
        tree[k] = 0
