"""Space helpers: masks wherever envs keep them, reasons for misfits, seeded legal sampling."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from marlhub.spaces import (
    ActionSampler,
    find_action_mask,
    why_bad_action_mask,
    why_illegal,
    why_not_in_space,
)

BOX = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)


@pytest.mark.parametrize(("space", "value", "reason"), [
    (BOX, np.zeros(3, np.float64), "dtype float64 cannot be cast safely"),
    (BOX, np.zeros(2, np.float32), "shape (2,) differs from the space's (3,)"),
    (BOX, np.array([0, -2, 0], np.float32), "value -2.0 at index (1,) is below the low bound -1.0"),
    (BOX, [0.0, 0.0, 0.0], "expected a numpy array of dtype float32, got list"),
    (gym.spaces.Discrete(3), 3, "3 (int) is not an integer in [0, 2]"),
    (gym.spaces.Dict({"a": gym.spaces.Discrete(2)}), {"b": 0}, "missing ['a'], unknown ['b']"),
    (gym.spaces.Dict({"a": gym.spaces.Discrete(2)}), {"a": 5}, "['a']: 5 (int) is not an integer"),
    (gym.spaces.Tuple([gym.spaces.Discrete(2)] * 2), (0, 9), "[1]: 9 (int)"),
    # gymnasium's Dict.contains casts a list part silently; the contract wants the array.
    (gym.spaces.Dict({"action_mask": gym.spaces.Box(0, 1, (2,), np.int8)}), {"action_mask": [1, 0]},
     "['action_mask']: expected a numpy array of dtype int8, got list"),
    (gym.spaces.Tuple([gym.spaces.MultiBinary(2)]), ([1, 0],), "[0]: expected a numpy array"),
])
def test_why_not_in_space_names_the_first_problem(space, value, reason) -> None:
    assert reason in why_not_in_space(space, value)


def test_values_in_space_have_no_reason() -> None:
    assert why_not_in_space(BOX, np.zeros(3, np.float32)) is None
    assert why_illegal(gym.spaces.Discrete(3), 2, np.array([0, 0, 1], np.int8)) is None


def test_masks_are_found_in_obs_or_infos() -> None:
    assert find_action_mask({"observation": 1, "action_mask": [0, 1]}).tolist() == [0, 1]
    assert find_action_mask(np.zeros(2), {"action_mask": np.array([True, False])}).tolist() == [1, 0]
    assert find_action_mask(np.zeros(2), {}) is None


def test_sampler_honours_masks_and_is_reproducible() -> None:
    space, mask = gym.spaces.Discrete(6, start=10), np.array([0, 1, 0, 0, 1, 0], np.int8)
    draws = [ActionSampler(seed=1).sample("a", space, mask) for _ in range(3)]
    assert len(set(draws)) == 1
    sampler = ActionSampler(seed=2)
    assert {sampler.sample("a", space, mask) for _ in range(50)} == {11, 14}


def test_sampler_never_touches_the_env_space_rng() -> None:
    space = gym.spaces.Box(0, 1, (2,))
    state = space.np_random.bit_generator.state
    sample = ActionSampler(seed=0).sample("a", space)
    assert space.contains(sample.astype(np.float32))
    assert space.np_random.bit_generator.state == state


MD = gym.spaces.MultiDiscrete([3, 2])
TUPLE_MASK = (np.array([1, 0, 1], np.int8), np.array([0, 1], np.int8))


def test_gymnasium_tuple_masks_for_multi_discrete_come_back_flat() -> None:
    assert find_action_mask({"action_mask": TUPLE_MASK}).tolist() == [1, 0, 1, 0, 1]
    assert find_action_mask(0, {"action_mask": [np.ones(2), np.zeros(2)]}).tolist() == [1, 1, 0, 0]


def test_sampler_draws_within_tuple_masks_from_its_own_generator() -> None:
    sampler = ActionSampler(seed=0)
    mask = find_action_mask({"action_mask": TUPLE_MASK})
    draws = [sampler.sample("a", MD, mask) for _ in range(40)]
    assert {(int(a[0]), int(a[1])) for a in draws} == {(0, 1), (2, 1)}
    assert [ActionSampler(seed=5).sample("a", MD, mask).tolist() for _ in range(2)] == [
        ActionSampler(seed=5).sample("a", MD, mask).tolist()] * 2
    assert MD.contains(sampler.sample("a", MD, np.ones(4, np.int8)))  # wrong length: no mask


@pytest.mark.parametrize(("space", "mask", "reason"), [
    (gym.spaces.Discrete(3), [1, 0, 1], "it is a list, not a numpy array"),
    (gym.spaces.Discrete(3), np.array(["1", "0", "1"]), "it has dtype <U1"),
    (gym.spaces.Discrete(3), np.ones(4, np.int8), "shape (4,), expected (3,): one entry per action"),
    (gym.spaces.Discrete(3), np.array([1.0, 0.5, 0.0]), "it holds 0.5"),
    (MD, (np.ones(3, np.int8),), "it has 1 parts, expected 2"),
    (MD, np.ones(6, np.int8), "shape (6,), expected (5,): one entry per value of each dimension"),
    (MD, "mask", "it is a str"),
])
def test_bad_action_masks_are_named(space, mask, reason) -> None:
    assert reason in why_bad_action_mask(space, mask)


@pytest.mark.parametrize(("space", "mask"), [
    (gym.spaces.Discrete(3, start=1), np.array([True, False, True])),
    (gym.spaces.Discrete(2), np.array([1.0, 0.0], np.float32)),
    (MD, TUPLE_MASK),
    (MD, np.array([1, 0, 1, 0, 1], np.int8)),
    (gym.spaces.Box(0, 1, (2,)), [1, 2, 3]),  # masks of other spaces are not judged
])
def test_good_action_masks_have_no_reason(space, mask) -> None:
    assert why_bad_action_mask(space, mask) is None
