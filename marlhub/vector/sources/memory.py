"""Shared memory for what the workers write: one offset table (:class:`BlockLayout`), two uses.

* The dict face (:class:`ObsLayout`, :class:`SharedObs`): each observation of a
  fixed-size space (``Box``, ``MultiBinary``, ``MultiDiscrete`` or a ``Dict`` of them)
  in a slot per copy and agent; only the agent ids go through the pipe. Anything else
  travels pickled, so the parent always returns what the env returned.
* The array face (:class:`SlotLayout`, :class:`SlotArrays`, ``array_face=True``): the
  arrays of an :class:`~marlhub.vector.faces.arrays.ArrayBatch` per group, and the
  actions. Each worker writes its copies' rows; the parent writes the checked actions
  and reads the rows back, one message per worker and call.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> layout = ObsLayout({"a": gym.spaces.Box(0, 1, (2,), np.float32),
    ...                     "b": gym.spaces.Discrete(3)}, num_copies=2)
    >>> layout.agents, layout.nbytes
    (['a'], 128)
    >>> memory = SharedObs(layout, [bytearray(layout.nbytes)])
    >>> sent = memory.write(1, {"b": 2, "a": np.ones(2, np.float32)})
    >>> sent
    (['b', 'a'], {'b': 2}, {})
    >>> memory.read(1, sent)
    {'b': 2, 'a': array([1., 1.], dtype=float32)}
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union, cast

import gymnasium as gym
import numpy as np

from marlhub.adapters.batched import reward_shape
from marlhub.core import AgentID
from marlhub.vector.faces.arrays import (
    ArrayBatch,
    Leaf,
    array_leaves,
    obs_leaves,
    row_index,
    tree_map,
)

__all__ = ["ALIGN", "LENT_BLOCKS", "BlockLayout", "ObsLayout", "SharedObs", "SlotArrays",
           "SlotLayout", "slot_spaces_unsupported"]

#: Every slot starts at a multiple of this many bytes.
ALIGN = 64

#: Blocks lent out as views besides block 0 (copied out of), when reads must be kept.
LENT_BLOCKS = 2

#: What a worker sends for one copy's obs dict: the dict itself when nothing went through
#: shared memory, else (agents in order, the obs pickled, Dict key orders of the env's own).
Sent = Union[dict[AgentID, Any],
             tuple[list[AgentID], dict[AgentID, Any], dict[AgentID, tuple[str, ...]]]]

class BlockLayout:
    """Where each named fixed-size array lives in one block: ``fields`` maps a name to
    ``(offset, shape, dtype)`` (offsets aligned to :data:`ALIGN`), ``nbytes`` is the size."""

    def __init__(self) -> None:
        self.fields: dict[Any, tuple[int, tuple[int, ...], np.dtype]] = {}
        self.nbytes = 0

    def add(self, name: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        """Lay out one more array, after the others."""
        self.fields[name] = (self.nbytes, shape, dtype)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.nbytes += -(-max(size, 1) // ALIGN) * ALIGN

    def views(self, buffer: Any) -> dict[Any, np.ndarray]:
        """Numpy views of every array over ``buffer`` (a buffer, or a uint8 array over one)."""
        memory = buffer if isinstance(buffer, np.ndarray) else \
            np.frombuffer(buffer, dtype=np.uint8, count=self.nbytes)
        return {name: memory[offset:offset + int(np.prod(shape, dtype=np.int64))
                             * dtype.itemsize].view(dtype).reshape(shape)
                for name, (offset, shape, dtype) in self.fields.items()}


class ObsLayout(BlockLayout):
    """A slot per copy and agent of fixed-size observation space (``spaces``: agent -> space),
    named ``(copy, agent, key)``; ``agents`` are those with a slot."""

    def __init__(self, spaces: Mapping[AgentID, gym.Space], num_copies: int) -> None:
        super().__init__()
        self.leaves: dict[AgentID, list[Leaf]] = {}
        for agent, space in spaces.items():
            leaves = array_leaves(space)
            if leaves is not None:
                self.leaves[agent] = leaves
        self.agents = list(self.leaves)
        self.num_copies = num_copies
        for copy in range(num_copies):
            for agent, leaves in self.leaves.items():
                for key, shape, dtype in leaves:
                    self.add((copy, agent, key), shape, dtype)


class _Block:
    """One block of shared memory: the views of every copy's and agent's slot in it."""

    __slots__ = ("memory", "views", "idle_refs")

    def __init__(self, layout: ObsLayout, buffer: Any) -> None:
        self.memory = np.frombuffer(buffer, dtype=np.uint8, count=layout.nbytes)
        flat = layout.views(self.memory)
        self.views: list[dict[AgentID, Union[np.ndarray, dict[str, np.ndarray]]]] = []
        for copy_index in range(layout.num_copies):
            per_agent: dict[AgentID, Union[np.ndarray, dict[str, np.ndarray]]] = {}
            for agent, leaves in layout.leaves.items():
                arrays = {key: flat[(copy_index, agent, key)] for key, _, _ in leaves}
                per_agent[agent] = arrays[None] if None in arrays else cast(Any, arrays)
            self.views.append(per_agent)
        # every view of the block refers to ``memory``: with none but ours alive, this count
        self.idle_refs = sys.getrefcount(self.memory)

    def idle(self) -> bool:
        """Whether no view of this block is alive but the block's own."""
        return sys.getrefcount(self.memory) == self.idle_refs


