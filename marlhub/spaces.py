"""Space helpers shared by the adapters and the conformance suite.

* :func:`find_action_mask` finds an agent's action mask wherever envs keep it:
  inside a Dict observation under ``"action_mask"`` or in the agent's infos;
  Gymnasium's tuple of per-dimension masks for ``MultiDiscrete`` comes back flat.
* :func:`why_bad_action_mask` says why a mask cannot be read against an action
  space (a list, a wrong dtype or length, values other than 0 and 1).
* :func:`why_not_in_space` says *why* a value is outside a space (dtype, shape,
  bounds, unknown key), where ``space.contains`` only says that it is.
* :func:`why_illegal` adds the mask to that.
* :class:`ActionSampler` draws random legal actions from its own seeded
  generator, without touching the RNG of the env's spaces.

Example:
    >>> import numpy as np, gymnasium as gym
    >>> why_not_in_space(gym.spaces.Box(0.0, 1.0, (2,), np.float32), np.array([0.5, 2.0], np.float32))
    'value 2.0 at index (1,) is above the high bound 1.0'
    >>> sampler = ActionSampler(seed=0)
    >>> mask = np.array([0, 0, 1], np.int8)
    >>> sampler.sample("a", gym.spaces.Discrete(3), mask)
    2
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np

__all__ = [
    "ACTION_MASK_KEY",
    "ADVISORY_MASKS",
    "ActionSampler",
    "find_action_mask",
    "masks_are_binding",
    "raw_action_mask",
    "why_bad_action_mask",
    "why_illegal",
    "zero_like",
    "why_not_in_space",
]

#: Key under which envs (PettingZoo classic, OpenSpiel adapters) keep the legal-action mask.
ACTION_MASK_KEY = "action_mask"

#: ``metadata`` key an env sets to True when its action masks are advice, not rules:
#: Gymnasium's Taxi publishes which actions change the state, yet accepts every action.
#: Adapters and wrappers then accept every action in the space, as the native env does.
ADVISORY_MASKS = "marlhub.advisory_action_masks"


def masks_are_binding(env: Any) -> bool:
    """Tell whether ``env``'s action masks say which actions it accepts (the default).

    Example:
        >>> class Taxi:
        ...     metadata = {ADVISORY_MASKS: True}
        >>> masks_are_binding(Taxi()), masks_are_binding(object())
        (False, True)
    """
    metadata = getattr(env, "metadata", None)
    return not (isinstance(metadata, Mapping) and metadata.get(ADVISORY_MASKS, False))


def raw_action_mask(observation: Any, info: Optional[Mapping[str, Any]] = None) -> Any:
    """Return the agent's action mask as the env gave it (obs first, then info), or None.

    The one place that knows where masks live; :func:`find_action_mask` adds
    the conversion to an ``int8`` array.

    Example:
        >>> raw_action_mask({"observation": 0, "action_mask": [1, 0]})
        [1, 0]
        >>> raw_action_mask(0, {"action_mask": (1, 1)})
        (1, 1)
    """
    # The type tests first: an array or a dict is the usual case, and isinstance() of an
    # abstract class costs more than the look-up itself.
    if type(observation) is dict or (type(observation) is not np.ndarray
                                     and isinstance(observation, Mapping)):
        mask = observation.get(ACTION_MASK_KEY)
        if mask is not None:
            return mask
    if type(info) is dict or isinstance(info, Mapping):
        return info.get(ACTION_MASK_KEY)
    return None


def find_action_mask(observation: Any, info: Optional[Mapping[str, Any]] = None) -> Optional[np.ndarray]:
    """Return the agent's action mask from its observation or info, or None if it has none.

    A tuple (or list) of per-dimension masks, the form Gymnasium's
    ``MultiDiscrete.sample(mask=...)`` takes, comes back concatenated: one
    entry per value of each dimension, RLlib's flat layout for MultiDiscrete.

    Example:
        >>> find_action_mask({"observation": 0, "action_mask": [1, 0]})
        array([1, 0], dtype=int8)
        >>> find_action_mask(0, {"action_mask": np.array([True, False])})
        array([1, 0], dtype=int8)
        >>> find_action_mask(0, {"action_mask": (np.array([1, 0, 1]), np.array([0, 1]))})
        array([1, 0, 1, 0, 1], dtype=int8)
        >>> find_action_mask(0) is None
        True
    """
    mask = raw_action_mask(observation, info)
    if mask is None:
        return None
    return _flat_mask(mask)


def _is_nested(mask: Any) -> bool:
    """Tell a tuple of per-dimension masks from a flat sequence of 0/1 values."""
    return isinstance(mask, (tuple, list)) and any(
        isinstance(part, (np.ndarray, tuple, list)) for part in mask)


def _flat_mask(mask: Any) -> np.ndarray:
    if _is_nested(mask):
        parts = [_flat_mask(part).ravel() for part in mask]
        return np.concatenate(parts).astype(np.int8, copy=False) if parts else np.zeros(0, np.int8)
    return np.asarray(mask).astype(np.int8, copy=False)


def _split_multi_discrete_mask(space: gym.Space, mask: np.ndarray) -> Optional[tuple[np.ndarray, ...]]:
    """Return a flat mask of a 1-D ``MultiDiscrete`` as the tuple Gymnasium samples with, or None.

    None when the space is not a 1-D MultiDiscrete or the mask has not one
    entry per value of each dimension.

    Example:
        >>> _split_multi_discrete_mask(gym.spaces.MultiDiscrete([2, 3]), np.array([1, 0, 0, 1, 1]))
        (array([1, 0], dtype=int8), array([0, 1, 1], dtype=int8))
    """
    if not isinstance(space, gym.spaces.MultiDiscrete) or space.nvec.ndim != 1:
        return None
    sizes = [int(n) for n in space.nvec]
    if np.shape(mask) != (sum(sizes),):
        return None
    flat = np.asarray(mask).astype(np.int8, copy=False)
    return tuple(np.split(flat, np.cumsum(sizes)[:-1]))


def why_bad_action_mask(space: gym.Space, mask: Any) -> Optional[str]:
    """Return why ``mask`` is no usable action mask for ``space``, or None when it is.

    A mask is a numpy array of 0/1 values (bool, integer or float dtype) with
    one entry per action of a ``Discrete`` space; for a 1-D ``MultiDiscrete``
    either a tuple of such arrays, one per dimension (Gymnasium's form), or
    one flat array of them all (RLlib's). Masks of other spaces are not judged.

    Example:
        >>> why_bad_action_mask(gym.spaces.Discrete(3), np.array([1, 0, 1], np.int8)) is None
        True
        >>> why_bad_action_mask(gym.spaces.Discrete(3), [1, 0, 1])
        'it is a list, not a numpy array'
        >>> why_bad_action_mask(gym.spaces.MultiDiscrete([2, 3]), (np.ones(2), np.ones(2)))
        'part [1] has shape (2,), expected (3,): one entry per value of that dimension'
    """
    if isinstance(space, gym.spaces.Discrete):
        return _why_bad_mask_array(mask, (int(space.n),), "action")
    if not isinstance(space, gym.spaces.MultiDiscrete) or space.nvec.ndim != 1:
        return None
    sizes = [int(n) for n in space.nvec]
    if isinstance(mask, np.ndarray) and mask.ndim == 1:
        return _why_bad_mask_array(mask, (sum(sizes),), "value of each dimension")
    if not isinstance(mask, (tuple, list)):
        return (f"it is a {type(mask).__name__}; give a tuple of {len(sizes)} arrays (one per "
                f"dimension) or one flat array of {sum(sizes)} entries")
    if len(mask) != len(sizes):
        return f"it has {len(mask)} parts, expected {len(sizes)}: one per dimension of {space}"
    for i, (part, size) in enumerate(zip(mask, sizes)):
        reason = _why_bad_mask_array(part, (size,), "value of that dimension")
        if reason:
            return f"part [{i}] {reason.replace('it ', '', 1)}"
    return None


def _why_bad_mask_array(mask: Any, shape: tuple[int, ...], per: str) -> Optional[str]:
    if not isinstance(mask, np.ndarray):
        return f"it is a {type(mask).__name__}, not a numpy array"
    if mask.dtype.kind not in "biuf":
        return f"it has dtype {mask.dtype}, expected 0/1 values of an integer, bool or float dtype"
    if mask.shape != shape:
        return f"it has shape {mask.shape}, expected {shape}: one entry per {per}"
    odd = mask[(mask != 0) & (mask != 1)]
    if odd.size:
        return f"it holds {_plain(odd.flat[0])!r}; a mask holds only 0 and 1"
    return None


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def why_not_in_space(space: gym.Space, value: Any) -> Optional[str]:
    """Return why ``value`` is not in ``space``, or None when it is.

    The reason names the first problem found: a wrong type or dtype, a wrong
    shape, a value out of bounds, or a missing or unknown key in a Dict.
    Dict and Tuple values are judged part by part, so a list where a part
    wants an array (an action mask as a Python list, say) is named, where
    gymnasium's ``contains`` would cast it silently.
    """
    if isinstance(space, gym.spaces.Dict):
        return _why_not_in_dict(space, value)
    if isinstance(space, gym.spaces.Tuple):
        return _why_not_in_tuple(space, value)
    if isinstance(space, gym.spaces.Discrete) and isinstance(value, (bool, np.bool_)):
        # gymnasium's contains takes True as 1; an action or observation is no bool.
        return f"{value!r} is a bool, not an integer in [{space.start}, {space.start + space.n - 1}]"
    array_space = (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    if isinstance(space, array_space) and not isinstance(value, (np.ndarray, np.generic)):
        # gymnasium would cast a list silently (with a warning); the contract wants the dtype.
        return f"expected a numpy array of dtype {space.dtype}, got {type(value).__name__}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # gymnasium warns while casting odd inputs
            if space.contains(value):
                return None
    except Exception as exc:  # a malformed value can make contains() itself raise
        return f"space.contains raised {type(exc).__name__}: {exc}"
    if isinstance(space, gym.spaces.Discrete):
        return (
            f"{value!r} ({type(value).__name__}) is not an integer in "
            f"[{space.start}, {space.start + space.n - 1}]"
        )
    if isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return _why_not_in_array_space(space, value)
    return f"{_short(value)} is not in {space}"


def _why_not_in_dict(space: gym.spaces.Dict, value: Any) -> Optional[str]:
    if not isinstance(value, Mapping):
        return f"expected a dict with keys {list(space.spaces)}, got {type(value).__name__}"
    missing = [k for k in space.spaces if k not in value]
    extra = [k for k in value if k not in space.spaces]
    if missing or extra:
        return f"keys differ from the space: missing {missing}, unknown {extra}"
    for key, sub in space.spaces.items():
        reason = why_not_in_space(sub, value[key])
        if reason:
            return f"[{key!r}]: {reason}"
    return None


def _why_not_in_tuple(space: gym.spaces.Tuple, value: Any) -> Optional[str]:
    if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
        return f"expected a tuple of {len(space.spaces)} items, got {type(value).__name__}"
    for i, sub in enumerate(space.spaces):
        reason = why_not_in_space(sub, value[i])
        if reason:
            return f"[{i}]: {reason}"
    return None


def _why_not_in_array_space(space: Any, value: Any) -> str:
    if not isinstance(value, np.ndarray):
        return f"expected a numpy array of dtype {space.dtype}, got {type(value).__name__}"
    if value.shape != space.shape:
        return f"shape {value.shape} differs from the space's {space.shape}"
    if space.dtype is not None and not np.can_cast(value.dtype, space.dtype):
        return f"dtype {value.dtype} cannot be cast safely to the space's {space.dtype}"
    if isinstance(space, gym.spaces.Box):
        if np.any(np.isnan(value)):
            return "value holds NaN"
        low_bad = np.argwhere(value < space.low)
        if low_bad.size:
            idx = tuple(int(i) for i in low_bad[0])
            return f"value {value[idx].item()!r} at index {idx} is below the low bound {space.low[idx].item()!r}"
        high_bad = np.argwhere(value > space.high)
        if high_bad.size:
            idx = tuple(int(i) for i in high_bad[0])
            return f"value {value[idx].item()!r} at index {idx} is above the high bound {space.high[idx].item()!r}"
    return f"{_short(value)} is not in {space}"


def why_illegal(space: gym.Space, action: Any, mask: Optional[np.ndarray]) -> Optional[str]:
    """Return why ``action`` may not be taken, or None when it is legal.

    Example:
        >>> why_illegal(gym.spaces.Discrete(3), 1, np.array([1, 0, 1], np.int8))
        'action 1 is masked out; legal actions are [0, 2]'
    """
    reason = why_not_in_space(space, action)
    if reason or mask is None:
        return reason
    if isinstance(space, gym.spaces.Discrete):
        index = int(action) - int(space.start)
        if mask.shape != (space.n,):
            return f"the action mask has shape {mask.shape}, expected ({space.n},)"
        if not mask[index]:
            legal = [int(i) + int(space.start) for i in np.flatnonzero(mask)]
            return f"action {int(action)} is masked out; legal actions are {legal}"
    return None


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ActionSampler:
    """Draw random legal actions from a private, seeded generator.

    Each agent's action space is copied once and the copy is seeded from the
    sampler's own generator, so sampling never advances the RNG of the env's
    spaces and the same seed gives the same actions.

    Args:
        seed: seeds the sampler (an int or a sequence of ints, as numpy's
            ``default_rng`` takes); None draws fresh entropy.
    """

    def __init__(self, seed: Union[int, Sequence[int], None] = None) -> None:
        self.rng = np.random.default_rng(seed)
        self._spaces: dict[Any, tuple[gym.Space, gym.Space]] = {}

    def sample(self, agent: Any, space: gym.Space, mask: Optional[np.ndarray] = None) -> Any:
        """Return a random action for ``agent`` from ``space`` that ``mask`` allows.

        ``mask`` is what :func:`find_action_mask` returns: one entry per action of a
        Discrete space, or per value of each dimension of a 1-D MultiDiscrete.

        Example:
            >>> space = gym.spaces.MultiDiscrete([3, 2])
            >>> ActionSampler(0).sample("a", space, np.array([0, 0, 1, 1, 0], np.int8))
            array([2, 0])
        """
        if isinstance(space, gym.spaces.Discrete):
            legal = np.flatnonzero(mask) if mask is not None and mask.shape == (space.n,) else None
            if legal is None or legal.size == 0:
                # No usable mask (or the env masks out everything, which the caller
                # reports): any action in the space.
                return int(space.start) + int(self.rng.integers(space.n))
            return int(space.start) + int(legal[self.rng.integers(legal.size)])
        parts = None if mask is None else _split_multi_discrete_mask(space, mask)
        if parts is not None:
            # Gymnasium samples each dimension within its part (its start when all are 0).
            return self._own_copy(agent, space).sample(mask=parts)
        return self._own_copy(agent, space).sample()

    def _own_copy(self, agent: Any, space: gym.Space) -> gym.Space:
        entry = self._spaces.get(agent)
        if entry is None or entry[0] is not space:
            own = copy.deepcopy(space)
            own.seed(int(self.rng.integers(2**31 - 1)))
            entry = (space, own)
            self._spaces[agent] = entry
        return entry[1]


def zero_like(space: gym.Space) -> Any:
    """Return a fixed element of ``space`` that stands for "nothing observed yet".

    Zeros where zeros are allowed (an all-zero action mask means "no legal
    action"), else the nearest bound; a deterministic sample for other spaces.

    Example:
        >>> box, mask = gym.spaces.Box(1, 2, (2,)), gym.spaces.MultiBinary(3)
        >>> zero_like(gym.spaces.Dict({"obs": box, "mask": mask}))
        {'mask': array([0, 0, 0], dtype=int8), 'obs': array([1., 1.], dtype=float32)}
    """
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start)
    if isinstance(space, gym.spaces.Box):
        return np.clip(np.zeros(space.shape), space.low, space.high).astype(space.dtype)
    if isinstance(space, gym.spaces.MultiBinary):
        return np.zeros(space.shape, dtype=space.dtype)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return np.asarray(space.start, dtype=space.dtype).copy()
    if isinstance(space, gym.spaces.Dict):
        return {key: zero_like(sub) for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(zero_like(sub) for sub in space.spaces)
    own = copy.deepcopy(space)  # never advance the RNG of the env's own space
    own.seed(0)
    return own.sample()
