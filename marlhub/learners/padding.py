"""One space for a mixed team: observations flattened and padded, actions padded and masked.

Learners that share one policy between agents take one observation and one action space;
agents of different kinds (``traffic``'s cars and light, MAgent2's tigers and deer) have
several. :func:`padded_observation_space` holds every kind's flattened observation (as
``gymnasium.spaces.flatten`` flattens it, :func:`flat_rows`) followed by a one-hot of the
kind; :func:`padded_action_space` is one ``Discrete`` of the most actions (masks forbid
what a kind cannot do; a learner without masks that sends one plays the kind's first
action, as SuperSuit's ``pad_action_space_v0`` has it) or one ``Box`` of the longest
action (a kind takes its first entries, clipped to its bounds). Used by
:class:`~marlhub.learners.slots.AgentSlots` (``one_space=True``).

Example:
    >>> cars, light = gym.spaces.MultiDiscrete([7, 6, 2]), gym.spaces.Box(0, 1, (7,))
    >>> padded_observation_space("traffic", {"car": cars, "light": light}).shape
    (17,)
    >>> padded_action_space("traffic", {"car": gym.spaces.Discrete(3),
    ...                                 "light": gym.spaces.Discrete(2)})
    Discrete(3)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.errors import VectorEnvError
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["first_actions", "flat_rows", "mask_size", "padded_action_space",
           "padded_observation_space", "without_mask"]

_FLAT_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete,
                gym.spaces.MultiBinary, gym.spaces.Dict)


def flat_rows(space: gym.Space, values: Any, dtype: Any = np.float32) -> np.ndarray:
    """Flatten every observation of ``values`` (leading dims, then one observation of ``space``)
    as ``gymnasium.spaces.flatten`` flattens one: of ``dtype`` (float32), one-hot for
    discrete values.

    Example:
        >>> flat_rows(gym.spaces.MultiDiscrete([3, 2]), np.array([[2, 0], [0, 1]])).tolist()
        [[0.0, 0.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0, 1.0]]
    """
    if isinstance(space, gym.spaces.Dict):
        return np.concatenate([flat_rows(sub, values[key]) for key, sub in space.items()],
                              axis=-1)
    if isinstance(space, gym.spaces.Discrete):
        values = np.asarray(values, np.int64) - int(space.start)
        return np.eye(int(space.n), dtype=np.float32)[values]
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec).reshape(-1)
        values = np.asarray(values, np.int64) - np.asarray(space.start).reshape(-1)
        lead = values.shape[: values.ndim - len(space.shape)]
        values = values.reshape(lead + (len(nvec),))
        return np.concatenate([np.eye(int(n), dtype=np.float32)[values[..., d]]
                               for d, n in enumerate(nvec)], axis=-1)
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiBinary)):
        values = np.asarray(values, dtype)
        lead = values.shape[: values.ndim - len(space.shape)]
        return values.reshape(lead + (-1,))
    raise TypeError(f"cannot flatten {space}")


def padded_observation_space(name: str, spaces: Mapping[str, gym.Space]) -> gym.spaces.Box:
    """One Box that holds every group's flattened observation, and its kind when several:
    of the groups' dtype where all observe one kind of Box (images stay uint8), else
    float32."""
    lows, highs = [], []
    for g, space in spaces.items():
        if not _flattens(space):
            raise VectorEnvError(name, f"one_space=True cannot flatten the observations of "
                                 f"{g!r} ({space})", "Give the agents Box, Discrete, "
                                 "MultiDiscrete, MultiBinary or Dict observations.")
        flat = cast(gym.spaces.Box, gym.spaces.flatten_space(space))
        lows.append(np.asarray(flat.low, np.float32))
        highs.append(np.asarray(flat.high, np.float32))
    size = max(len(low) for low in lows)
    kinds = len(spaces) if len(spaces) > 1 else 0
    low = np.zeros(size + kinds, np.float32)
    high = np.zeros(size + kinds, np.float32)
    for lo, hi in zip(lows, highs):
        low[:len(lo)] = np.minimum(low[:len(lo)], lo)
        high[:len(hi)] = np.maximum(high[:len(hi)], hi)
    high[size:] = 1.0
    dtype = _box_dtype(spaces)
    if dtype != np.float32:
        info = np.iinfo(dtype) if np.issubdtype(dtype, np.integer) else np.finfo(dtype)
        low, high = np.maximum(low, info.min).astype(dtype), np.minimum(high, info.max).astype(dtype)
    return gym.spaces.Box(low, high, dtype=dtype)


def _box_dtype(spaces: Mapping[str, gym.Space]) -> Any:
    """The one dtype of every group's Box observations, else float32."""
    dtypes = {np.dtype(s.dtype) for s in spaces.values() if isinstance(s, gym.spaces.Box)}
    if len(dtypes) == 1 and all(isinstance(s, gym.spaces.Box) for s in spaces.values()):
        return dtypes.pop()
    return np.dtype(np.float32)


