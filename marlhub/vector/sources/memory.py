"""Shared memory for what the workers write: one offset table, laid out for either face.

:class:`BlockLayout` lays out named fixed-size arrays in one block, each aligned
to 64 bytes, and makes their numpy views. Every block the workers of an async
vector env write into is one:

* the dict face (:class:`ObsLayout`, :class:`SharedObs`): each agent's
  observation, when its space has a fixed shape and dtype (``Box``,
  ``MultiBinary``, ``MultiDiscrete``, or a ``Dict`` of them, such as OpenSpiel's
  ``observation`` + ``action_mask``), in a slot per copy and agent; only the
  agent ids go through the pipe, and the parent reads them back as copies, as
  views it lends out (kept safe from later writes while they live), or as views
  valid until the next call. Anything else (a ``Discrete`` int, text, an
  observation whose array does not match its space exactly) travels pickled, so
  what the parent returns is always what the env returned;
* the array face (:class:`SlotLayout`, :class:`SlotArrays`, ``array_face=True``):
  the arrays of an :class:`~marlhub.vector.faces.arrays.ArrayBatch` per group of agents
  with the same spaces, ``(num_envs, n, ...)``: observations (and the final
  observations of ``same_step``), rewards, done flags, ``acting`` and ``alive``,
  action masks (groups with ``Discrete`` actions), the actions, and per copy the
  episode's flags. Each worker steps its copies and writes their rows (with
  :class:`~marlhub.vector.faces.arrays.DictArrays`, ``out=`` its rows' views); the parent
  checks the action arrays at once, writes them into the block and reads the
  results back: one message per worker and call, no per-copy Python in the
  parent. Its observations must have a fixed size (``Discrete`` too);
  :func:`slot_spaces_unsupported` says why others cannot.

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
    >>> box, coin = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(2)
    >>> layout = SlotLayout(3, {"agents": ["a", "b"]}, lambda a: box, lambda a: coin)
    >>> slots = SlotArrays(layout, bytearray(layout.nbytes))
    >>> slots.obs["agents"].shape, slots.masks["agents"].shape, slots.actions["agents"].dtype
    ((3, 2, 2), (3, 2, 2), dtype('int64'))
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union, cast

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.vector.faces.arrays import ArrayBatch, Leaf, array_leaves, obs_leaves, row_index

__all__ = ["ALIGN", "LENT_BLOCKS", "BlockLayout", "ObsLayout", "SharedObs", "SlotArrays",
           "SlotLayout", "slot_spaces_unsupported"]

#: Every slot starts at a multiple of this many bytes.
ALIGN = 64

#: Blocks lent out as views besides block 0 (copied out of), when reads must be kept:
#: two let a loop that holds the last call's observations take views every call.
LENT_BLOCKS = 2

#: What a worker sends for one copy's obs dict: the dict itself when nothing went
#: through shared memory, else (the agents in order, the obs that did not, the key
#: order of Dict observations whose keys come in another order than their space's).
Sent = Union[dict[AgentID, Any],
             tuple[list[AgentID], dict[AgentID, Any], dict[AgentID, tuple[str, ...]]]]

class BlockLayout:
    """Where each named fixed-size array lives in one block of shared memory: the one offset
    table of every layout the workers write into (:class:`ObsLayout`, and the array face's
    :class:`SlotLayout`).

    Attributes:
        fields: name -> ``(offset, shape, dtype)``, in the order added; each array starts at
            a multiple of :data:`ALIGN` bytes.
        nbytes: the size of the whole block.

    Example:
        >>> layout = BlockLayout()
        >>> layout.add("a", (2,), np.dtype(np.float32)); layout.add("b", (3, 2), np.dtype(np.int8))
        >>> layout.fields["b"][0], layout.nbytes
        (64, 128)
        >>> views = layout.views(bytearray(layout.nbytes))
        >>> views["b"].shape, views["a"].dtype
        ((3, 2), dtype('float32'))
    """

    def __init__(self) -> None:
        self.fields: dict[Any, tuple[int, tuple[int, ...], np.dtype]] = {}
        self.nbytes = 0

    def add(self, name: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        """Lay out one more array, after the others."""
        self.fields[name] = (self.nbytes, shape, dtype)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        self.nbytes += -(-max(size, 1) // ALIGN) * ALIGN

    def views(self, buffer: Any) -> dict[Any, np.ndarray]:
        """Numpy views of every array over ``buffer``: anything with the buffer protocol, or
        a uint8 array over one (every view's ``base`` is then that array)."""
        memory = buffer if isinstance(buffer, np.ndarray) else \
            np.frombuffer(buffer, dtype=np.uint8, count=self.nbytes)
        return {name: _array_at(memory, offset, shape, dtype)
                for name, (offset, shape, dtype) in self.fields.items()}


def _array_at(memory: np.ndarray, offset: int, shape: tuple[int, ...],
              dtype: np.dtype) -> np.ndarray:
    count = int(np.prod(shape, dtype=np.int64))
    return memory[offset:offset + count * dtype.itemsize].view(dtype).reshape(shape)


class ObsLayout(BlockLayout):
    """Where each copy's and agent's observation lives in the shared block.

    Args:
        spaces: agent -> observation space (agents without fixed-size spaces are left out).
        num_copies: how many copies share the block.

    Attributes:
        agents: the agents with a slot.
        fields: ``(copy, agent, key) -> (offset, shape, dtype)`` (:class:`BlockLayout`).
    """

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
        # One view per copy, agent and array, made once: an array, or key -> array.
        self.views: list[dict[AgentID, Union[np.ndarray, dict[str, np.ndarray]]]] = []
        for copy_index in range(layout.num_copies):
            per_agent: dict[AgentID, Union[np.ndarray, dict[str, np.ndarray]]] = {}
            for agent, leaves in layout.leaves.items():
                arrays = {key: flat[(copy_index, agent, key)] for key, _, _ in leaves}
                per_agent[agent] = arrays[None] if None in arrays else cast(Any, arrays)
            self.views.append(per_agent)
        # Every view of the block refers to ``memory`` (numpy's base): with no view
        # but our own alive, its count is this.
        self.idle_refs = self._refs()

    def _refs(self) -> int:
        return sys.getrefcount(self.memory)

    def idle(self) -> bool:
        """Whether no view of this block is alive but the block's own."""
        return self._refs() == self.idle_refs


class SharedObs:
    """Write (in a worker) and read (in the parent) observations in shared blocks.

    With one block, :meth:`read` returns copies or, with ``copy=False``, views
    valid until the next write. With more (the async vector env's ``copy=True``),
    reads from block 0 are copies and reads from the others are lent: views the
    caller may keep, as safe as copies, because :meth:`next_block` sends no write
    to a block while a view of it is alive anywhere (numpy's views all refer to
    the block's array, so its reference count tells).

    A ``Dict`` observation whose keys come in another order than its space's
    (gymnasium sorts them) is read back in the env's order.

    Args:
        layout: the blocks' :class:`ObsLayout`.
        buffers: the blocks (each anything with the buffer protocol, e.g. a ``RawArray``).
        copy: whether :meth:`read` returns arrays the caller may keep (True) or views
            into the block, valid until the next write.

    Example:
        >>> layout = ObsLayout({"a": gym.spaces.Box(0, 1, (2,), np.float32)}, num_copies=1)
        >>> memory = SharedObs(layout, [bytearray(layout.nbytes) for _ in range(3)])
        >>> block = memory.next_block()
        >>> kept = memory.read(0, memory.write(0, {"a": np.ones(2, np.float32)}, block), block)
        >>> memory.next_block() != block  # block is lent while ``kept`` holds a view of it
        True
        >>> del kept
        >>> memory.next_block() == block
        True
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
        """Return the obs dict a worker wrote for ``copy_index`` into ``block``.

        Args:
            copy_index: the copy.
            sent: what the worker sent for it (:meth:`write`'s result).
            block: the block the worker wrote into.
        """
        if isinstance(sent, dict):
            return sent
        order, inline, orders = sent
        views = self.blocks[block].views[copy_index]
        # A copy, a new view (lent: it keeps the block from being written), or our own view.
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
        """The :class:`~marlhub.vector.faces.arrays.ArrayBatch` in the block: copies of its arrays,
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
