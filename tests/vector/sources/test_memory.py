"""Observations through shared memory: what fits goes there, the rest as it was, order kept."""

from __future__ import annotations

from collections import OrderedDict

import gymnasium as gym
import numpy as np

from marlhub.contract.compare import why_different
from marlhub.vector.faces.arrays import array_leaves
from marlhub.vector.sources.memory import ObsLayout, SharedObs

BOX = gym.spaces.Box(0.0, 1.0, (2, 3), np.float32)
OPEN_SPIEL_LIKE = gym.spaces.Dict(OrderedDict(
    observation=gym.spaces.Box(0.0, 1.0, (4,), np.float32),
    action_mask=gym.spaces.Box(0, 1, (3,), np.int8)))


def _memory(spaces: dict, copies: int = 2, copy: bool = True, blocks: int = 1) -> SharedObs:
    layout = ObsLayout(spaces, copies)
    return SharedObs(layout, [bytearray(layout.nbytes) for _ in range(blocks)], copy=copy)


def test_array_spaces_and_dicts_of_them_get_slots() -> None:
    assert array_leaves(gym.spaces.MultiBinary(4)) == [(None, (4,), np.dtype(np.int8))]
    assert array_leaves(gym.spaces.MultiDiscrete([2, 3]))[0][1] == (2,)
    assert [leaf[0] for leaf in array_leaves(OPEN_SPIEL_LIKE)] == ["observation", "action_mask"]
    for space in (gym.spaces.Discrete(3), gym.spaces.Text(4), gym.spaces.Tuple([BOX]),
                  gym.spaces.Dict({"a": gym.spaces.Discrete(2)})):
        assert array_leaves(space) is None
    layout = ObsLayout({"a": BOX, "b": gym.spaces.Discrete(2)}, 3)
    assert layout.agents == ["a"] and layout.nbytes % 64 == 0


def test_what_is_read_back_is_what_was_written_copy_by_copy() -> None:
    memory = _memory({"a": BOX, "b": OPEN_SPIEL_LIKE})
    obs0 = {"b": {"action_mask": np.array([1, 0, 1], np.int8),  # another key order
                  "observation": np.arange(4, dtype=np.float32)},
            "a": np.full((2, 3), 0.5, np.float32)}
    obs1 = {"a": np.zeros((2, 3), np.float32)}
    sent0, sent1 = memory.write(0, obs0), memory.write(1, obs1)
    assert sent0 == (["b", "a"], {}, {"b": ("action_mask", "observation")})
    assert why_different(memory.read(0, sent0), obs0) is None
    assert why_different(memory.read(1, sent1), obs1) is None


def test_values_that_do_not_fit_exactly_travel_as_they_are() -> None:
    memory = _memory({"a": BOX})
    for value in (np.zeros((2, 3), np.float64), np.zeros((3, 2), np.float32), [[0.0] * 3] * 2,
                  {"x": 1}):
        obs = {"a": value}
        assert memory.write(0, obs) == obs
    mixed = {"z": 3, "a": np.ones((2, 3), np.float32)}
    sent = memory.write(1, mixed)
    assert sent == (["z", "a"], {"z": 3}, {})
    assert why_different(memory.read(1, sent), mixed) is None


def test_copies_or_views() -> None:
    memory = _memory({"a": BOX}, copy=False)
    sent = memory.write(0, {"a": np.ones((2, 3), np.float32)})
    first = memory.read(0, sent)["a"]
    memory.write(0, {"a": np.zeros((2, 3), np.float32)})
    assert first.sum() == 0  # a view: overwritten by the next write
    memory.copy = True
    kept = memory.read(0, sent)["a"]
    memory.write(0, {"a": np.ones((2, 3), np.float32)})
    assert kept.sum() == 0


def test_a_lent_block_is_written_again_only_when_no_view_of_it_lives() -> None:
    memory = _memory({"a": BOX}, copies=1, blocks=3)
    ones = {"a": np.ones((2, 3), np.float32)}
    first = memory.next_block()
    lent = memory.read(0, memory.write(0, ones, first), first)["a"]
    assert first != 0 and not lent.flags.owndata
    del lent
    assert memory.next_block() == first
    for alias in (lambda a: a[1:], memoryview, lambda a: np.asarray(a).T):  # what keeps it lent
        lent = memory.read(0, memory.write(0, ones, first), first)["a"]
        holder = alias(lent)
        del lent
        assert memory.next_block() not in (0, first)
        del holder
        assert memory.next_block() == first
    # Both lent blocks held: block 0, read as copies.
    held = [memory.read(0, memory.write(0, ones, b), b) for b in (1, 2)]
    assert memory.next_block() == 0
    copied = memory.read(0, memory.write(0, ones, 0), 0)["a"]
    assert copied.flags.owndata and held[0]["a"].sum() == 6