def padded_action_space(name: str, spaces: Mapping[str, gym.Space]) -> gym.Space:
    """One Discrete of the most actions, or one Box of the longest action."""
    values = list(spaces.values())
    if all(isinstance(s, gym.spaces.Discrete) for s in values):
        return gym.spaces.Discrete(max(int(s.n) for s in values))  # type: ignore[attr-defined]
    boxes = [s for s in values if isinstance(s, gym.spaces.Box)]
    if len(boxes) == len(values):
        size = max(int(np.prod(s.shape)) for s in boxes)
        low = np.full(size, np.inf, np.float32)
        high = np.full(size, -np.inf, np.float32)
        for box in boxes:
            n = int(np.prod(box.shape))
            low[:n] = np.minimum(low[:n], np.asarray(box.low, np.float32).reshape(-1))
            high[:n] = np.maximum(high[:n], np.asarray(box.high, np.float32).reshape(-1))
        low[np.isinf(low)], high[np.isinf(high)] = 0.0, 0.0
        return gym.spaces.Box(low, high, dtype=np.float32)
    raise VectorEnvError(name, "one_space=True needs every kind of agent to act in Discrete "
                         "spaces, or every kind in Box spaces; got " + ", ".join(
                             f"{g}: {s}" for g, s in spaces.items()),
                         "Train the kinds separately through the vector env's array face "
                         "(step_arrays, one array per group) or to_torchrl.")


def without_mask(value: Any) -> Any:
    """A Dict space (or a dict of observations) without its action mask; its one other
    entry alone where one is left (OpenSpiel's and PettingZoo's ``"observation"``)."""
    if isinstance(value, gym.spaces.Dict):
        if ACTION_MASK_KEY not in value.spaces:
            return value
        rest = {k: sub for k, sub in value.spaces.items() if k != ACTION_MASK_KEY}
        return next(iter(rest.values())) if len(rest) == 1 else gym.spaces.Dict(rest)
    if isinstance(value, dict) and ACTION_MASK_KEY in value:
        rest = {k: sub for k, sub in value.items() if k != ACTION_MASK_KEY}
        return next(iter(rest.values())) if len(rest) == 1 else rest
    return value


def _flattens(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Dict):
        return all(_flattens(sub) for sub in space.values())
    return type(space) in _FLAT_SPACES


def mask_size(space: gym.Space) -> Optional[int]:
    """The length of an action mask of ``space`` (None: it has none, a Box)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    return None


def first_actions(space: gym.Space) -> np.ndarray:
    """The mask that allows only the first action (of each dimension)."""
    size = mask_size(space) or 0
    mask = np.zeros(size, bool)
    if isinstance(space, gym.spaces.MultiDiscrete):
        mask[np.concatenate([[0], np.cumsum(np.asarray(space.nvec).reshape(-1))[:-1]])] = True
    else:
        mask[0] = True
    return mask
