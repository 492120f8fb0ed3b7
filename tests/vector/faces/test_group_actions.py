"""GroupActions: the array face's one-pass check of every slot's action against its space and
mask, against the rule stated slot by slot."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from marlhub.errors import ActionError
from marlhub.vector.faces.group_actions import GroupActions


def _legal_slot(action: int, space: gym.spaces.Discrete, mask: np.ndarray) -> bool:
    index = action - int(space.start)
    return 0 <= index < int(space.n) and bool(mask[index])


@pytest.mark.parametrize("seed", range(80))
def test_each_slot_is_judged_as_alone(seed: int) -> None:
    """Random shapes, starts, mask dtypes, actions in and out of range, and masks that are
    rows of a bigger block (as a worker's rows of shared memory) or no masks, and action
    dtypes of 1 to 8 bytes: the first bad acting slot is the one named, and a batch with
    none passes."""
    rng = np.random.default_rng(seed)
    n, a, k = (int(x) for x in rng.integers(1, 6, 3))
    space = gym.spaces.Discrete(k, start=int(rng.integers(-2, 3)))
    block = (rng.random((2 * n, a, k)) < 0.6).astype(rng.choice([np.int8, np.bool_]))
    masks = block[::2] if seed % 2 else block[:n]
    if seed % 5 == 4:
        masks = np.ones_like(masks)  # as no masks: the check then reads none
    acting = rng.random((n, a)) < 0.7
    agents = [f"a{j}" for j in range(a)]
    check = GroupActions("Vec", n, {"agents": agents}, dict.fromkeys(agents, space))
    actions = rng.integers(int(space.start) - 2, int(space.start) + k + 2, (n, a))
    if seed % 4 < 2:  # every acting slot legal (one with an empty mask does not act)
        for i in range(n):
            for j in range(a):
                legal = np.flatnonzero(masks[i, j])
                acting[i, j] &= legal.size > 0
                actions[i, j] = int(space.start) + int(rng.choice(legal)) if legal.size else 0
    actions = actions.astype([np.int64, np.int32, np.int16, np.int8][seed // 4 % 4])
    bad = [(i, j) for i in range(n) for j in range(a)
           if acting[i, j] and not _legal_slot(int(actions[i, j]), space, masks[i, j])]
    given = {} if seed % 5 == 4 else {"agents": masks}
    if not bad:
        check.check({"agents": actions}, {"agents": acting}, given)
        return
    with pytest.raises(ActionError) as caught:
        check.check({"agents": actions}, {"agents": acting}, given)
    assert (caught.value.copy_index, caught.value.agent_id) == (bad[0][0], agents[bad[0][1]])


@pytest.mark.parametrize("dtype", [">i8", "<i8", ">i4", "<i4", "i2", "u1", "u8"])
def test_an_action_below_the_range_is_refused_in_every_byte_order(dtype: str) -> None:
    agents = ["a0", "a1"]
    check = GroupActions("Vec", 2, {"agents": agents},
                         dict.fromkeys(agents, gym.spaces.Discrete(3)))
    acting = np.ones((2, 2), bool)
    actions = np.array([[0, 2], [1, 0]], dtype=dtype)
    check.check({"agents": actions}, {"agents": acting}, {})
    actions[1, 1] = 3
    if np.dtype(dtype).kind == "i":
        actions[1, 0] = -1
    with pytest.raises(ActionError) as caught:
        check.check({"agents": actions}, {"agents": acting}, {})
    assert (caught.value.copy_index, caught.value.agent_id) == (1, "a0" if np.dtype(dtype).kind
                                                                 == "i" else "a1")
