"""Spaces and values on the wire: gymnasium spaces <-> ``Space`` messages, values <-> ``Value``.

A value is decoded into its space's dtype and shape and checked against the
space, so what reaches the learner (or the simulator) is always in the
declared space; anything else raises :class:`WireValueError`, which says
what was wrong. Encoding writes tensors as ``raw`` little-endian bytes (the
fast path) or, with ``typed=True``, as typed lists, easy to read in any language
(the server answers actions that way).

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Box(0, 1, (2,), np.float32)
    >>> space_from_message(space_message(space)) == space
    True
    >>> decode(encode(np.array([0.5, 1.0], np.float32)), space)
    array([0.5, 1. ], dtype=float32)
    >>> decode(encode(np.array([0.5, 2.0], np.float32)), space)
    Traceback (most recent call last):
    ...
    marlhub.external.codec.WireValueError: [0.5 2. ] is not in Box(0.0, 1.0, (2,), float32)
"""

from __future__ import annotations

import functools
import math
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.episode.actions import fast_check
from marlhub.external.proto import load_wire

__all__ = ["WireValueError", "decode", "encode", "encode_into", "in_space", "space_from_message",
           "space_message", "tensor", "tensor_into"]

_QUICK: dict[int, tuple[gym.Space, Any]] = {}  # id(space) -> (space, its quick check)


def in_space(space: gym.Space, value: Any) -> bool:
    """Whether ``value`` is in ``space``: the quick check of Discrete and Box spaces
    (:func:`~marlhub.episode.actions.fast_check`) first, then ``space.contains``.

    Example:
        >>> in_space(gym.spaces.Discrete(3), 2), in_space(gym.spaces.Discrete(3), 3)
        (True, False)
    """
    entry = _QUICK.get(id(space))
    if entry is None or entry[0] is not space:
        entry = _QUICK[id(space)] = (space, fast_check(space))
    quick = entry[1]
    return (quick is not None and quick(value, None)) or bool(space.contains(value))



class WireValueError(ValueError):
    """A value or space on the wire that is malformed or outside its declared space."""


def _messages() -> dict[str, Any]:
    return load_wire().messages


@functools.lru_cache(maxsize=None)
def _name(dtype: np.dtype) -> str:
    """``dtype.name``, which numpy computes in Python on every read."""
    return dtype.name


@functools.lru_cache(maxsize=None)
def _little_endian(dtype: np.dtype) -> np.dtype:
    return dtype.newbyteorder("<")


# -- tensors ------------------------------------------------------------------------


def tensor(array: Any, *, typed: bool = False) -> Any:
    """The ``Tensor`` message of ``array``."""
    message = _messages()["Tensor"]()
    tensor_into(message, array, typed=typed)
    return message


def tensor_into(message: Any, array: Any, *, typed: bool = False) -> None:
    """Write ``array`` into the empty ``Tensor`` message ``message`` (what :func:`tensor`
    returns, built in place: no message is made and copied)."""
    array = np.asarray(array)
    dtype = array.dtype
    message.shape.extend(array.shape)
    message.dtype = _name(dtype)
    if not typed:
        message.raw = np.ascontiguousarray(array, _little_endian(dtype)).tobytes()
    elif dtype.kind == "b":
        message.bools.values.extend(array.ravel().tolist())
    elif dtype.kind in "iu":
        message.int64s.values.extend(array.ravel().astype(np.int64).tolist())
    else:
        message.doubles.values.extend(array.ravel().astype(np.float64).tolist())


