"""Many copies of a hub env, stepped one after another in this process.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> envs = SyncVectorMultiAgentEnv([RockPaperScissors] * 2)
    >>> obs, infos = envs.reset(seed=0)
    >>> len(obs), sorted(obs[1])
    (2, ['player1', 'player2'])
    >>> obs, rewards, terminateds, truncateds, infos = envs.step(
    ...     [{"player1": 0, "player2": 1}, {"player1": 2, "player2": 2}])
    >>> rewards
    [{'player1': -1.0, 'player2': 1.0}, {'player1': 0.0, 'player2': 0.0}]
    >>> envs.close()
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from copy import deepcopy
from typing import Any, Optional

import numpy as np

from marlhub.episode.play import action_space_getter
from marlhub.episode.prechecked import actions_prechecked
from marlhub.errors import VectorEnvError
from marlhub.spaces import masks_are_binding
from marlhub.vector.base import (
    VectorMultiAgentEnv,
    parse_autoreset_mode,
    reset_mask_of,
    seeds_for,
    values_per_copy,
)
from marlhub.vector.book import DICTS, CopyBook
from marlhub.vector.copies import EnvCopy, build_copy, check_env_fns, describe_env
from marlhub.vector.ready import ReadyCopies, Received, count_of, received, rows_of

__all__ = ["SyncVectorMultiAgentEnv"]


class SyncVectorMultiAgentEnv(VectorMultiAgentEnv):
    """``num_envs`` copies of a hub env in this process, stepped in order.

    Call-compatible with RLlib's ``SyncVectorMultiAgentEnv``: ``reset`` and
    ``step`` take and return lists of per-copy dicts; ``envs`` holds the copies.
    Copy ``i`` is seeded ``seed + i``; stepping the vector env is identical, copy
    by copy, to stepping the envs one by one. See
    :mod:`marlhub.vector.copies` for the autoreset modes.

    Args:
        env_fns: functions that each make one copy (any hub env).
        copy: deep-copy the observations returned (RLlib's option); the dicts are the
            copies' own, so this is needed only for envs that reuse their arrays.
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        env_id: the registry id of the copies, for messages and ``repr``.
        check_masks: refuse masked-out actions before any copy steps (the default).
            False leaves masks to the copies, for envs that take masked-out actions
            themselves (``to_rllib``'s ``illegal_action="terminate"``, say); envs whose
            masks are advice (:data:`~marlhub.spaces.ADVISORY_MASKS`) always decide alone.
        batch_size: how many copies :meth:`recv` returns (None: all of them).

    Raises:
        VectorEnvError: ``env_fns`` is empty or holds something not callable.
        ProtocolError: an env_fn made something that is no hub env.
    """

    def __init__(self, env_fns: Sequence[Callable[[], Any]], copy: bool = False,
                 autoreset_mode: Any = "next_step", *, env_id: Optional[str] = None,
                 check_masks: bool = True, batch_size: Optional[int] = None) -> None:
        self.closed = True  # until built: a failed constructor leaves nothing to close
        self.env_fns = check_env_fns(env_fns, type(self).__name__)
        self._cycle = ReadyCopies(type(self).__name__, len(self.env_fns), batch_size)
        self.copy = copy
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.env_id = env_id
        self.num_envs = len(self.env_fns)
        self.envs: list[Any] = []
        try:
            for i, fn in enumerate(self.env_fns):
                self.envs.append(build_copy(fn, i))
        except BaseException:
            for env in self.envs:
                env.close()
            raise
        self._copies = [EnvCopy(env, self.autoreset_mode) for env in self.envs]
        self._adopt_description(describe_env(self.envs[0]))
        self._book = CopyBook(self.name(), self.num_envs, self.autoreset_mode,
                              [env.possible_agents for env in self.envs],
                              [action_space_getter(env) for env in self.envs],
                              [check_masks and masks_are_binding(env) for env in self.envs],
                              self._cycle)
        self.closed = False

    # -- the source's calls: the faces are written once over them (marlhub.vector.base) --

    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        self._check_open()
        self._cycle.check_idle("reset()")
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        obs, infos = self._reset_copies(seed, mask, rest)
        self._book.record_reset(obs, infos, mask)
        self._cycle.held(rows_of(mask, self.num_envs))
        return (deepcopy(obs) if self.copy else obs), infos

    def _reset_copies(self, seed: Any, mask: Optional[np.ndarray],
                      rest: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        """Reset the copies ``mask`` selects (all for None) with the options ``rest``; return
        every copy's obs and infos (those of the others: what they keep)."""
        seeds = seeds_for(self.name(), seed, self.num_envs)
        obs: list[Any] = []
        infos: list[Any] = []
        for i, env_copy in enumerate(self._copies):
            if mask is None or mask[i]:
                ob, info = self._run(i, "reset", functools.partial(env_copy.reset, seeds[i], rest))
            else:
                ob, info = self._book.kept_by_masked_reset(i)
            obs.append(ob)
            infos.append(info)
        return obs, infos

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        if self.closed:
            self._check_open()
        self._cycle.check_idle("step()")
        actions = self._book.check_actions(actions)
        copies = self._copies
        results: list[tuple[Any, ...]] = []
        append = results.append
        i = 0
        try:
            with actions_prechecked():  # checked above: the copies do not check them again
                self._before_steps(range(self.num_envs), actions)
                for i, env_copy in enumerate(copies):
                    append(env_copy.step(actions[i]))
        except Exception as exc:
            self._broke(i, "step", exc)
            raise
        self._book.record_step(results, [env_copy.outcome for env_copy in copies])
        obs, rewards, terminateds, truncateds, infos = map(list, zip(*results))
        return (deepcopy(obs) if self.copy else obs), rewards, terminateds, truncateds, infos

    def _before_steps(self, rows: Sequence[int], actions: Sequence[Any]) -> None:
        """Called with checked actions before the copies ``rows`` step one after another
        (``actions[k]`` is copy ``rows[k]``'s): a subclass whose copies wait on others (the
        external env's) hands every copy its actions first, so that the waits overlap."""

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        mask, rest, rows = self._rows_to_reset(options, face)
        obs, infos = self._reset_copies(seed, mask, rest)
        self._cycle.start(rows)
        self._book.arrive_reset(rows, [obs[i] for i in rows], [infos[i] for i in rows])

    def _rows_to_reset(self, options: Optional[dict[str, Any]], face: str
                       ) -> tuple[Optional[np.ndarray], Optional[dict[str, Any]], list[int]]:
        """``async_reset``'s reset mask, options for the copies and rows, once the copies
        it resets are found resettable (in ``face``, which a reset of every copy claims)."""
        self._check_open()
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        rows = rows_of(mask, self.num_envs)
        call = "async_reset()" if face == DICTS else "async_reset_arrays()"
        if mask is None:
            self._cycle.check_idle(call)
            self._book.claim_face(face)
        else:
            self._book.check_face(face, call, cycle=True)
            self._cycle.check_resettable(rows)
        return mask, rest, rows

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        self._check_open()
        rows = self._cycle.check_send(copy_ids, count_of(self.name(), actions))
        checked = self._book.check_rows(actions, rows)
        copies, results = self._copies, []
        try:
            with actions_prechecked():
                for k, i in enumerate(rows):
                    results.append(copies[i].step(checked[k]))
        except Exception as exc:
            self._broke(rows[len(results)], "send", exc)
            raise
        self._cycle.start(rows)
        self._book.arrive_step(rows, results, [copies[i].outcome for i in rows])

    def _recv(self) -> Received:
        self._check_open()
        rows, results = self._cycle.take_some()
        return received(rows, results, copy=self.copy)

    def _run(self, i: int, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:
            self._broke(i, what, exc)
            raise

    def _broke(self, i: int, what: str, exc: Exception) -> None:
        self._book.broken = (f"copy {i} raised {type(exc).__name__} in the last {what}(), so the "
                             "copies are out of step")
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"Raised by copy {i} of {self.name()} in {what}(); reset() it to go on.")

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every copy with the arguments (or read the attribute)."""
        self._check_open()
        results = []
        for env in self.envs:
            attr = getattr(env, name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return tuple(results)

    def set_attr(self, name: str, values: Any) -> None:
        """Set attribute ``name`` of every copy: one value each (a list or tuple), or the same."""
        self._check_open()
        values = values_per_copy(self.name(), values, self.num_envs)
        for env, value in zip(self.envs, values):
            setattr(env, name, value)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy."""
        for env in getattr(self, "envs", []):
            env.close()

    def _check_open(self) -> None:
        if self.closed:
            raise VectorEnvError(self.name(), "it was closed",
                                 "Make a new vector env; close() is final.")
