"""dm_env specs as gymnasium spaces, and dm_env values as the hub's (and back, for actions).

One spec, one space, one reader (native value -> hub value) and one writer (hub action ->
native action), built once per player:

* ``DiscreteArray(num_values)`` -> ``Discrete(num_values)`` (values as ``int``);
* ``BoundedArray`` -> ``Box(minimum, maximum, shape, dtype)``, the bounds broadcast to
  the shape;
* ``Array`` -> ``Box`` over the dtype's whole range: ``(-inf, inf)`` for floats, the
  integer type's limits for integers, ``(False, True)`` for bools;
* a dict of specs -> ``Dict`` in the spec's order; a list or tuple of specs -> ``Tuple``.

Observations are copied (a dm_env may hand out the same buffer again); actions are
passed as arrays of the spec's dtype, as dm_env's ``spec.validate`` expects.
``StringArray`` and other kinds of spec have no gymnasium space here and are refused.

Example:
    >>> from dm_env import specs
    >>> spec = {"position": specs.BoundedArray((2,), np.float64, -1.0, 1.0),
    ...         "steps": specs.Array((), np.int32), "mode": specs.DiscreteArray(3)}
    >>> converted = convert_spec(spec, "observation_spec()[0]")
    >>> for key, space in converted.space.items():
    ...     print(key, space)
    position Box(-1.0, 1.0, (2,), float64)
    steps Box(-2147483648, 2147483647, (), int32)
    mode Discrete(3)
    >>> converted.read({"position": np.zeros(2), "steps": np.int32(4), "mode": np.int32(2)})
    {'position': array([0., 0.]), 'steps': array(4, dtype=int32), 'mode': 2}
    >>> convert_spec(specs.DiscreteArray(3), "action_spec()[0]").write(np.int64(2))
    array(2, dtype=int32)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable

import gymnasium as gym
import numpy as np

from marlhub.errors import ConfigError

__all__ = ["ConvertedSpec", "convert_spec", "spec_to_space"]

#: How :class:`~marlhub.errors.ConfigError` names the adapter.
SOURCE = "from_dm_env"


@dataclass(frozen=True)
class ConvertedSpec:
    """A dm_env spec as a gymnasium space, with the conversions of its values.

    Attributes:
        space: the gymnasium space.
        read: native value (an observation) -> the hub's value in ``space``.
        write: the hub's value (an action in ``space``) -> the native value.
    """

    space: gym.Space
    read: Callable[[Any], Any]
    write: Callable[[Any], Any]


def spec_to_space(spec: Any) -> gym.Space:
    """Return the gymnasium space of a dm_env spec (or a dict, list or tuple of them).

    Raises:
        ConfigError: a kind of spec that has no gymnasium space here.

    Example:
        >>> from dm_env import specs
        >>> spec_to_space(specs.Array((3,), np.float32))
        Box(-inf, inf, (3,), float32)
    """
    return convert_spec(spec, "the spec").space


def convert_spec(spec: Any, where: str) -> ConvertedSpec:
    """Return the space of ``spec`` and its value conversions (see the module docstring).

    Args:
        spec: a dm_env spec, or a dict, list or tuple of them.
        where: where the spec is, for messages (``"observation_spec()[1]['joints_pos']"``).

    Raises:
        ConfigError: a kind of spec that has no gymnasium space here.
    """
    from dm_env import specs

    if isinstance(spec, Mapping):
        return _dict_spec(spec, where)
    if isinstance(spec, (list, tuple)):
        return _tuple_spec(spec, where)
    if isinstance(spec, specs.DiscreteArray):
        dtype = np.dtype(spec.dtype)
        return ConvertedSpec(gym.spaces.Discrete(int(spec.num_values)), int,
                             lambda action: np.asarray(action, dtype))
    if isinstance(getattr(specs, "StringArray", ()), type) and isinstance(spec, specs.StringArray):
        raise _unmapped(spec, where, "strings have no gymnasium space marlhub maps them to")
    if isinstance(spec, specs.BoundedArray):
        shape, dtype = tuple(spec.shape), np.dtype(spec.dtype)
        low = np.broadcast_to(np.asarray(spec.minimum, dtype), shape)
        high = np.broadcast_to(np.asarray(spec.maximum, dtype), shape)
        return _array_spec(gym.spaces.Box(low, high, shape, dtype), dtype)
    if isinstance(spec, specs.Array):
        shape, dtype = tuple(spec.shape), np.dtype(spec.dtype)
        return _array_spec(gym.spaces.Box(*_whole_range(spec, dtype, where), shape, dtype), dtype)
    raise _unmapped(spec, where, "it is not a dm_env spec (dm_env.specs.Array or a subclass), "
                    "nor a dict, list or tuple of them")


def _whole_range(spec: Any, dtype: np.dtype, where: str) -> tuple[Any, Any]:
    if dtype == np.bool_:
        return 0, 1
    if np.issubdtype(dtype, np.integer):
        return np.iinfo(dtype).min, np.iinfo(dtype).max
    if np.issubdtype(dtype, np.floating):
        return -np.inf, np.inf
    raise _unmapped(spec, where, f"its dtype {dtype} is neither a float, an integer nor a bool")


def _array_spec(space: gym.spaces.Box, dtype: np.dtype) -> ConvertedSpec:
    return ConvertedSpec(space, np.array, lambda action: np.asarray(action, dtype))


def _dict_spec(spec: Mapping[Any, Any], where: str) -> ConvertedSpec:
    parts = {key: convert_spec(value, f"{where}[{key!r}]") for key, value in spec.items()}
    space = gym.spaces.Dict(OrderedDict((key, part.space) for key, part in parts.items()))
    reads = [(key, part.read) for key, part in parts.items()]
    writes = [(key, part.write) for key, part in parts.items()]

    def read(value: Mapping[Any, Any]) -> dict[Any, Any]:
        return {key: part(value[key]) for key, part in reads}

    def write(action: Mapping[Any, Any]) -> dict[Any, Any]:
        return {key: part(action[key]) for key, part in writes}

    return ConvertedSpec(space, read, write)


def _tuple_spec(spec: Any, where: str) -> ConvertedSpec:
    parts = [convert_spec(value, f"{where}[{i}]") for i, value in enumerate(spec)]
    space = gym.spaces.Tuple([part.space for part in parts])

    def read(value: Any) -> tuple[Any, ...]:
        return tuple(part.read(v) for part, v in zip(parts, value))

    def write(action: Any) -> list[Any]:
        return [part.write(a) for part, a in zip(parts, action)]

    return ConvertedSpec(space, read, write)


def _unmapped(spec: Any, where: str, why: str) -> ConfigError:
    return ConfigError(SOURCE, f"{where} is {spec!r}, which has no gymnasium space: {why}",
                       fix="Wrap the env so that the spec is a dm_env Array, BoundedArray or "
                       "DiscreteArray of numbers or bools (or a dict, list or tuple of them).")
