"""Many copies of a hub env in worker processes, observations through shared memory.

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
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.batched import group_agents
from marlhub.core import AgentID
from marlhub.errors import VectorEnvError, WorkerError
from marlhub.vector.base import (
    SAME_STEP,
    VectorMultiAgentEnv,
    adopt_ray_base,
    parse_autoreset_mode,
    reset_mask_of,
    seeds_for,
    values_per_copy,
)
from marlhub.vector.book import ARRAYS, DICTS, CopyBook
from marlhub.vector.copies import build_copy, check_env_fns, describe_env
from marlhub.vector.faces.group_actions import GroupActions
from marlhub.vector.ready import ReadyCopies, rows_of
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


class RemoteCopy:
    """The parent's view of a copy that lives in a worker: its agents and spaces.

    It stands in ``AsyncVectorMultiAgentEnv.envs`` where the sync env has the envs
    themselves, for code such as RLlib's env runner that reads
    ``envs[i].unwrapped.possible_agents`` and ``get_observation_space(agent)``.

    Attributes:
        index: the copy's index; ``worker``: the worker that holds it.
    """

    def __init__(self, index: int, worker: int, description: dict[str, Any]) -> None:
        self.index = index
        self.worker = worker
        self.possible_agents: list[AgentID] = description["possible_agents"]
        self.observation_spaces: dict[AgentID, gym.Space] = description["observation_spaces"]
        self.action_spaces: dict[AgentID, gym.Space] = description["action_spaces"]
        self.metadata: dict[str, Any] = description["metadata"]
        self.render_mode: Optional[str] = description["render_mode"]
        self.masks_binding: bool = description["masks_binding"]

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """Return the observation space of ``agent_id`` in this copy."""
        return self.observation_spaces[agent_id]

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """Return the action space of ``agent_id`` in this copy."""
        return self.action_spaces[agent_id]

    @property
    def unwrapped(self) -> "RemoteCopy":
        """The copy itself (RLlib reads ``envs[i].unwrapped``)."""
        return self

    def __repr__(self) -> str:
        return f"<RemoteCopy {self.index} in worker {self.worker} agents={self.possible_agents!r}>"


class AsyncVectorMultiAgentEnv(WorkerCycle, VectorMultiAgentEnv):
    """``num_envs`` copies of a hub env in ``num_workers`` worker processes.

    The same calls and results as :class:`~marlhub.vector.SyncVectorMultiAgentEnv`
    (copy ``i`` seeded ``seed + i``, identical copy by copy to envs made one by
    one), plus ``step_async``/``step_wait`` and ``reset_async``/``reset_wait``.
    Each worker holds a contiguous range of copies and steps them in turn; the
    parent checks every action list before sending it, so a bad action raises
    :class:`~marlhub.errors.ActionError` and no copy is stepped. Observations of
    fixed-size spaces travel through shared memory, the rest pickled.

    A copy that raises in its worker is re-raised as
    :class:`~marlhub.errors.WorkerError` naming the copy, with the worker's
    traceback (the original exception chained when it unpickles); ``reset()``
    goes on. A worker that dies raises :class:`~marlhub.errors.WorkerError` at
    once; then only ``close()`` is left. ``close()`` reaps every process, as do
    garbage collection and interpreter exit.

    Args:
        env_fns: functions that each make one copy; picklable with cloudpickle (the
            workers call them).
        num_workers: worker processes (default: the cores this process may use, at
            most ``num_envs``).
        shared_memory: send fixed-size observations through shared memory (needs the
            observation spaces: the first env_fn is called once here to read them).
        copy: return shared-memory observations the caller may keep (the default): views
            of one of three blocks, which no later call writes into while any view of it
            is alive, or copies when all are held. False: views valid until the next
            call, in one block (``recv_arrays``: views of the rows it returns where they
            are one run, valid until those copies are sent again).
        context: the ``multiprocessing`` start method (``"fork"``, ``"spawn"``,
            ``"forkserver"``); None for the platform's default. A worker runs torch on
            one thread where the parent had imported it (forked, torch's thread pool
            is not there; see :mod:`marlhub.vector.sources.worker`).
        daemon: start the workers as daemons (they cannot start processes then).
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        timeout: seconds to wait for the workers in each call (None: no limit; a dead
            worker is noticed either way).
        env_id: the registry id of the copies, for messages and ``repr``.
        check_masks: refuse masked-out actions before anything is sent (the default); see
            :class:`~marlhub.vector.SyncVectorMultiAgentEnv`.
        batch_size: how many copies :meth:`recv` returns (None: all of them).
        array_face: the workers fill the array face (:meth:`reset_arrays`,
            :meth:`step_arrays`, and ``AgentSlotVectorEnv`` over this env) straight into
            shared memory, one message per worker and call, no per-copy Python in this
            process (:mod:`marlhub.vector.sources.memory`); the observations must have a fixed
            size. Then use one face per episode: a ``reset`` or ``reset_arrays`` starts it.
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
        self._pending: Optional[str] = None
        self._failure: Optional[str] = None
        self._mask: Any = None
        ctx = multiprocessing.get_context(context)
        probe = _describe_first(self.env_fns) if shared_memory or array_face else None
        layout, buffers = self._shared_blocks(ctx, probe) if shared_memory else (None, None)
        self._slots = self._slot_block(ctx, probe) if array_face else None
        self.array_face = array_face
        self._masked: set[str] = set()  # groups of the array face that have shown a mask
        self._pool = WorkerPool(self.env_fns, self.num_workers, ctx, buffers, layout,
                                self.autoreset_mode, daemon,
                                (self._slots.layout, self._slot_buffer) if self._slots else None)
        # send()/async_reset() requests each worker has yet to answer, oldest first:
        # (what, copies, shared block)
        self._requests: list[deque[tuple[str, list[int], int]]] = [
            deque() for _ in range(self.num_workers)]
        try:
            descriptions = self._ready()
        except BaseException:
            self._pool.close(terminate=True)
            raise
        self._shared = SharedObs(layout, buffers, copy) if layout and buffers else None
        self._block = 0  # the block the call under way writes into
        self.envs = [RemoteCopy(i, w, d) for w, d, i in _numbered(self._pool.ranges, descriptions)]
        self._adopt_description(descriptions[0][0])
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
        """Lay out the shared array face from the first copy's spaces; raise when they do not
        fit it."""
        agents = list(probe["possible_agents"])
        obs, act = probe["observation_spaces"], probe["action_spaces"]
        groups = group_agents(agents, obs.__getitem__, act.__getitem__)
        why = slot_spaces_unsupported(groups, obs.__getitem__, act.__getitem__)
        if why is not None:
            raise VectorEnvError(self.name(), f"array_face=True needs fixed-size arrays, but {why}",
                                 "Leave array_face out: the array face is then built from the "
                                 "copies' dicts in this process.")
        layout = SlotLayout(self.num_envs, groups, obs.__getitem__, act.__getitem__)
        self._slot_buffer = ctx.RawArray("B", layout.nbytes)
        return SlotArrays(layout, self._slot_buffer)

    def _ready(self) -> list[list[dict[str, Any]]]:
        replies = self._pool.receive("start-up (building the envs)", self.timeout)
        for status, payload in replies:
            if status != "ok":
                raise self._pool.raised(payload, "start-up (building the envs)")
        return [payload for _, payload in replies]

    # -- reset ----------------------------------------------------------------------

    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        self._reset_async(seed, options)
        return self.reset_wait()

    def reset_async(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """Send the reset to the workers; :meth:`reset_wait` returns its results."""
        if options is not None and "reset_mask" in options:
            self._book.check_face(DICTS, "reset_async()")
        self._reset_async(seed, options)
        if options is None or "reset_mask" not in options:
            self._book.claim_face(DICTS)

    def _reset_async(self, seed: Any, options: Optional[dict[str, Any]]) -> None:
        self._check_idle()
        self._cycle.check_idle("reset()")
        seeds = seeds_for(self.name(), seed, self.num_envs)
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        self._mask = mask
        per_copy = [(seeds[i], rest) if mask is None or mask[i] else None
                    for i in range(self.num_envs)]
        block = self._block = self._shared.next_block() if self._shared is not None else 0
        self._pool.send([("reset", (block, per_copy[r.start:r.stop])) for r in self._pool.ranges])
        self._pending = "reset"

    def reset_wait(self, timeout: Optional[float] = None) -> tuple[list[Any], list[Any]]:
        """Wait for the reset sent by :meth:`reset_async`; return ``(obs_list, infos_list)``."""
        payloads = self._collect("reset", timeout)
        obs: list[Any] = []
        infos: list[Any] = []
        for i, payload in enumerate(payloads):
            if payload is None:
                ob, info = self._book.kept_by_masked_reset(i)
            else:
                ob = (self._shared.read(i, payload[0], self._block) if self._shared is not None
                      else payload[0])
                info = payload[1]
            obs.append(ob)
            infos.append(info)
        self._book.record_reset(obs, infos, self._mask)
        self._cycle.held(rows_of(self._mask, self.num_envs))
        return obs, infos

    # -- step -------------------------------------------------------------------------

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        self._step_async(actions)
        return self.step_wait()

    def step_async(self, actions: Sequence[Any]) -> None:
        """Check the action list and send it to the workers; :meth:`step_wait` returns the results.

        Raises:
            ActionError: the list's length, or one copy's action dict, is wrong (the
                copy and agent are named); nothing was sent to any worker.
            ResetNeededError: before ``reset``, or after a copy raised.
        """
        self._book.check_face(DICTS, "step_async()")
        self._step_async(actions)

    def _step_async(self, actions: Sequence[Any]) -> None:
        self._check_idle()
        self._cycle.check_idle("step()")
        actions = self._book.check_actions(actions)
        block = self._block = self._shared.next_block() if self._shared is not None else 0
        self._pool.send([("step", (block, list(actions[r.start:r.stop]), None))
                         for r in self._pool.ranges])
        self._pending = "step"

    def step_wait(self, timeout: Optional[float] = None) -> tuple[list[Any], ...]:
        """Wait for the step sent by :meth:`step_async`; return the five per-copy lists."""
        payloads = self._collect("step", timeout)
        shared, block = self._shared, self._block
        results = []
        outcomes = []
        for i, (sent, rewards, terminateds, truncateds, infos, outcome) in enumerate(payloads):
            obs = shared.read(i, sent, block) if shared is not None else sent
            results.append((obs, rewards, terminateds, truncateds, infos))
            outcomes.append(outcome)
        self._book.record_step(results, outcomes)
        obs_list, rewards_list, terminateds_list, truncateds_list, infos_list = (
            list(column) for column in zip(*results))
        return obs_list, rewards_list, terminateds_list, truncateds_list, infos_list

    # -- the array face in shared memory (array_face=True) ------------------------------

    def reset_arrays(self, *, seed: Any = None, options: Optional[dict[str, Any]] = None) -> Any:
        """Reset as :meth:`reset` does; return the :class:`~marlhub.vector.faces.arrays.ArrayBatch`.

        With ``array_face=True`` the workers write it into shared memory (copies of its
        arrays come back, or with ``copy=False`` views valid until the next call); else it
        is built from the copies' dicts here.
        """
        if self._slots is None:
            return super().reset_arrays(seed=seed, options=options)
        self._check_idle()
        self._cycle.check_idle("reset_arrays()")
        seeds = seeds_for(self.name(), seed, self.num_envs)
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        if mask is not None:
            self._book.check_face(ARRAYS, "reset_arrays()")
        self._pool.send([("reset_arrays", ([(seeds[i], rest) if mask is None or mask[i] else None
                                            for i in r], False)) for r in self._pool.ranges])
        self._book.claim_face(ARRAYS)
        if mask is None:
            self._masked = set()
        return self._array_batch("reset_arrays()")

    def step_arrays(self, actions: Any) -> Any:
        """Step with one action array per group (``(num_envs, n, ...)``; slots that do not act
        are ignored); return the :class:`~marlhub.vector.faces.arrays.ArrayBatch`.

        With ``array_face=True`` the actions are checked here, all at once, before any copy
        moves, and go to the workers through shared memory.

        Raises:
            VectorEnvError: a missing group, an array of the wrong shape or dtype, or (with
                ``array_face=True``) no ``reset_arrays`` since the last ``reset``.
            ActionError: an acting slot's action outside its space or mask.
        """
        if self._slots is None:
            return super().step_arrays(actions)
        self._check_idle()
        self._cycle.check_idle("step_arrays()")
        self._book.check_face(ARRAYS, "step_arrays()")
        binding = self._book.masks_binding[0]
        slots, checker = self._slots, self._group_actions
        masks = {name: slots.masks[name] for name in self._masked} if binding else {}
        checked = checker.check(actions, slots.flags["acting"], masks)  # as the workers left them
        for name, value in checked.items():
            slots.actions[name][...] = checker.host(name, value)
        self._pool.send([("step_arrays", None)] * self.num_workers)  # every copy
        return self._array_batch("step_arrays()")

    def _array_batch(self, call: str) -> Any:
        """Collect the workers' answers to ``call``; return the block's ArrayBatch."""
        self._pending = call
        infos: list[Any] = []
        for worker_infos, masked in self._collect_workers(call):
            infos += worker_infos
            self._masked.update(masked)
        slots = self._slots
        assert slots is not None
        return slots.batch(infos, sorted(self._masked), self.copy,
                           self.autoreset_mode == SAME_STEP)

    # -- other calls ------------------------------------------------------------------

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every copy in its worker (or read the attribute).

        The arguments and results travel pickled.
        """
        self._check_idle()
        self._pool.send([("call", (name, args, kwargs))] * self.num_workers)
        self._pending = f"call({name!r})"
        return tuple(self._collect(self._pending, None))

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every copy: one value each (a list or tuple), or the same."""
        self._check_idle()
        values = values_per_copy(self.name(), values, self.num_envs)
        self._pool.send([("setattr", (name, values[r.start:r.stop])) for r in self._pool.ranges])
        self._pending = f"set_attr({name!r})"
        self._collect(self._pending, None)

    def _collect(self, call: str, timeout: Optional[float]) -> list[Any]:
        """Wait for every worker's answer to ``call``; return one result per copy, in order."""
        return [result for payload in self._collect_workers(call, timeout) for result in payload]

    def _collect_workers(self, call: str, timeout: Optional[float] = None) -> list[Any]:
        """Wait for every worker's answer to ``call``; return each worker's payload."""
        if self.closed:
            self._check_idle()
        if self._pending != call:
            raise VectorEnvError(self.name(), f"{call.split('(')[0]}_wait() was called but no "
                                 f"{call} is under way (pending: {self._pending})",
                                 f"Call {call.split('(')[0]}_async() first.")
        try:
            replies = self._pool.receive(call, self.timeout if timeout is None else timeout)
        except WorkerError as exc:
            self._failure = (f"copy {exc.copy_index} (worker {exc.worker_index}) {exc.reason} "
                             f"during {call}")
            raise
        finally:
            self._pending = None
        failed = [payload for status, payload in replies if status != "ok"]
        if failed:
            error = self._pool.raised(min(failed, key=lambda p: p[0]), call)
            self._book.broken = (f"copy {error.copy_index} raised {error.exception_type} in the "
                                 f"last {call}, so the copies are out of step")
            raise error
        return [payload for _, payload in replies]

    def _check_idle(self) -> None:
        if self.closed:
            raise VectorEnvError(self.name(), "it was closed", "Make a new vector env; close() "
                                 "is final.")
        if self._failure is not None:
            raise VectorEnvError(self.name(), f"it cannot go on: {self._failure}",
                                 "close() it (which ends the workers) and make a new one.")
        if self._pending is not None:
            raise VectorEnvError(self.name(), f"a {self._pending} is under way",
                                 f"Call {self._pending.split('(')[0]}_wait() first.")

    def close_extras(self, timeout: float = CLOSE_SECONDS, terminate: bool = False,
                     **kwargs: Any) -> None:
        """End the workers: each closes its copies and leaves; stragglers are terminated.

        Args:
            timeout: seconds the workers get to leave on their own.
            terminate: end them at once, without asking.
        """
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


def _numbered(ranges: list[range], descriptions: list[list[dict[str, Any]]]) -> list[
        tuple[int, dict[str, Any], int]]:
    return [(w, d, r.start + k) for w, r in enumerate(ranges)
            for k, d in enumerate(descriptions[w])]


def _describe_first(env_fns: Sequence[Callable[[], Any]]) -> dict[str, Any]:
    """The first copy's description, from a copy made here once (for the shared layouts)."""
    probe = build_copy(env_fns[0], 0)
    try:
        return describe_env(probe)
    finally:
        probe.close()
