"""Space helpers: masks wherever envs keep them, reasons for misfits, seeded legal sampling."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from marlhub.spaces import (
    ActionSampler,
    find_action_mask,
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
