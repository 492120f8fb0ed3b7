"""The worker processes of an async vector env: start them, talk to them, notice deaths, reap them.

:meth:`WorkerPool.receive_any` waits on every pipe *and* every process's sentinel, so a
worker that dies (a segfault, ``kill -9``, the out-of-memory killer) is raised at once as
a :class:`~marlhub.errors.WorkerError` naming its copies. :meth:`WorkerPool.close` and a
``weakref.finalize`` reap every process: ask, then terminate, then kill.

Example:
    >>> split_copies(5, 2)
    [range(0, 3), range(3, 5)]
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
import weakref
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, Optional

import cloudpickle  # type: ignore[import-untyped]

from marlhub.errors import WorkerError
from marlhub.vector.sources.memory import ObsLayout
from marlhub.vector.sources.worker import SPIN_SECONDS, Reply, worker_main

__all__ = ["CLOSE_SECONDS", "WorkerPool", "default_num_workers", "describe_exit", "split_copies"]

#: How long close() waits for a worker to leave on its own before terminating it.
CLOSE_SECONDS = 5.0


def default_num_workers() -> int:
    """Return how many cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def split_copies(num_envs: int, num_workers: int) -> list[range]:
    """Split copies ``0 .. num_envs - 1`` into ``num_workers`` contiguous ranges, larger first."""
    size, extra = divmod(num_envs, num_workers)
    ranges, start = [], 0
    for w in range(num_workers):
        stop = start + size + (1 if w < extra else 0)
        ranges.append(range(start, stop))
        start = stop
    return ranges


def describe_exit(exitcode: Optional[int]) -> str:
    """Say how a process ended: ``"was killed by signal 9 (SIGKILL)"`` or ``"exited with code 1"``.

    Example:
        >>> describe_exit(-9), describe_exit(3)
        ('was killed by signal 9 (SIGKILL)', 'exited with code 3')
    """
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {-exitcode} ({name})"
    return f"exited with code {exitcode}"


