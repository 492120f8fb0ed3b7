"""The worker process of an async vector env: it holds some copies and answers the parent.

:func:`worker_main` builds its copies, sends their descriptions, then answers one request
at a time (``reset``, ``step``, ``call``, ``setattr``, ``close``; ``reset_arrays`` and
``step_arrays`` of the shared array face, :class:`WorkerArrays`) with ``("ok", [one result
per copy])`` or ``("error", (copy, type, message, traceback, pickled exception))``.
Observations that fit the shared blocks are written there, the rest pickled. A worker
ignores Ctrl-C, leaves when its parent is gone, and runs torch on one thread.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any, Optional

import cloudpickle  # type: ignore[import-untyped]
import gymnasium as gym
import numpy as np

from marlhub.episode.play import action_space_getter
from marlhub.rewards import reward_space_of
from marlhub.episode.prechecked import actions_prechecked
from marlhub.vector.autoreset import ENDED_AND_RESET, SAME_STEP
from marlhub.vector.book import CopyBook
from marlhub.vector.copies import EnvCopy, build_copy, describe_env
from marlhub.vector.faces.arrays import ArrayBatch, DictArrays, tree_map
from marlhub.vector.ready import spread
from marlhub.vector.sources.memory import ObsLayout, SharedObs, SlotArrays, SlotLayout

__all__ = ["PARENT_CHECK_SECONDS", "Reply", "SPIN_SECONDS", "WorkerArrays", "worker_main"]

#: How often an idle worker checks that its parent is still there.
PARENT_CHECK_SECONDS = 1.0

#: How long a worker that has just answered polls its pipe before it sleeps on it, so that
#: a fast parent finds it awake; only where the parent and every worker have a core (on
#: 2 cores, 2 workers spinning took the parent's: 0.34 to 0.41 of the serial loop on Kuhn
#: poker against 0.43 not spinning).
SPIN_SECONDS = 100e-6

#: ``("ok", results)`` or ``("error", (copy, type name, message, traceback, pickled))``.
Reply = tuple[str, Any]

#: Calls that have their own request; ``call()`` refuses them.
_OWN_REQUESTS = ("reset", "step", "close")


def worker_main(worker_index: int, first_copy: int, env_fns: bytes, conn: Connection,
                buffers: Optional[list[Any]], layout: Optional[ObsLayout], autoreset_mode: str,
                parent_pid: int, slots: Optional[tuple[SlotLayout, Any]] = None,
                spin_seconds: float = 0.0) -> None:
    """Build this worker's copies (``env_fns``, cloudpickled; the first is copy
    ``first_copy``), then answer the parent on ``conn`` until it says close or its process
    (``parent_pid``) is gone. ``buffers`` and ``layout``: the shared observations;
    ``slots``: the shared array face; ``spin_seconds``: see :data:`SPIN_SECONDS`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch = sys.modules.get("torch")  # forked, torch's OpenMP pool has no threads: use none
    if torch is not None:
        torch.set_num_threads(1)
    copies: list[EnvCopy] = []
    try:
        fns: Sequence[Callable[[], Any]] = cloudpickle.loads(env_fns)
        for k, fn in enumerate(fns):
            copies.append(EnvCopy(build_copy(fn, first_copy + k), autoreset_mode))
        shared = SharedObs(layout, buffers) if layout is not None and buffers else None
        arrays = WorkerArrays(copies, first_copy, SlotArrays(*slots), autoreset_mode) \
            if slots is not None else None
        conn.send(("ok", [describe_env(c.env) for c in copies]))
    except BaseException as exc:  # the parent raises it, naming the copy
        _send(conn, ("error", _error_of(first_copy + len(copies), exc)), first_copy)
        _close_all(copies)
        return
    try:
        _serve(conn, copies, first_copy, shared, parent_pid, arrays, spin_seconds)
    finally:
        _close_all(copies)