class SharedObs:
    """Write (in a worker) and read (in the parent) observations in shared ``buffers``.

    With ``copy=False`` :meth:`read` returns views valid until the next write. Else reads
    from block 0 are copies and reads from the others are lent views the caller may keep:
    :meth:`next_block` writes into no block while a view of it is alive (the reference
    count of the block's array tells). Dict observations come back in the env's key order.
    """

    def __init__(self, layout: ObsLayout, buffers: Sequence[Any], copy: bool = True) -> None:
        self.layout = layout
        self.copy = copy
        self.blocks = [_Block(layout, buffer) for buffer in buffers]

    def next_block(self) -> int:
        """Return the block the next call writes into: a lent one no view holds, else 0."""
        blocks = self.blocks
        for index in range(1, len(blocks)):
            if blocks[index].idle():
                return index
        return 0

    def write(self, copy_index: int, obs: Mapping[AgentID, Any], block: int = 0) -> Sent:
        """Write the observations that fit their slots; return what still has to be sent."""
        views = self.blocks[block].views[copy_index]
        inline: dict[AgentID, Any] = {}
        orders: dict[AgentID, tuple[str, ...]] = {}
        shared = False
        for agent, value in obs.items():
            slot = views.get(agent)
            if type(slot) is np.ndarray:
                if type(value) is np.ndarray and value.shape == slot.shape \
                        and value.dtype == slot.dtype:
                    slot[...] = value
                    shared = True
                    continue
            elif slot is not None and _fits(cast(Mapping[str, np.ndarray], slot), value):
                for key, array in value.items():
                    slot[key][...] = array
                if list(value) != list(slot):
                    orders[agent] = tuple(value)
                shared = True
                continue
            inline[agent] = value
        if not shared:
            return dict(obs)
        return list(obs), inline, orders

    def read(self, copy_index: int, sent: Sent, block: int = 0) -> dict[AgentID, Any]:
        """Return the obs dict a worker wrote for ``copy_index`` into ``block`` (``sent``: what
        :meth:`write` returned there)."""
        if isinstance(sent, dict):
            return sent
        order, inline, orders = sent
        views = self.blocks[block].views[copy_index]
        take = (None if not self.copy else np.ndarray.copy if block == 0 else np.ndarray.view)
        obs: dict[AgentID, Any] = {}
        for agent in order:
            if agent in inline:
                obs[agent] = inline[agent]
                continue
            slot = views[agent]
            if isinstance(slot, np.ndarray):
                obs[agent] = slot if take is None else take(slot)
            else:
                keys = orders.get(agent) or slot
                obs[agent] = {key: slot[key] if take is None else take(slot[key]) for key in keys}
        return obs


def _fits(slot: Mapping[str, np.ndarray], value: Any) -> bool:
    """Whether ``value`` is a dict of exactly the slot's arrays: keys, type, shape and dtype."""
    if type(value) is not dict or len(value) != len(slot):
        return False
    for key, array in value.items():
        view = slot.get(key)
        if view is None or type(array) is not np.ndarray or array.shape != view.shape \
                or array.dtype != view.dtype:
            return False
    return True


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
    """The arrays of the array face of ``num_envs`` copies of ``groups``, named ``(what,
    group, key)``: ``obs``, ``final``, ``rewards``, the flags, ``mask``, ``actions``, and
    (group None) ``episode_terminated``, ``episode_truncated``, ``final_row``."""

    def __init__(self, num_envs: int, groups: Mapping[str, Sequence[AgentID]],
                 observation_space: Callable[[AgentID], gym.Space],
                 action_space: Callable[[AgentID], gym.Space],
                 reward_space: Callable[[AgentID], Optional[gym.Space]] = lambda a: None) -> None:
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
            self.add(("rewards", name, None), lead + reward_shape(reward_space(members[0])),
                     np.dtype(np.float64))
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
    """Numpy views of a :class:`SlotLayout` over ``buffer``: ``obs``, ``final``, ``rewards``,
    ``masks``, ``actions`` by group, ``flags[flag][group]``, and the ``(num_envs,)`` bools
    ``episode_terminated``, ``episode_truncated``, ``final_row``."""

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
        """The :class:`~marlhub.vector.faces.arrays.ArrayBatch` in the block (of ``rows`` only,
        for ``recv_arrays``): copies, or with ``copy=False`` views where the rows are one
        run. ``masked``: the groups whose agents have shown a mask."""
        where = slice(None) if rows is None else row_index(rows)
        gather = type(where) is not slice  # a list of rows gathers a copy; a slice is a view

        def take(value: Any) -> Any:
            return tree_map(lambda array: array[where].copy() if copy and not gather
                            else array[where], value)

        ended = take(self.final_row)
        groups = self.layout.groups
        final = None
        if same_step and ended.any():
            final = {name: take(self.final[name]) for name in groups}
        per_group = {"obs": self.obs, "rewards": self.rewards, **self.flags}
        return ArrayBatch(
            **{field: {name: take(arrays[name]) for name in groups}
               for field, arrays in per_group.items()},
            episode_terminated=take(self.episode_terminated),
            episode_truncated=take(self.episode_truncated),
            action_mask={name: take(self.masks[name]) for name in masked if name in self.masks},
            infos=list(infos), final_obs=final)