class WorkerPool:
    """``num_workers`` processes running :func:`~marlhub.vector.sources.worker.worker_main`,
    each holding a contiguous range of the copies (``ranges``); the other arguments are
    passed on to it."""

    def __init__(self, env_fns: Sequence[Callable[[], Any]], num_workers: int, context: Any,
                 buffers: Optional[list[Any]], layout: Optional[ObsLayout],
                 autoreset_mode: str, daemon: bool = True,
                 slots: Optional[tuple[Any, Any]] = None) -> None:
        self.ranges = split_copies(len(env_fns), num_workers)
        # workers spin after answering only where they and the parent each have a core
        spin = SPIN_SECONDS if default_num_workers() > num_workers else 0.0
        self.processes: list[Any] = []
        self.conns: list[Connection] = []
        self._finalizer = weakref.finalize(self, reap, self.processes, self.conns, 1.0)
        for w, copies in enumerate(self.ranges):
            parent_end, child_end = context.Pipe()
            blob = cloudpickle.dumps([env_fns[i] for i in copies])
            process = context.Process(
                target=worker_main, name=f"marlhub-vector-worker-{w}", daemon=daemon,
                args=(w, copies.start, blob, child_end, buffers, layout, autoreset_mode,
                      os.getpid(), slots, spin))
            self.processes.append(process)
            self.conns.append(parent_end)
            process.start()
            child_end.close()

    def worker_of(self, copy_index: int) -> int:
        """Return the worker that holds ``copy_index``."""
        return next(w for w, r in enumerate(self.ranges) if copy_index in r)

    def send_to(self, w: int, message: tuple[str, Any]) -> None:
        """Send one request to worker ``w``."""
        try:
            self.conns[w].send(message)
        except (BrokenPipeError, EOFError, OSError):
            pass  # the worker is gone; the next receive says how

    def receive_any(self, workers: Sequence[int], call: str,
                    timeout: Optional[float] = None) -> list[tuple[int, Reply]]:
        """Wait until one of ``workers`` replies; return every reply in, by worker (raise
        :class:`WorkerError` when one died or none answered within ``timeout`` s)."""
        answered, ended = self._wait(set(workers), timeout)
        if not answered and not ended:
            raise self.error(min(workers), call, f"did not answer within {timeout:g} s",
                             "The vector env cannot go on: close() it (which ends the workers) "
                             "and make a new one, or give the call more time.")
        replies = []
        for w in workers:
            if w not in answered and w not in ended:
                continue
            try:
                if w in answered or self.conns[w].poll():  # an answer sent before it ended
                    replies.append((w, self.conns[w].recv()))
                    continue
            except (EOFError, OSError):
                pass
            raise self.died(w, call)
        return replies

    def check_alive(self, call: str) -> None:
        """Raise :class:`WorkerError` for the first worker whose process is gone."""
        for w, process in enumerate(self.processes):
            if not process.is_alive():
                raise self.died(w, call)

    def _wait(self, workers: set[int], timeout: Optional[float]) -> tuple[set[int], set[int]]:
        """Wait (up to ``timeout`` s) until one of ``workers`` has a reply or has ended; return
        those with a reply and those ended. One ``poll(2)``: cheaper than
        ``multiprocessing.connection.wait``, which is used where there is no ``select.poll``."""
        if not hasattr(select, "poll"):  # Windows
            ready = wait([self.conns[w] for w in workers]
                         + [self.processes[w].sentinel for w in workers], timeout=timeout)
            return ({w for w in workers if self.conns[w] in ready},
                    {w for w in workers if self.processes[w].sentinel in ready})
        poller, owners = select.poll(), {}
        for w in workers:
            for fd, what in ((self.conns[w].fileno(), True),
                             (self.processes[w].sentinel, False)):
                poller.register(fd, select.POLLIN)
                owners[fd] = (w, what)
        events = poller.poll(None if timeout is None else timeout * 1000.0)
        answered: set[int] = set()
        ended: set[int] = set()
        for fd, _ in events:
            w, is_pipe = owners[fd]
            (answered if is_pipe else ended).add(w)
        return answered, ended

    def died(self, w: int, call: str) -> WorkerError:
        """Return the error for worker ``w`` having died during ``call``."""
        process = self.processes[w]
        process.join(timeout=1.0)
        return self.error(
            w, call, f"is gone: its worker process {describe_exit(process.exitcode)}",
            "Its env may have crashed the interpreter (a segfault in native code), or the system "
            "killed it (out of memory, kill). The vector env cannot go on: close() it and make a "
            "new one.", exitcode=process.exitcode)

    def error(self, w: int, call: str, reason: str, fix: str, **fields: Any) -> WorkerError:
        """Return a :class:`WorkerError` about worker ``w`` (naming its first copy)."""
        copies = self.ranges[w]
        return WorkerError(copy_index=copies.start, worker_index=w, copies=list(copies),
                           call=call, reason=reason, fix=fix, **fields)

    def raised(self, payload: tuple[Any, ...], call: str) -> WorkerError:
        """Return the error for a copy that raised in its worker (``payload`` from the worker)."""
        copy_index, type_name, message, trace, pickled = payload
        w = self.worker_of(copy_index)
        error = WorkerError(copy_index=copy_index, worker_index=w, copies=list(self.ranges[w]),
                            call=call, reason=f"raised {type_name}: {message}",
                            exception_type=type_name, worker_traceback=trace)
        try:
            error.__cause__ = pickle.loads(pickled) if pickled is not None else None
        except Exception:  # not every exception comes back
            pass
        return error

    def close(self, timeout: float = CLOSE_SECONDS, terminate: bool = False) -> None:
        """End every worker (asking first, unless ``terminate``) and wait for each to be gone."""
        self._finalizer.detach()
        reap(self.processes, self.conns, 0.0 if terminate else timeout)


def reap(processes: list[Any], conns: list[Connection], timeout: float) -> None:
    """Ask each process to close, wait up to ``timeout`` s in all, then terminate, then kill."""
    for conn in conns:
        try:
            if not conn.closed and timeout > 0:
                conn.send(("close", None))
        except Exception:  # already gone
            pass
    deadline = time.monotonic() + timeout
    for process in processes:
        if process.pid is None:
            continue
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.terminate()
            process.join(timeout=1.0)
        if process.is_alive():
            process.kill()
            process.join()
    for conn in conns:
        conn.close()