def _serve(conn: Connection, copies: list[EnvCopy], first_copy: int,
           shared: Optional[SharedObs], parent_pid: int,
           arrays: Optional[WorkerArrays] = None, spin_seconds: float = 0.0) -> None:
    while True:
        if not _spin(conn, spin_seconds) and not conn.poll(PARENT_CHECK_SECONDS):
            if os.getppid() != parent_pid:
                return  # the parent is gone
            continue
        try:
            command, data = conn.recv()
        except (EOFError, OSError):
            return
        if command == "close":
            _close_all(copies)
            _send(conn, ("ok", None), first_copy)
            return
        if command in ("reset_arrays", "step_arrays") and arrays is not None:
            try:  # ("ok", (infos, groups that showed a mask))
                answer = arrays.reset(*data) if command == "reset_arrays" else arrays.step(data)
                reply = "ok", answer
            except Exception as exc:
                reply = "error", _error_of(first_copy + arrays.current, exc)
        else:
            reply = _answer(command, data, copies, first_copy, shared)
        if not _send(conn, reply, first_copy):
            return


def _answer(command: str, data: Any, copies: list[EnvCopy], first_copy: int,
            shared: Optional[SharedObs]) -> Reply:
    results: list[Any] = []
    k = 0
    try:
        if command == "step":  # the parent checked the actions: the copies do not again
            block, actions, rows = data  # rows: the copies to step (send()), None for all
            with actions_prechecked():
                for n, k in enumerate(range(len(copies)) if rows is None else rows):
                    env_copy = copies[k]
                    obs, rewards, terminateds, truncateds, infos = env_copy.step(actions[n])
                    sent = shared.write(first_copy + k, obs, block) if shared is not None \
                        else obs
                    results.append((sent, rewards, terminateds, truncateds, infos,
                                    env_copy.outcome))
        elif command == "reset":
            block, resets = data
            for k, env_copy in enumerate(copies):
                if resets[k] is None:  # left alone by a reset_mask
                    results.append(None)
                    continue
                obs, infos = env_copy.reset(*resets[k])
                results.append((shared.write(first_copy + k, obs, block)
                                if shared is not None else obs, infos))
        elif command == "call":
            name, args, kwargs = data
            if name in _OWN_REQUESTS:
                raise ValueError(f"call({name!r}) is refused: use the vector env's {name}() "
                                 "itself")
            for k, env_copy in enumerate(copies):
                attr = getattr(env_copy.env, name)
                results.append(attr(*args, **kwargs) if callable(attr) else attr)
        elif command == "setattr":
            name, values = data
            for k, env_copy in enumerate(copies):
                setattr(env_copy.env, name, values[k])
                results.append(None)
        else:
            raise ValueError(f"unknown request {command!r}")
    except Exception as exc:
        return "error", _error_of(first_copy + k, exc)
    return "ok", results