def array_of(message: Any, dtype: Any = None) -> np.ndarray:
    """The array a ``Tensor`` message holds, cast to ``dtype`` (a numpy dtype) when given.

    Raises:
        WireValueError: no payload, a size that does not match the shape, or values
            that ``dtype`` cannot hold exactly.
    """
    kind = message.WhichOneof("payload")
    shape = tuple(message.shape)
    size = math.prod(shape)
    if kind is None:
        if size != 0:
            raise WireValueError(f"a tensor of shape {list(shape)} has no values")
        return np.zeros(shape, dtype or np.float64)
    if kind == "raw":
        if dtype is not None and message.dtype == _name(dtype):  # the fast path
            raw_dtype = _little_endian(dtype)
            if len(message.raw) == size * raw_dtype.itemsize:
                return np.frombuffer(message.raw, raw_dtype).reshape(shape).astype(dtype)
        try:
            raw_dtype = np.dtype(message.dtype or dtype).newbyteorder("<")
            array = np.frombuffer(message.raw, raw_dtype)
        except (TypeError, ValueError) as exc:
            raise WireValueError(f"a raw tensor of dtype {message.dtype!r}: {exc}") from None
    else:
        values = getattr(message, kind).values
        array = np.asarray(values, {"doubles": np.float64, "int64s": np.int64,
                                    "bools": np.bool_}[kind])
    if array.size != size:
        raise WireValueError(f"a tensor of shape {list(shape)} holds {array.size} values")
    array = array.reshape(shape)
    if dtype is not None and array.dtype != np.dtype(dtype):
        cast = array.astype(dtype)
        if not np.array_equal(cast, array, equal_nan=array.dtype.kind == "f"):
            raise WireValueError(f"the values {array.tolist()!r:.80} do not fit dtype "
                                 f"{np.dtype(dtype).name}")
        array = cast
    return array


# -- values -------------------------------------------------------------------------


def encode(value: Any, *, typed: bool = False) -> Any:
    """The ``Value`` message of ``value`` (an array or number, or a dict or tuple of them)."""
    message = _messages()["Value"]()
    encode_into(message, value, typed=typed)
    return message


def encode_into(message: Any, value: Any, *, typed: bool = False) -> None:
    """Write ``value`` into the empty ``Value`` message ``message`` (what :func:`encode`
    returns, built in place: a field of the request or response being built, never a
    message made and then copied into it).

    Example:
        >>> answer = _messages()["AgentValue"](agent="a")
        >>> encode_into(answer.value, np.int64(2), typed=True)
        >>> answer.value == encode(np.int64(2), typed=True)
        True
    """
    if typed and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        # the answer to most decisions: one int, as a typed scalar
        tensor = message.tensor
        tensor.dtype = _name(value.dtype) if isinstance(value, np.integer) else "int64"
        tensor.int64s.values.append(int(value))
    elif isinstance(value, dict):
        message.dict.SetInParent()
        for name, item in value.items():
            encode_into(message.dict.items.add(name=str(name)).value, item, typed=typed)
    elif isinstance(value, tuple):
        message.tuple.SetInParent()
        for item in value:
            encode_into(message.tuple.items.add(), item, typed=typed)
    else:
        tensor_into(message.tensor, value, typed=typed)


def _quick_value(tensor: Any, space: gym.Space) -> Any:
    """The value of the two tensors most messages hold, in their space: one int for a
    ``Discrete`` space (most actions), raw bytes of the space's dtype and shape for a ``Box``
    (most observations); None for anything else, or a value outside the space, which
    :func:`decode` then decodes (and refuses) the long way."""
    if type(space) is gym.spaces.Discrete:
        if tensor.WhichOneof("payload") == "int64s" and not tensor.shape:
            values = tensor.int64s.values
            if len(values) == 1 and in_space(space, values[0]):
                return space.dtype.type(values[0])
    elif type(space) is gym.spaces.Box and tensor.WhichOneof("payload") == "raw" \
            and tensor.dtype == _name(space.dtype) and tuple(tensor.shape) == space.shape:
        raw = tensor.raw
        dtype = _little_endian(space.dtype)
        if len(raw) == dtype.itemsize * math.prod(space.shape):
            value = np.frombuffer(raw, dtype).reshape(space.shape).astype(space.dtype)
            if in_space(space, value):
                return value
    return None


