"""Many copies of a hub env in worker processes, observations through shared memory.

Every call is requests to the workers and their answers, on one path
(:mod:`marlhub.vector.sources.workers_cycle`); the processes are
:mod:`~marlhub.vector.sources.processes`', their loop :mod:`~marlhub.vector.sources.worker`'s.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> with AsyncVectorMultiAgentEnv([TicTacToe] * 4, num_workers=2) as envs:
    ...     obs, infos = envs.reset(seed=0)
    ...     actions = [{agent: 4 for agent in ob} for ob in obs]  # the centre square
    ...     obs, rewards, terminateds, truncateds, infos = envs.step(actions)
    ...     [sorted(o) for o in obs], terminateds[0], obs[0]["player1"]
    ([['player1'], ['player2'], ['player1'], ['player1']], {'__all__': False}, array([ 0.,  0.,  0.,  0., -1.,  0.,  0.,  0.,  0.], dtype=float32))
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from typing import Any, Optional

from marlhub.adapters.batched import group_agents
from marlhub.errors import VectorEnvError
from marlhub.vector.base import (
    SAME_STEP,
    adopt_ray_base,
    parse_autoreset_mode,
    values_per_copy,
)
from marlhub.vector.book import DICTS, CopyBook
from marlhub.vector.copies import RemoteCopy, check_env_fns, describe_first
from marlhub.vector.faces.group_actions import GroupActions
from marlhub.vector.ready import ReadyCopies
from marlhub.vector.sources.memory import (
    LENT_BLOCKS,
    ObsLayout,
    SharedObs,
    SlotArrays,
    SlotLayout,
    slot_spaces_unsupported,
)
from marlhub.vector.sources.processes import CLOSE_SECONDS, WorkerPool, default_num_workers
from marlhub.vector.sources.workers_cycle import WorkerCycle

__all__ = ["AsyncVectorMultiAgentEnv", "RemoteCopy"]


class AsyncVectorMultiAgentEnv(WorkerCycle):
    """``num_envs`` copies of a hub env in ``num_workers`` worker processes.

    The calls and results of :class:`~marlhub.vector.SyncVectorMultiAgentEnv` (identical
    copy by copy), plus ``step_async``/``step_wait`` and ``reset_async``/``reset_wait``.
    Each worker steps a contiguous range of copies; the parent checks every action
    before anything is sent. A copy that raises is re-raised as
    :class:`~marlhub.errors.WorkerError` naming it, with the worker's traceback, and
    ``reset()`` goes on; a worker that dies raises at once, and only ``close()`` is left.
    ``close()``, garbage collection and interpreter exit reap every process.

    Args:
        env_fns: functions that each make one copy, picklable with cloudpickle.
        num_workers: worker processes (default: one per usable core, at most ``num_envs``).
        shared_memory: send fixed-size observations through shared memory.
        copy: return observations the caller may keep (the default); False: views valid
            until the next call (``recv_arrays``: until those copies are sent again).
        context: the ``multiprocessing`` start method; None for the platform's default.
        daemon: start the workers as daemons (they cannot start processes then).
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        timeout: seconds to wait for the workers in each call (None: no limit).
        env_id: the registry id of the copies, for messages and ``repr``.
        check_masks: refuse masked-out actions before anything is sent (the default).
        batch_size: how many copies :meth:`recv` returns (None: all of them).
        array_face: the workers write the array face straight into shared memory, one
            message per worker and call (:mod:`marlhub.vector.sources.memory`); the
            observations must have a fixed size.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]], *, num_workers: Optional[int] = None,
                 shared_memory: bool = True, copy: bool = True, context: Optional[str] = None,
                 daemon: bool = True, autoreset_mode: Any = "next_step",
                 timeout: Optional[float] = None, env_id: Optional[str] = None,
                 check_masks: bool = True, batch_size: Optional[int] = None,
                 array_face: bool = False) -> None:
        self.closed = True  # until built: a failed constructor leaves nothing to close
        adopt_ray_base()
        self.env_fns = check_env_fns(env_fns, type(self).__name__)
        self._cycle = ReadyCopies(type(self).__name__, len(self.env_fns), batch_size)
        self.num_envs = len(self.env_fns)
        self.env_id = env_id
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.num_workers = _num_workers(self.name(), num_workers, self.num_envs)
        self.timeout = timeout
        self.shared_memory = shared_memory
        self.copy = copy
        self.array_face = array_face
        self._mask: Any = None  # the reset_mask of the synchronous reset under way
        self._masked: set[str] = set()  # groups of the shared array face that have shown a mask
        self._start_requests(self.num_workers)
        ctx = multiprocessing.get_context(context)
        probe = describe_first(self.env_fns) if shared_memory or array_face else None
        layout, buffers = self._shared_blocks(ctx, probe) if shared_memory else (None, None)
        self._slots = self._slot_block(ctx, probe) if array_face else None
        self._pool = WorkerPool(self.env_fns, self.num_workers, ctx, buffers, layout,
                                self.autoreset_mode, daemon,
                                (self._slots.layout, self._slot_buffer) if self._slots else None)
        self._shared = SharedObs(layout, buffers, copy) if layout and buffers else None
        try:  # each worker first answers with its copies' descriptions
            for w, r in enumerate(self._pool.ranges):
                self._requests[w].append(("start-up", list(r), 0))
            answers = self._answers("start-up (building the envs)")
        except BaseException:
            self._pool.close(terminate=True)
            raise
        self.envs = [RemoteCopy(i, w, d) for w, (_, rows, _, descriptions) in enumerate(answers)
                     for i, d in zip(rows, descriptions)]
        self._adopt_description(answers[0][3][0])
        self._book = CopyBook(self.name(), self.num_envs, self.autoreset_mode,
                              [c.possible_agents for c in self.envs],
                              [c.get_action_space for c in self.envs],
                              [check_masks and c.masks_binding for c in self.envs], self._cycle)
        if self._slots is not None:
            assert self.single_action_spaces is not None
            self._group_actions = GroupActions(self.name(), self.num_envs,
                                               self._slots.layout.groups,
                                               self.single_action_spaces)
        self.closed = False

    def _shared_blocks(self, ctx: Any, probe: Any) -> tuple[Optional[ObsLayout],
                                                            Optional[list[Any]]]:
        """Lay out the shared blocks from the first copy's observation spaces."""
        layout = ObsLayout(probe["observation_spaces"], self.num_envs)
        if not layout.agents:
            return None, None
        count = 1 + (LENT_BLOCKS if self.copy else 0)
        return layout, [ctx.RawArray("B", layout.nbytes) for _ in range(count)]

    def _slot_block(self, ctx: Any, probe: Any) -> SlotArrays:
        """Lay out the shared array face from the first copy's spaces, or raise."""
        agents = list(probe["possible_agents"])
        obs, act, reward = (probe[f"{kind}_spaces"] for kind in ("observation", "action", "reward"))
        groups = group_agents(agents, obs.__getitem__, act.__getitem__, reward.get)
        why = slot_spaces_unsupported(groups, obs.__getitem__, act.__getitem__)
        if why is not None:
            raise VectorEnvError(self.name(), f"array_face=True needs fixed-size arrays, but {why}",
                                 "Leave array_face out: the array face is then built from the "
                                 "copies' dicts in this process.")
        layout = SlotLayout(self.num_envs, groups, obs.__getitem__, act.__getitem__, reward.get)
        self._slot_buffer = ctx.RawArray("B", layout.nbytes)
        return SlotArrays(layout, self._slot_buffer)

    # -- the synchronous calls: requests to every worker, every answer awaited ----------

    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        self._mask = self._reset_request(seed, options, "reset", "reset()")[0]
        self._pending = "reset"
        return self.reset_wait()

    def reset_async(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """Send the reset to the workers; :meth:`reset_wait` returns its results."""
        masked = options is not None and "reset_mask" in options
        if masked:
            self._book.check_face(DICTS, "reset_async()")
        self._mask = self._reset_request(seed, options, "reset", "reset()")[0]
        self._pending = "reset"
        if not masked:
            self._book.claim_face(DICTS)

    def reset_wait(self, timeout: Optional[float] = None) -> tuple[list[Any], list[Any]]:
        """Wait for the reset sent by :meth:`reset_async`; return ``(obs_list, infos_list)``."""
        got: dict[int, tuple[Any, ...]] = {}
        for answer in self._collect("reset", timeout):
            got.update(zip(answer[1], self._results(answer)))
        obs: list[Any] = []
        infos: list[Any] = []
        for i in range(self.num_envs):
            ob, info = got[i] if i in got else self._book.kept_by_masked_reset(i)
            obs.append(ob)
            infos.append(info)
        self._book.record_reset(obs, infos, self._mask)
        self._cycle.held(got)
        return obs, infos

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        self._step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Sequence[Any]) -> None:
        """Check the action list and send it; :meth:`step_wait` returns the results (raises as
        :meth:`step` does, before anything is sent)."""
        self._book.check_face(DICTS, "step_async()")
        self._step_async(actions)

    def _step_async(self, actions: Sequence[Any]) -> None:
        self._check_idle()
        self._cycle.check_idle("step()")
        checked = self._book.check_actions(actions)
        self._request("step", range(self.num_envs), lambda r, _, block: (
            block, list(checked[r.start:r.stop]), None))
        self._pending = "step"

    def step_wait(self, timeout: Optional[float] = None) -> tuple[list[Any], ...]:
        """Wait for the step sent by :meth:`step_async`; return the five per-copy lists."""
        results: list[tuple[Any, ...]] = []
        outcomes: list[int] = []
        read = self._shared.read if self._shared is not None else None
        for _, rows, block, payload in self._collect("step", timeout):
            for i, (sent, rewards, terminateds, truncateds, infos, outcome) in zip(rows, payload):
                obs = read(i, sent, block) if read is not None else sent
                results.append((obs, rewards, terminateds, truncateds, infos))
                outcomes.append(outcome)
        self._book.record_step(results, outcomes)
        return tuple(list(column) for column in zip(*results))

    # -- the array face in shared memory (array_face=True) ------------------------------

    def _reset_batch(self, seed: Any, options: Optional[dict[str, Any]]) -> Any:
        if self._slots is None:
            return super()._reset_batch(seed, options)
        if self._reset_request(seed, options, "reset_arrays", "reset_arrays()")[0] is None:
            self._masked = set()
        return self._array_batch("reset_arrays()")

    def _step_batch(self, actions: Any) -> Any:
        if self._slots is None:
            return super()._step_batch(actions)
        self._check_idle()
        self._cycle.check_idle("step_arrays()")
        self._write_actions(actions, None)  # checked against the flags the workers left
        self._request("step_arrays", range(self.num_envs), lambda *_: None)  # every copy
        return self._array_batch("step_arrays()")

    def _array_batch(self, call: str) -> Any:
        """Collect the workers' answers to ``call``; return the block's ArrayBatch."""
        self._pending = call
        infos: list[Any] = []
        for _, _, _, (worker_infos, masked) in self._collect(call):
            infos += worker_infos
            self._masked.update(masked)
        assert self._slots is not None
        return self._slots.batch(infos, sorted(self._masked), self.copy,
                                 self.autoreset_mode == SAME_STEP)

    # -- other calls ------------------------------------------------------------------

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every copy in its worker (or read the attribute), pickled."""
        self._check_idle()
        self._request("call", range(self.num_envs), lambda *_: (name, args, kwargs))
        self._pending = f"call({name!r})"
        return tuple(result for answer in self._collect(self._pending) for result in answer[3])

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every copy: one value each (a list or tuple), or the same."""
        self._check_idle()
        values = values_per_copy(self.name(), values, self.num_envs)
        self._request("setattr", range(self.num_envs),
                      lambda r, *_: (name, values[r.start:r.stop]))
        self._pending = f"set_attr({name!r})"
        self._collect(self._pending)

    def close_extras(self, timeout: float = CLOSE_SECONDS, terminate: bool = False,
                     **kwargs: Any) -> None:
        """End the workers (each closes its copies); those not gone within ``timeout`` s, or
        all at once with ``terminate``, are terminated."""
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close(timeout, terminate=terminate or self._pending is not None
                       or self._failure is not None)

    def processes(self) -> list[Any]:
        """Return the worker processes (``multiprocessing.Process`` objects)."""
        return list(self._pool.processes)


def _num_workers(name: str, num_workers: Any, num_envs: int) -> int:
    if num_workers is None:
        return max(1, min(num_envs, default_num_workers()))
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise VectorEnvError(name, f"num_workers must be an integer >= 1, got {num_workers!r}",
                             "Pass e.g. num_workers=2, or None for one per core.")
    return min(num_workers, num_envs)