def _spin(conn: Connection, seconds: float) -> bool:
    """Poll ``conn`` without sleeping for up to ``seconds``; tell whether a request came."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if conn.poll():
            return True
    return False


def _error_of(copy_index: int, exc: BaseException) -> tuple[Any, ...]:
    pickled: Optional[bytes] = None
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)  # exceptions with their own __init__ may not come back
        pickled = data
    except Exception:
        pass
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return copy_index, type(exc).__name__, str(exc), trace, pickled


def _send(conn: Connection, reply: Reply, first_copy: int) -> bool:
    """Send ``reply``; a result that does not pickle becomes an error; False if the pipe is gone."""
    try:
        conn.send(reply)
    except (BrokenPipeError, EOFError, OSError):
        return False
    except Exception as exc:  # e.g. a call() result that does not pickle
        try:
            conn.send(("error", _error_of(first_copy, exc)))
        except Exception:
            return False
    return True


def _close_all(copies: list[EnvCopy]) -> None:
    while copies:
        env_copy = copies.pop()
        try:
            env_copy.env.close()
        except Exception:  # closing is best effort; the process ends anyway
            pass


class WorkerArrays:
    """The rows of the worker's ``copies`` (the first is copy ``first``) in the shared array
    face ``slots``: it steps the copies with the actions the parent checked and wrote there,
    and writes their rows with :class:`~marlhub.vector.faces.arrays.DictArrays`; only their
    infos go back. ``current``: the copy under way, for errors."""

    def __init__(self, copies: Sequence[EnvCopy], first: int, slots: SlotArrays,
                 autoreset_mode: str) -> None:
        envs = [c.env for c in copies]
        self.copies = list(copies)
        self.rows = slice(first, first + len(copies))
        self.slots = slots
        self.book = CopyBook(f"copies {first} to {first + len(copies) - 1}", len(copies),
                             autoreset_mode, [e.possible_agents for e in envs],
                             [action_space_getter(e) for e in envs])
        first_env = envs[0]
        self.face = DictArrays(len(copies), slots.layout.groups, first_env.get_observation_space,
                               first_env.get_action_space, "",
                               lambda agent: reward_space_of(first_env, agent))
        self.same_step = autoreset_mode == SAME_STEP
        self.out = _rows_of(slots, self.rows, self.same_step)
        # Discrete actions go to the copies as ints, as the vector env's own check passes them on
        self.discrete = {name for name, space in self.face.action_spaces.items()
                         if type(space) is gym.spaces.Discrete}
        self.current = 0

    def reset(self, resets: Sequence[Optional[tuple[Any, Any]]],
              only: bool = False) -> tuple[list[Any], list[str]]:
        """Reset the copies with ``(seed, options)`` (None: left alone); write their rows
        (``only``: only those reset); return their infos and the groups that showed a mask."""
        which = [k for k, how in enumerate(resets) if how is not None] if only else None
        obs: list[Any] = []
        infos: list[Any] = []
        for self.current, (env_copy, how) in enumerate(zip(self.copies, resets)):
            if how is None:
                if only:
                    continue
                ob, info = self.book.kept_by_masked_reset(self.current)
            else:
                ob, info = env_copy.reset(*how)
            obs.append(ob)
            infos.append(info)
        mask = None if all(how is not None for how in resets) else \
            np.array([how is not None for how in resets])
        rows = range(len(resets)) if which is None else which
        self.book.record_reset(spread(rows, obs, len(resets)), spread(rows, infos, len(resets)),
                               mask)
        self.face.reset(obs, infos, self.book.actors, None if only else mask, out=self.out,
                        rows=which)
        self.slots.final_row[self._global(which)] = False
        return infos, list(self.face.mask_size)

    def step(self, which: Optional[Sequence[int]] = None) -> tuple[list[Any], list[str]]:
        """Step the copies (``which``: only those) with their action rows; write their rows;
        return their infos and the groups that showed a mask."""
        values = {name: actions[self.rows].tolist() if name in self.discrete else
                  actions[self.rows] for name, actions in self.slots.actions.items()}
        slot, copies, actors = self.face.slot, self.copies, self.book.actors
        results = []
        with actions_prechecked():
            for self.current in range(len(copies)) if which is None else which:
                action_dict = {}
                for agent in actors[self.current]:
                    name, j = slot[agent]
                    value = values[name][self.current][j]
                    action_dict[agent] = value.copy() if type(value) is np.ndarray else value
                results.append(copies[self.current].step(action_dict))
        stepped = copies if which is None else [copies[k] for k in which]
        self.book.record_step(results, [c.outcome for c in stepped], which)
        columns = tuple(list(column) for column in zip(*results))
        out = self.out
        self.face.step(columns, self.book.actors, self.book.outcomes, out=out, rows=which)
        if self.same_step:  # the rows that hold final observations
            self.slots.final_row[self._global(which)] = [c.outcome == ENDED_AND_RESET
                                                         for c in stepped]
        return columns[4], list(self.face.mask_size)

    def _global(self, which: Optional[Sequence[int]]) -> Any:
        """The shared rows of the copies ``which`` (None: all of this worker's)."""
        return self.rows if which is None else [self.rows.start + k for k in which]


def _rows_of(slots: SlotArrays, rows: slice, same_step: bool) -> ArrayBatch:
    """Views of the rows ``rows`` of every array of ``slots``, as a batch to fill."""
    def view(value: Any) -> Any:
        return tree_map(lambda array: array[rows], value)

    return ArrayBatch(
        obs=view(slots.obs), rewards=view(slots.rewards),
        **{flag: view(arrays) for flag, arrays in slots.flags.items()},
        episode_terminated=slots.episode_terminated[rows],
        episode_truncated=slots.episode_truncated[rows], action_mask=view(slots.masks),
        final_obs=view(slots.final) if same_step else None)
