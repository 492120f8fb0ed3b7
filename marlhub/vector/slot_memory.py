"""The array face in shared memory: each group's arrays, one row per copy, filled by the workers.

An async vector env made with ``array_face=True`` lays out the arrays of an
:class:`~marlhub.vector.arrays.ArrayBatch` in one shared block, per group of
agents with the same spaces, as ``(num_envs, n, ...)`` numpy views:
observations (and the final observations of ``same_step``), rewards, done
flags, ``acting`` and ``alive``, action masks (groups with ``Discrete``
actions), the actions, and per copy the episode's flags. Each worker steps its
copies and writes their rows; the parent checks the action arrays at once,
writes them into the block and reads the results back: one message per worker
and call, and no per-copy Python in the parent. A worker fills its rows with
:class:`~marlhub.vector.arrays.DictArrays` (``out=`` its rows' views).

Observations must have a fixed size (``Box``, ``MultiBinary``, ``MultiDiscrete``,
``Discrete``, or a ``Dict`` of them); :func:`slot_spaces_unsupported` says why
others cannot.

Example:
    >>> import gymnasium as gym
    >>> box, coin = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(2)
    >>> layout = SlotLayout(3, {"agents": ["a", "b"]}, lambda a: box, lambda a: coin)
    >>> slots = SlotArrays(layout, bytearray(layout.nbytes))
    >>> slots.obs["agents"].shape, slots.masks["agents"].shape, slots.actions["agents"].dtype
    ((3, 2, 2), (3, 2, 2), dtype('int64'))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.vector.arrays import ArrayBatch, row_index
from marlhub.vector.shared import BlockLayout, obs_leaves

__all__ = ["SlotArrays", "SlotLayout", "slot_spaces_unsupported"]

#: The per-slot flags of a group, as bool arrays ``(num_envs, n)``.
_FLAGS = ("terminated", "truncated", "acting", "alive")


def slot_spaces_unsupported(groups: Mapping[str, Sequence[AgentID]],
                            observation_space: Callable[[AgentID], gym.Space],
                            action_space: Callable[[AgentID], gym.Space]) -> Optional[str]:
    """Why the groups' spaces cannot live in shared slots, or None when they can."""
    for name, members in groups.items():
        obs, act = observation_space(members[0]), action_space(members[0])
        if obs_leaves(obs) is None:
            return f"group {name!r} observes {obs}, which has no fixed size"
        if type(act) not in (gym.spaces.Discrete, gym.spaces.Box, gym.spaces.MultiDiscrete,
                             gym.spaces.MultiBinary):
            return f"group {name!r} acts in {act}, which is no array space"
    return None


class SlotLayout(BlockLayout):
    """Where each array of the array face lives in the shared block (see the module).

    Args:
        num_envs: how many copies.
        groups: group name -> agents.
        observation_space, action_space: each agent's spaces (one per group is read).

    Attributes:
        fields: ``(what, group, key) -> (offset, shape, dtype)``; ``what`` is one of
            ``obs``, ``final``, ``rewards``, the flags, ``mask``, ``actions``, and
            ``episode_terminated``, ``episode_truncated``, ``final_row`` (group None).
        nbytes: the block's size.
    """

    def __init__(self, num_envs: int, groups: Mapping[str, Sequence[AgentID]],
                 observation_space: Callable[[AgentID], gym.Space],
                 action_space: Callable[[AgentID], gym.Space]) -> None:
        why = slot_spaces_unsupported(groups, observation_space, action_space)
        if why is not None:
            raise ValueError(why)
        super().__init__()
        self.num_envs = num_envs
        self.groups = {name: list(members) for name, members in groups.items()}
        for name, members in self.groups.items():
            lead = (num_envs, len(members))
            leaves = obs_leaves(observation_space(members[0]))
            assert leaves is not None
            for key, shape, dtype in leaves:
                self.add(("obs", name, key), lead + shape, dtype)
                self.add(("final", name, key), lead + shape, dtype)
            self.add(("rewards", name, None), lead, np.dtype(np.float64))
            for flag in _FLAGS:
                self.add((flag, name, None), lead, np.dtype(np.bool_))
            act = action_space(members[0])
            if type(act) is gym.spaces.Discrete:
                self.add(("mask", name, None), lead + (int(act.n),), np.dtype(np.int8))
                self.add(("actions", name, None), lead, np.dtype(np.int64))
            else:
                self.add(("actions", name, None), lead + tuple(act.shape or ()),
                          np.dtype(act.dtype))
        for what in ("episode_terminated", "episode_truncated", "final_row"):
            self.add((what, None, None), (num_envs,), np.dtype(np.bool_))