def decode(message: Any, space: gym.Space) -> Any:
    """The value ``message`` holds, as a member of ``space`` (its dtype and shape).

    Raises:
        WireValueError: a value of the wrong structure, shape or dtype, or outside ``space``.
    """
    kind = message.WhichOneof("kind")
    if kind == "tensor":
        quick = _quick_value(message.tensor, space)
        if quick is not None:
            return quick
    if isinstance(space, gym.spaces.Dict):
        if kind != "dict":
            raise WireValueError(f"expected a dict value for {space}, got {kind or 'nothing'}")
        items = {item.name: item.value for item in message.dict.items}
        if set(items) != set(space.spaces):
            raise WireValueError(f"a dict value with keys {sorted(items)} for a Dict space "
                                 f"with keys {sorted(space.spaces)}")
        return {name: decode(items[name], sub) for name, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        if kind != "tuple" or len(message.tuple.items) != len(space.spaces):
            raise WireValueError(f"expected a tuple value of {len(space.spaces)} items for "
                                 f"{space}")
        return tuple(decode(item, sub) for item, sub in zip(message.tuple.items, space.spaces))
    if kind != "tensor":
        raise WireValueError(f"expected a tensor for {space}, got {kind or 'nothing'}")
    array = array_of(message.tensor, space.dtype)
    if isinstance(space, gym.spaces.Discrete):
        if array.shape != ():
            raise WireValueError(f"a Discrete action is a scalar, got shape {list(array.shape)}")
        value: Any = array[()]
    elif array.shape != space.shape:
        raise WireValueError(f"shape {list(array.shape)} for {space} (shape "
                             f"{list(space.shape or ())})")
    else:
        value = array
    if not in_space(space, value):
        raise WireValueError(f"{value} is not in {space}")
    return value


# -- spaces -------------------------------------------------------------------------


def space_message(space: gym.Space) -> Any:
    """The ``Space`` message of ``space``.

    Raises:
        WireValueError: a space the wire has no message for (Text, Graph, Sequence...).
    """
    Space = _messages()["Space"]
    message = Space()
    if isinstance(space, gym.spaces.Box):
        message.box.low.CopyFrom(tensor(space.low))
        message.box.high.CopyFrom(tensor(space.high))
        message.box.dtype = space.dtype.name
    elif isinstance(space, gym.spaces.Discrete):
        message.discrete.n = int(space.n)
        message.discrete.start = int(space.start)
    elif isinstance(space, gym.spaces.MultiDiscrete):
        message.multi_discrete.nvec.CopyFrom(tensor(space.nvec))
        message.multi_discrete.start.CopyFrom(tensor(space.start))
        message.multi_discrete.dtype = space.dtype.name
    elif isinstance(space, gym.spaces.MultiBinary):
        message.multi_binary.shape.extend(int(n) for n in np.atleast_1d(space.n))
    elif isinstance(space, gym.spaces.Dict):
        message.dict.SetInParent()
        for name, sub in space.spaces.items():
            message.dict.items.add(name=str(name)).space.CopyFrom(space_message(sub))
    elif isinstance(space, gym.spaces.Tuple):
        message.tuple.SetInParent()
        for sub in space.spaces:
            message.tuple.items.add().CopyFrom(space_message(sub))
    else:
        raise WireValueError(f"{space} has no message on the wire: external envs take Box, "
                             "Discrete, MultiDiscrete, MultiBinary, and Dict or Tuple of them")
    return message


def space_from_message(message: Any) -> gym.Space:
    """The gymnasium space a ``Space`` message describes.

    Raises:
        WireValueError: an empty or malformed space message.
    """
    kind = message.WhichOneof("kind")
    try:
        if kind == "box":
            dtype = np.dtype(message.box.dtype or "float32")
            low, high = array_of(message.box.low), array_of(message.box.high)
            return gym.spaces.Box(low.astype(dtype), high.astype(dtype), low.shape, dtype)
        if kind == "discrete":
            return gym.spaces.Discrete(int(message.discrete.n), start=int(message.discrete.start))
        if kind == "multi_discrete":
            field = message.multi_discrete
            start = array_of(field.start) if field.HasField("start") else None
            return gym.spaces.MultiDiscrete(array_of(field.nvec), np.dtype(field.dtype or "int64"),
                                            start=start)
        if kind == "multi_binary":
            shape = [int(n) for n in message.multi_binary.shape]
            return gym.spaces.MultiBinary(shape[0] if len(shape) == 1 else shape)
        if kind == "dict":
            return gym.spaces.Dict({item.name: space_from_message(item.space)
                                    for item in message.dict.items})
        if kind == "tuple":
            return gym.spaces.Tuple([space_from_message(item) for item in message.tuple.items])
    except WireValueError:
        raise
    except (TypeError, ValueError, AssertionError) as exc:
        raise WireValueError(f"a malformed {kind} space: {exc}") from None
    raise WireValueError("a space message with no kind (set box, discrete, multi_discrete, "
                         "multi_binary, dict or tuple)")
