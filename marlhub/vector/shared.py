"""Observations through shared memory: a slot per copy and agent for every fixed-size space.

An async vector env's workers write each agent's observation into a block
of shared memory, when its space has a fixed shape and dtype (``Box``,
``MultiBinary``, ``MultiDiscrete``, or a ``Dict`` of them, such as
OpenSpiel's ``observation`` + ``action_mask``), and send only the agent ids
through the pipe; the parent reads them back: as copies, as views it lends
out (kept safe from later writes while they live), or as views valid until
the next call (:class:`SharedObs`). Anything else (a ``Discrete`` int, text,
an observation whose array does not match its space exactly) travels
pickled, so what the parent returns is always what the env returned.

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
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union, cast

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID

__all__ = ["ALIGN", "LENT_BLOCKS", "BlockLayout", "ObsLayout", "SharedObs", "array_leaves",
           "obs_leaves"]

#: Every slot starts at a multiple of this many bytes.
ALIGN = 64

#: Blocks lent out as views besides block 0 (copied out of), when reads must be kept:
#: two let a loop that holds the last call's observations take views every call.
LENT_BLOCKS = 2

#: One array of a slot: (key in a Dict observation or None, shape, dtype).
Leaf = tuple[Optional[str], tuple[int, ...], np.dtype]

#: What a worker sends for one copy's obs dict: the dict itself when nothing went
#: through shared memory, else (the agents in order, the obs that did not, the key
#: order of Dict observations whose keys come in another order than their space's).
Sent = Union[dict[AgentID, Any],
             tuple[list[AgentID], dict[AgentID, Any], dict[AgentID, tuple[str, ...]]]]

_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)


def array_leaves(space: gym.Space) -> Optional[list[Leaf]]:
    """Return the fixed-size arrays an observation of ``space`` is made of, or None.

    Example:
        >>> array_leaves(gym.spaces.Box(0, 1, (3,), np.float32))
        [(None, (3,), dtype('float32'))]
        >>> array_leaves(gym.spaces.Discrete(3)) is None
        True
    """
    if type(space) in _ARRAY_SPACES:
        return [(None, tuple(space.shape or ()), np.dtype(space.dtype))]
    if type(space) is gym.spaces.Dict and space.spaces:
        leaves: list[Leaf] = []
        for key, sub in space.spaces.items():
            if type(sub) not in _ARRAY_SPACES or not isinstance(key, str):
                return None
            leaves.append((key, tuple(sub.shape or ()), np.dtype(sub.dtype)))
        return leaves
    return None


def obs_leaves(space: gym.Space) -> Optional[list[Leaf]]:
    """:func:`array_leaves`, and a ``Discrete`` observation as one int64 (the array face's
    layout of an observation; None when it has no fixed size).

    Example:
        >>> obs_leaves(gym.spaces.Discrete(3))
        [(None, (), dtype('int64'))]
    """
    if type(space) is gym.spaces.Discrete:
        return [(None, (), np.dtype(np.int64))]
    return array_leaves(space)


class BlockLayout:
    """Where each named fixed-size array lives in one block of shared memory: the one offset
    table of every layout the workers write into (:class:`ObsLayout`, and the array face's
    :class:`~marlhub.vector.slot_memory.SlotLayout`).

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
        return {name: _view(memory, offset, shape, dtype)
                for name, (offset, shape, dtype) in self.fields.items()}


def _view(memory: np.ndarray, offset: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
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
