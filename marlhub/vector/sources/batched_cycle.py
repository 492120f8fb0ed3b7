"""``recv`` / ``send`` over a natively batched simulator, whose copies step together.

``send`` checks and keeps the actions; once every copy is sent (or parked under
``disabled``) the simulator steps and every copy is ready. ``recv`` hands them out
``batch_size`` at a time, so ``batch_size < num_envs`` works as on every other source.

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
from marlhub.vector.faces.arrays import ArrayBatch, tree_map
from marlhub.vector.ready import HELD, PARKED, RUNNING, ReadyCopies, ReceivedArrays, received

__all__ = ["BatchedCycle", "batch_rows"]


class BatchedCycle:
    """The ``recv``/``send`` cycle of a batched vector ``env``, over its synchronous calls,
    in its book."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.book = env._book
        self.ready: ReadyCopies = env._book.cycle
        # dicts: copy -> its checked action dict; arrays: copies -> their checked rows
        self._pending: dict[Any, Any] = {}

    # -- starting -------------------------------------------------------------------------

    def async_reset(self, face: str, seed: Any, options: Optional[dict[str, Any]]) -> None:
        """Reset every copy (or the held or parked ones of a ``reset_mask``) for ``recv``."""
        env, ready = self.env, self.ready
        mask, _, rows = self.book.start_reset(options, face)
        if mask is None:
            self._pending.clear()
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
        """Keep the checked actions of ``copy_ids``; step once every copy is sent or parked."""
        ready = self.ready
        if face == DICTS:
            rows, checked = self.book.check_send(actions, copy_ids)
            self._pending.update(zip(rows, checked))
        else:
            rows = ready.check_send(copy_ids)
            self._pending[tuple(rows)] = self._checked_rows(actions, rows)
        ready.start(rows)
        if all(state in (RUNNING, PARKED) for state in ready.state):
            self._step_all(face)

    def _step_all(self, face: str) -> None:
        """Step the simulator: every sent copy is ready."""
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
        """The action rows of the copies ``rows``, checked, as numpy."""
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
        """Step every copy with the rows kept (the space's zero for the parked)."""
        env = self.env
        actions = {name: env._actions.blank(name) for name in env.groups}
        for copies, values in rows.items():
            for name, value in values.items():
                actions[name][list(copies)] = value
        return env._step_checked(env._idle_blanked(actions, env._last.acting))

    # -- collecting -----------------------------------------------------------------------

    def recv(self, face: str) -> Any:
        """The next ``batch_size`` ready copies in ``face`` (raises ``VectorEnvError`` when none
        is ready, or the copies held must be sent first)."""
        ready = self.ready
        if not ready.ready_count() and ready.running:
            held = [i for i, state in enumerate(ready.state) if state == HELD]
            raise VectorEnvError(
                self.env.name(), f"recv{'_arrays' if face == ARRAYS else ''}() was called "
                f"with no copy ready, and the copies {held} "
                "are held: the batched simulator steps every copy at once",
                "send() actions to every copy the earlier recv() calls returned, then recv() "
                "again.")
        rows, results = ready.take()
        if face == DICTS:
            return received(rows, results)
        return ReceivedArrays(batch_rows([batch for batch, _ in results],
                                         [i for _, i in results]),
                              np.asarray(rows, dtype=np.int64))

    def check_idle(self, call: str) -> None:
        """Raise while a cycle is under way (before a synchronous call)."""
        self.ready.check_idle(call)


def batch_rows(batches: Sequence[ArrayBatch], rows: Sequence[int]) -> ArrayBatch:
    """One :class:`~marlhub.vector.faces.arrays.ArrayBatch` of row ``rows[k]`` of ``batches[k]``
    for every ``k`` (a reset's and a step's may mix in one ``recv``).

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
                tree_map(lambda array: array.__setitem__(k, 0), final_obs)  # noqa: B023
    fields = {name: _joined([getattr(part, name) for part in parts]) for name in _ROW_FIELDS}
    return ArrayBatch(**fields, infos=[part.infos[0] for part in parts], final_obs=final_obs)


#: The fields of an :class:`~marlhub.vector.faces.arrays.ArrayBatch` with one row per copy.
_ROW_FIELDS = ("obs", "rewards", "terminated", "truncated", "episode_terminated",
               "episode_truncated", "acting", "alive", "action_mask")


def _take(batch: ArrayBatch, take: Any, infos: list[Any]) -> ArrayBatch:
    final = None if batch.final_obs is None else tree_map(take, batch.final_obs)
    return ArrayBatch(**{name: tree_map(take, getattr(batch, name)) for name in _ROW_FIELDS},
                      infos=infos, final_obs=final)


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
