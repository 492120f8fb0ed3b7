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
from typing import Any, Optional, cast

import numpy as np

from marlhub.episode.play import action_space_getter
from marlhub.episode.prechecked import actions_prechecked
from marlhub.spaces import masks_are_binding
from marlhub.vector.base import (
    VectorMultiAgentEnv,
    parse_autoreset_mode,
    reset_mask_of,
    seeds_for,
    values_per_copy,
)
from marlhub.vector.book import CopyBook
from marlhub.vector.copies import EnvCopy, build_copy, check_env_fns, describe_env
from marlhub.vector.ready import ReadyCopies, Received, received, rows_of

__all__ = ["SyncVectorMultiAgentEnv"]


class SyncVectorMultiAgentEnv(VectorMultiAgentEnv):
    """``num_envs`` copies of a hub env in this process (``envs``), stepped in order.

    Call-compatible with RLlib's ``SyncVectorMultiAgentEnv``; copy ``i`` is seeded
    ``seed + i``, and each copy steps exactly as the env alone would.

    Args:
        env_fns: functions that each make one copy (any hub env).
        copy: deep-copy the observations returned (for envs that reuse their arrays).
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        env_id: the registry id of the copies, for messages and ``repr``.
        check_masks: refuse masked-out actions before any copy steps (the default); False
            leaves them to copies that take them (``to_rllib``'s ``illegal_action``).
        batch_size: how many copies :meth:`recv` returns (None: all of them).
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
        self._cycle.check_idle("reset()")
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        obs, infos = self._reset_copies(seed, mask, rest)
        self._book.record_reset(obs, infos, mask)
        self._cycle.held(rows_of(mask, self.num_envs))
        return (deepcopy(obs) if self.copy else obs), infos

    def _reset_copies(self, seed: Any, mask: Optional[np.ndarray],
                      rest: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        """Reset the copies ``mask`` selects (all for None); return every copy's obs and infos."""
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
        self._cycle.check_idle("step()")
        rows = range(self.num_envs)
        results = self._step_rows(rows, self._book.check_actions(actions), "step")
        self._book.record_step(results, [env_copy.outcome for env_copy in self._copies])
        obs, rewards, terminateds, truncateds, infos = map(list, zip(*results))
        return (deepcopy(obs) if self.copy else obs), rewards, terminateds, truncateds, infos

    def _step_rows(self, rows: Sequence[int], actions: Sequence[Any],
                   what: str) -> list[tuple[Any, ...]]:
        """Step the copies ``rows`` with their checked actions (``actions[k]`` for ``rows[k]``)."""
        copies, results = self._copies, cast(list[tuple[Any, ...]], [])
        append = results.append
        try:
            with actions_prechecked():  # checked: the copies do not check them again
                self._before_steps(rows, actions)
                for k, i in enumerate(rows):
                    append(copies[i].step(actions[k]))
        except Exception as exc:
            self._broke(rows[len(results)], what, exc)
            raise
        return results

    def _before_steps(self, rows: Sequence[int], actions: Sequence[Any]) -> None:
        """Before the copies ``rows`` step: a source whose copies wait on others (external
        simulators) hands every copy its actions first, so that the waits overlap."""

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        mask, rest, rows = self._book.start_reset(options, face)
        if mask is None:
            self._book.claim_face(face)
        obs, infos = self._reset_copies(seed, mask, rest)
        self._cycle.start(rows)
        self._book.arrive_reset(rows, [obs[i] for i in rows], [infos[i] for i in rows])

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        rows, checked = self._book.check_send(actions, copy_ids)
        results = self._step_rows(rows, checked, "send")
        self._cycle.start(rows)
        self._book.arrive_step(rows, results, [self._copies[i].outcome for i in rows])

    def _recv(self) -> Received:
        rows, results = self._cycle.take()
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
