"""The learner's side of external simulators: a hub vector env whose copies are concurrent episodes.

Each copy (an :class:`~marlhub.external.copies.ExternalCopy`) plays one
episode at a time, claimed from the simulators' started episodes in the
order they ask. ``step`` hands every copy its actions first and then takes
each copy's next request, so simulators answer side by side; ``recv()``
returns whichever ``batch_size`` copies have a request waiting, and
``send(actions, copy_ids)`` answers exactly those, never waiting on the
others: the natural face of simulators that decide at their own pace. The
autoreset modes, ``reset_mask``, the action checks (once, here) and the
list faces are the sync vector env's (:mod:`marlhub.vector.sources.in_process`).

Example:
    >>> import threading, gymnasium as gym
    >>> from marlhub.external.episodes import EpisodeBook
    >>> book = EpisodeBook(["a"], {"a": gym.spaces.Discrete(9)}, {"a": gym.spaces.Discrete(2)})
    >>> def simulator(first):  # two-step episodes, forever
    ...     try:
    ...         while True:
    ...             episode = book.start_episode()
    ...             book.get_action(episode, {"a": first})
    ...             book.end_episode(episode, {"a": first + 1})
    ...     except Exception:  # the learner closed the env
    ...         pass
    >>> for first in (2, 4):
    ...     threading.Thread(target=simulator, args=(first,), daemon=True).start()
    >>> envs = ExternalVectorEnv(book, 2, timeout=5.0, batch_size=1)
    >>> envs.async_reset()
    >>> obs, rewards, terminateds, truncateds, infos, copy_ids = envs.recv()
    >>> len(copy_ids), obs[0]["a"] in (2, 4)
    (1, True)
    >>> envs.close()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Optional

from marlhub.episode.prechecked import actions_prechecked
from marlhub.external.copies import DEFAULT_TIMEOUT, ExternalCopy
from marlhub.external.episodes import END, EpisodeBook
from marlhub.vector.autoreset import NEXT_STEP, SAME_STEP
from marlhub.vector.ready import RUNNING, Received, received
from marlhub.vector.sources.in_process import SyncVectorMultiAgentEnv

__all__ = ["ExternalVectorEnv"]


class ExternalVectorEnv(SyncVectorMultiAgentEnv):
    """``num_envs`` concurrent episodes of the simulators writing into ``book``.

    Args:
        book: the episodes (:class:`~marlhub.external.episodes.EpisodeBook`).
        num_envs: how many episodes the learner plays at once.
        timeout: seconds a copy waits for an episode (``reset``) or a request (``step``);
            a simulator that does not answer in time has its episode truncated.
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        batch_size: how many copies :meth:`recv` returns (None: all of them).
        env_id: the id the env was made from (``external/HOST:PORT``), for messages.
        waiting_for: says who should be calling in, for the time-out message.
        on_close: called once by :meth:`close` (stops the server or the simulator's thread).
    """

    #: Where the learner listens for simulators (``external/`` ids), else None.
    address: Optional[str] = None

    def __init__(self, book: EpisodeBook, num_envs: int, *, timeout: float = DEFAULT_TIMEOUT,
                 autoreset_mode: Any = NEXT_STEP, batch_size: Optional[int] = None,
                 env_id: Optional[str] = None, waiting_for: Callable[[], str] = lambda: "",
                 on_close: Optional[Callable[[], None]] = None) -> None:
        self.book = book
        self.timeout = float(timeout)
        self._on_close = on_close
        name = f"{type(self).__name__}({env_id + ', ' if env_id else ''}num_envs={num_envs})"
        makers = [_CopyMaker(book, i, self.timeout, name, waiting_for) for i in range(num_envs)]
        try:
            super().__init__(makers, autoreset_mode=autoreset_mode, env_id=env_id,
                             batch_size=batch_size)
        except BaseException:
            self._stop()
            raise
        self._resetting: set[int] = set()

    def _before_steps(self, rows: Sequence[int], actions: Sequence[Any]) -> None:
        for k, i in enumerate(rows):
            if not self._copies[i].ended:
                self.envs[i].deliver(actions[k])

    # -- whoever is ready first --------------------------------------------------------

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        """Let every copy (or those ``options["reset_mask"]`` selects) claim a new episode;
        :meth:`recv` returns each as soon as its first request is in."""
        self._check_open()
        mask, _, rows = self._book.start_reset(options, face)
        if mask is None:
            self._book.claim_face(face)
        for i in rows:
            self.envs[i].let_go(f"the learner reset copy {i} in the middle of the episode")
            self._resetting.add(i)
        self._cycle.start(rows)

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Answer the requests of exactly the copies ``copy_ids`` (``actions[k]`` for
        ``copy_ids[k]``); their next requests come from :meth:`recv`."""
        self._check_open()
        rows, checked = self._book.check_send(actions, copy_ids)
        with actions_prechecked():
            self._before_steps(rows, checked)
        self._cycle.start(rows)

    def _recv(self) -> Received:
        """The next :attr:`batch_size` copies whose simulators asked (fewer when the others
        do not ask within ``timeout``; :class:`~marlhub.errors.ExternalTimeoutError` when
        none does)."""
        self._check_open()
        cycle = self._cycle
        want = min(cycle.batch_size, cycle.running + cycle.ready_count())
        deadline = time.monotonic() + self.timeout
        while cycle.running and cycle.ready_count() < want:
            rows = self._ready_rows(deadline)
            if rows is None:
                break
            for i in rows:
                self._arrive(i)
        if not cycle.ready_count() and cycle.running:
            resetting = sorted(i for i in self._resetting if cycle.state[i] == RUNNING)
            raise self.envs[resetting[0] if resetting else 0].no_episode_error()
        rows, results = cycle.take()
        return received(rows, results, copy=self.copy)

    def _needs_episode(self, i: int) -> bool:
        env_copy = self._copies[i]
        return i in self._resetting or (env_copy.ended and self.autoreset_mode == NEXT_STEP)

    def _ready_rows(self, deadline: float) -> Optional[list[int]]:
        """The running copies whose results can be had without waiting; wait for one until
        ``deadline`` (None: none came)."""
        book, envs, state = self.book, self.envs, self._cycle.state
        same_step = self.autoreset_mode == SAME_STEP
        with book.changed:
            while True:
                free = book.claimable()  # started episodes that wait for a copy
                now = time.monotonic()
                rows: list[int] = []
                soonest = deadline  # the first time a copy's simulator is late
                for i, running in enumerate(state):
                    if running != RUNNING:
                        continue
                    if self._needs_episode(i):
                        if free > 0:
                            free -= 1
                            rows.append(i)
                        continue
                    env_copy = envs[i]
                    ready = env_copy.ready(now)
                    if ready and same_step and env_copy.episode.events \
                            and env_copy.episode.events[0].kind == END:
                        ready = free > 0  # it resets in the same call
                        free -= ready
                    if ready:
                        rows.append(i)
                    else:
                        soonest = min(soonest, env_copy.deadline)
                if rows:
                    return rows
                if now >= deadline:
                    return None
                book.changed.wait(max(0.0, soonest - now) + 1e-3)

    def _arrive(self, i: int) -> None:
        """Take copy ``i``'s results (they are in) into the cycle."""
        env_copy = self._copies[i]
        if i in self._resetting:
            self._resetting.discard(i)
            obs, infos = self._run(i, "reset", env_copy.reset)
            self._book.arrive_reset([i], [obs], [infos])
            return
        result = self._run(i, "recv", lambda: env_copy.step(None))
        self._book.arrive_step([i], [result], [env_copy.outcome])

    def close_extras(self, **kwargs: Any) -> None:
        """Drop the running episodes, close the book, and stop what feeds it."""
        super().close_extras(**kwargs)
        self._stop()

    def _stop(self) -> None:
        self.book.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


class _CopyMaker:
    """Makes copy ``index`` (an env_fn of the sync vector env)."""

    def __init__(self, book: EpisodeBook, index: int, timeout: float, name: str,
                 waiting_for: Callable[[], str]) -> None:
        self.book, self.index, self.timeout = book, index, timeout
        self.name, self.waiting_for = name, waiting_for

    def __call__(self) -> ExternalCopy:
        return ExternalCopy(self.book, timeout=self.timeout, index=self.index, name=self.name,
                            waiting_for=self.waiting_for)