class SlotArrays:
    """Numpy views of a :class:`SlotLayout` over ``buffer`` (a shared ``RawArray``).

    Attributes:
        obs, final: group -> observations (a dict of arrays for ``Dict`` spaces).
        rewards, masks, actions: group -> array; ``flags[flag][group]`` for each flag.
        episode_terminated, episode_truncated, final_row: ``(num_envs,)`` bools.
    """

    def __init__(self, layout: SlotLayout, buffer: Any) -> None:
        self.layout = layout
        views: dict[str, dict[Any, Any]] = {}
        for (what, name, key), view in layout.views(buffer).items():
            if key is None:
                views.setdefault(what, {})[name] = view
            else:
                views.setdefault(what, {}).setdefault(name, {})[key] = view
        self.obs: dict[str, Any] = views["obs"]
        self.final: dict[str, Any] = views["final"]
        self.rewards: dict[str, np.ndarray] = views["rewards"]
        self.masks: dict[str, np.ndarray] = views.get("mask", {})
        self.actions: dict[str, np.ndarray] = views["actions"]
        self.flags: dict[str, dict[str, np.ndarray]] = {flag: views[flag] for flag in _FLAGS}
        self.episode_terminated = views["episode_terminated"][None]
        self.episode_truncated = views["episode_truncated"][None]
        self.final_row = views["final_row"][None]
        for mask in self.masks.values():
            mask[...] = 1  # ones until a mask is seen, as the dict-built face has them

    def batch(self, infos: Sequence[Any], masked: Sequence[str], copy: bool,
              same_step: bool, rows: Optional[Sequence[int]] = None) -> ArrayBatch:
        """The :class:`~marlhub.vector.arrays.ArrayBatch` in the block: copies of its arrays,
        or (``copy=False``) views valid until the next call. ``masked``: the groups whose
        agents have shown a mask. ``rows``: these rows only (``recv_arrays``); with
        ``copy=False`` views when they are one ascending run (valid until these copies
        are sent again), else copies."""
        take: Callable[[Any], Any] = _copy if copy else _view
        ended = self.final_row
        if rows is not None:
            take = functools.partial(_rows, row_index(rows), copy)
            ended = take(ended)
        groups = self.layout.groups
        final = None
        if same_step and ended.any():
            final = {name: take(self.final[name]) for name in groups}
        return ArrayBatch(
            obs={name: take(self.obs[name]) for name in groups},
            rewards={name: take(self.rewards[name]) for name in groups},
            terminated={name: take(self.flags["terminated"][name]) for name in groups},
            truncated={name: take(self.flags["truncated"][name]) for name in groups},
            episode_terminated=take(self.episode_terminated),
            episode_truncated=take(self.episode_truncated),
            acting={name: take(self.flags["acting"][name]) for name in groups},
            alive={name: take(self.flags["alive"][name]) for name in groups},
            action_mask={name: take(self.masks[name]) for name in masked if name in self.masks},
            infos=list(infos), final_obs=final)


def _rows(rows: Any, copy: bool, value: Any) -> Any:
    """The rows ``rows`` (a :func:`row_index`) of an array or a dict of them: a list gathers a
    copy; a slice is a view, copied if ``copy``."""
    if isinstance(value, dict):
        return {k: _rows(rows, copy, v) for k, v in value.items()}
    return value[rows].copy() if copy and type(rows) is slice else value[rows]


def _copy(value: Any) -> Any:
    return {k: v.copy() for k, v in value.items()} if isinstance(value, dict) else value.copy()


def _view(value: Any) -> Any:
    return value
