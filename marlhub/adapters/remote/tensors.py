"""Gymnasium spaces as dm_env_rpc ``TensorSpec`` s, and values as ``Tensor`` s, both ways.

A space is cut into leaves (:func:`leaves_of`): a Dict into its keys, a Tuple
into its positions, down to Discrete, Box, MultiDiscrete, MultiBinary and
Text, each of which is one tensor:

===============  ==========================  =======================================
leaf             TensorSpec                  bounds
===============  ==========================  =======================================
Discrete(n, s)   int64, shape ()             [s, s + n - 1]
Box              its dtype, its shape        low / high (one scalar when uniform,
                                             left out when infinite)
MultiDiscrete    its dtype, its shape        [start, start + nvec - 1]
MultiBinary      int8, its shape             [0, 1]
Text             string, shape ()            none
===============  ==========================  =======================================

dm_env_rpc has no int16, uint16 or float16; those go on the wire as int32,
uint32 and float32 and are cast back on arrival (exactly). A leaf's name is
its path below the agent's name, joined with dm_env_rpc's nesting separator
``.`` (``player_0.observation.action_mask``). Spaces of any other kind raise
:class:`~marlhub.adapters.remote.codec.UnmappableSpace`.

Example:
    >>> import gymnasium as gym
    >>> space = gym.spaces.Dict({"obs": gym.spaces.Box(0, 1, (2,)), "n": gym.spaces.Discrete(3)})
    >>> [(leaf.suffix, leaf.wire.name) for leaf in leaves_of(space)]
    [('.n', 'int64'), ('.obs', 'float32')]
    >>> spec = tensor_spec("a.observation.n", leaves_of(space)[0])
    >>> spec.dtype == dm_env_rpc_pb2.INT64, list(spec.max.int64s.array)
    (True, [2])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.remote.codec import UnmappableSpace
from marlhub.backends import import_backend

dm_env_rpc_pb2 = import_backend("dm_env_rpc.v1.dm_env_rpc_pb2", package="dm_env_rpc", extra="remote",
                                feature="Remote envs (dm_env_rpc)")

__all__ = ["Leaf", "coerce", "dm_env_rpc_pb2", "leaves_of", "pack", "read_sent", "tensor_spec",
           "unpack", "wire_dtype"]

#: numpy dtype -> (dm_env_rpc DataType, Tensor payload field).
PAYLOADS: dict[np.dtype, tuple[int, str]] = {
    np.dtype(np.float32): (dm_env_rpc_pb2.FLOAT, "floats"),
    np.dtype(np.float64): (dm_env_rpc_pb2.DOUBLE, "doubles"),
    np.dtype(np.int8): (dm_env_rpc_pb2.INT8, "int8s"),
    np.dtype(np.int32): (dm_env_rpc_pb2.INT32, "int32s"),
    np.dtype(np.int64): (dm_env_rpc_pb2.INT64, "int64s"),
    np.dtype(np.uint8): (dm_env_rpc_pb2.UINT8, "uint8s"),
    np.dtype(np.uint32): (dm_env_rpc_pb2.UINT32, "uint32s"),
    np.dtype(np.uint64): (dm_env_rpc_pb2.UINT64, "uint64s"),
    np.dtype(np.bool_): (dm_env_rpc_pb2.BOOL, "bools"),
}
#: Payload field -> the numpy dtype it holds.
FIELD_DTYPES = {name: dtype for dtype, (_, name) in PAYLOADS.items()}
FIELD_DTYPES["strings"] = np.dtype(np.str_)
#: dtypes dm_env_rpc lacks, and the wider one that carries them.
WIDER = {np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint16): np.dtype(np.uint32),
         np.dtype(np.float16): np.dtype(np.float32)}
_BYTES_FIELDS = frozenset({"int8s", "uint8s"})
_INT64 = (-(2**63), 2**63 - 1)


def wire_dtype(dtype: Any) -> np.dtype:
    """Return the dtype that carries ``dtype`` on the wire.

    Raises:
        UnmappableSpace: dm_env_rpc has no tensor type for it (complex, object...).
    """
    dtype = np.dtype(dtype)
    dtype = WIDER.get(dtype, dtype)
    if dtype not in PAYLOADS:
        raise UnmappableSpace(f"dtype {dtype} has no dm_env_rpc tensor type")
    return dtype


@dataclass(frozen=True)
class Leaf:
    """One tensor of a space: where it sits in a value, its space and its types.

    Attributes:
        path: the Dict keys and Tuple positions leading to it (empty for a flat space).
        suffix: the path as a name suffix (``".observation"`` is added before it).
        space: the leaf space.
        kind: ``"discrete"``, ``"array"`` or ``"text"``.
        dtype: the values' dtype (int64 for Discrete, str for Text).
        wire: the dtype on the wire.
        shape: the values' shape.
        payload: the ``Tensor`` payload field that carries it (``"floats"``...).
        put: ``put(value, tensor)`` fills an empty ``Tensor`` with a value that
            :meth:`fits`, as :func:`pack` would, with the work of finding how done once.
        read: ``read(tensor)`` returns what :func:`unpack` does.
    """

    path: tuple[Any, ...]
    suffix: str
    space: gym.Space
    kind: str
    dtype: np.dtype
    wire: np.dtype
    shape: tuple[int, ...]
    payload: str = ""
    put: Callable[[Any, Any], None] = field(init=False, repr=False, compare=False)
    read: Callable[[Any], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "put", _putter(self))
        object.__setattr__(self, "read", _reader(self))

    def fits(self, value: Any) -> bool:
        """Tell whether ``value`` travels as this tensor and comes back identical.

        Arrays of exactly the leaf's dtype and shape, Python ints in the int64 range
        for Discrete and Python strings for Text do; anything else travels as JSON
        (see ``codec``).
        """
        if self.kind == "array":
            if type(value) is not np.ndarray:
                return False
            dtype = value.dtype
            return (dtype is self.dtype or dtype == self.dtype) and value.shape == self.shape
        if self.kind == "discrete":
            return type(value) is int and _INT64[0] <= value <= _INT64[1]
        return type(value) is str

    def get(self, value: Any) -> Any:
        """Return this leaf's part of a whole value (raises if the value has no such part)."""
        for key in self.path:
            value = value[key]
        return value


def leaves_of(space: gym.Space, path: tuple[Any, ...] = ()) -> list[Leaf]:
    """Return the tensors of ``space``, in order (Dict order, then Tuple order).

    Raises:
        UnmappableSpace: the space, or one inside it, has no dm_env_rpc form.
    """
    suffix = "".join(f".{part}" for part in path)
    if isinstance(space, gym.spaces.Dict):
        found: list[Leaf] = []
        for key, sub in space.spaces.items():
            if not isinstance(key, str) or not key or "." in key:
                raise UnmappableSpace(f"Dict key {key!r} cannot be part of a tensor name "
                                      "(keys must be non-empty strings without '.')")
            found += leaves_of(sub, path + (key,))
        return found
    if isinstance(space, gym.spaces.Tuple):
        return [leaf for i, sub in enumerate(space.spaces) for leaf in leaves_of(sub, path + (i,))]
    kind: str
    dtype: np.dtype
    shape: tuple[int, ...]
    if isinstance(space, gym.spaces.Discrete):
        kind, dtype, shape = "discrete", np.dtype(np.int64), ()
    elif isinstance(space, (gym.spaces.Box, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        kind, dtype, shape = "array", np.dtype(space.dtype), tuple(space.shape)
    elif isinstance(space, gym.spaces.Text):
        return [Leaf(path, suffix, space, "text", np.dtype(np.str_), np.dtype(np.str_), (), "strings")]
    else:
        raise UnmappableSpace(
            f"{space!r} ({type(space).__name__}) has no dm_env_rpc form: the remote protocol "
            "maps Discrete, Box, MultiDiscrete, MultiBinary, Text, and Dict / Tuple of those")
    wire = wire_dtype(dtype)
    return [Leaf(path, suffix, space, kind, dtype, wire, shape, PAYLOADS[wire][1])]


def _bounds(leaf: Leaf) -> tuple[Optional[Any], Optional[Any]]:
    space = leaf.space
    if isinstance(space, gym.spaces.Discrete):
        return int(space.start), int(space.start + space.n - 1)
    if isinstance(space, gym.spaces.MultiBinary):
        return 0, 1
    if isinstance(space, gym.spaces.MultiDiscrete):
        return space.start, space.start + space.nvec - 1
    if isinstance(space, gym.spaces.Box) and leaf.wire.kind != "b":
        return _one_bound(space.low), _one_bound(space.high)
    return None, None


def _one_bound(values: np.ndarray) -> Optional[Any]:
    """A Box bound as dm_env_rpc likes it: a scalar when uniform, None when all infinite."""
    flat = np.asarray(values).ravel()
    if flat.size == 0 or (flat.dtype.kind == "f" and not np.isfinite(flat).any()):
        return None
    return flat[0] if np.all(flat == flat[0]) else values


def tensor_spec(name: str, leaf: Leaf) -> Any:
    """Return the ``TensorSpec`` of ``leaf`` under ``name``, with its bounds."""
    from dm_env_rpc.v1 import tensor_spec_utils

    spec = dm_env_rpc_pb2.TensorSpec(name=name, shape=list(leaf.shape),
                                     dtype=dm_env_rpc_pb2.STRING if leaf.kind == "text"
                                     else PAYLOADS[leaf.wire][0])
    low, high = _bounds(leaf)
    if low is not None or high is not None:
        tensor_spec_utils.set_bounds(
            spec, None if low is None else np.asarray(low).astype(leaf.wire),
            None if high is None else np.asarray(high).astype(leaf.wire))
    return spec


def pack(value: Any, wire: np.dtype, shape: tuple[int, ...], tensor: Any = None) -> Any:
    """Return (or fill) a ``Tensor`` holding ``value`` as ``wire`` values of ``shape``.

    ``value`` must already have that many elements (see :func:`coerce`).
    """
    tensor = dm_env_rpc_pb2.Tensor() if tensor is None else tensor
    tensor.shape.extend(shape)
    if wire.kind == "U":
        tensor.strings.array.extend(np.asarray(value, dtype=object).ravel().tolist())
        tensor.strings.SetInParent()
        return tensor
    name = PAYLOADS[wire][1]
    payload = getattr(tensor, name)
    array = np.asarray(value)
    if array.dtype != wire:
        array = array.astype(wire)
    if name in _BYTES_FIELDS:
        payload.array = array.tobytes()
    else:
        payload.array.extend(array.ravel().tolist())
    payload.SetInParent()  # an empty array still names its type
    return tensor


def unpack(tensor: Any, leaf: Leaf) -> Any:
    """Return the value a ``Tensor`` of ``leaf`` holds, as the leaf's own type.

    The tensor is trusted to have the leaf's wire type and exact shape (a
    server reads what clients send with :func:`read_sent` instead).
    """
    return leaf.read(tensor)


def _putter(leaf: Leaf) -> Callable[[Any, Any], None]:
    """``Leaf.put``: the few protobuf calls that fill a tensor with a value that fits."""
    name, shape, wire = leaf.payload, leaf.shape, leaf.wire
    if leaf.kind == "discrete":
        return lambda value, tensor: getattr(tensor, name).array.append(value)
    if leaf.kind == "text":
        return lambda value, tensor: tensor.strings.array.append(value)
    same, empty = wire == leaf.dtype, int(np.prod(shape)) == 0

    def put(value: Any, tensor: Any) -> None:
        tensor.shape.extend(shape)
        payload = getattr(tensor, name)
        array = value if same else value.astype(wire)
        if name in _BYTES_FIELDS:  # raw bytes on the wire: one copy, no Python numbers
            payload.array = array.tobytes()
        else:
            payload.array.extend(array.ravel().tolist())
        if empty:
            payload.SetInParent()  # an empty array still names its type

    return put


def _reader(leaf: Leaf) -> Callable[[Any], Any]:
    """``Leaf.read``: a tensor of the leaf's wire type and shape back to the leaf's value."""
    name, shape, wire, dtype = leaf.payload, leaf.shape, leaf.wire, leaf.dtype
    if leaf.kind == "text":
        return lambda tensor: str(tensor.strings.array[0])
    if leaf.kind == "discrete":
        return lambda tensor: int(getattr(tensor, name).array[0])
    same = wire == dtype

    def read(tensor: Any) -> Any:
        values = getattr(tensor, name).array
        if name in _BYTES_FIELDS:
            array = np.frombuffer(values, dtype=wire).reshape(shape)
            return array.copy() if same else array.astype(dtype)
        array = np.fromiter(values, dtype=wire, count=len(values)).reshape(shape)
        return array if same else array.astype(dtype)

    return read


def coerce(value: Any, leaf: Leaf) -> np.ndarray:
    """Return ``value`` as an array of the leaf's wire dtype and shape, for a tensor.

    Raises:
        ValueError: the value cannot be read as such an array.
    """
    if leaf.kind == "text":
        if not isinstance(value, str):
            raise ValueError(f"expected a string, got {type(value).__name__}")
        return np.asarray(value, dtype=object)
    array = np.asarray(value)
    if array.shape != leaf.shape:
        raise ValueError(f"expected shape {leaf.shape}, got {array.shape}")
    if array.dtype.kind not in "biuf":
        raise ValueError(f"expected numbers, got dtype {array.dtype}")
    return array.astype(leaf.wire, copy=False)


def read_sent(tensor: Any, leaf: Leaf, *, check_bounds: bool) -> Any:
    """Return the value of a ``Tensor`` a client sent for ``leaf``, checked as dm_env_rpc says.

    The payload type must be the leaf's wire type; the shape the leaf's, where
    one dimension may be ``-1`` (inferred) and a single value fills any shape
    (a broadcast tensor). With ``check_bounds`` values outside the spec's
    bounds are refused too.

    Raises:
        ValueError: what is wrong with the tensor, in words.
    """
    sent = tensor.WhichOneof("payload")
    if sent != leaf.payload:
        raise ValueError(f"expected {leaf.payload} ({leaf.wire.name}) values, got "
                         f"{sent or 'no values'}")
    if leaf.kind == "text":
        values: Any = np.array(list(tensor.strings.array), dtype=object)
    elif leaf.payload in _BYTES_FIELDS:
        values = np.frombuffer(getattr(tensor, sent).array, dtype=leaf.wire).copy()
    else:
        values = np.array(list(getattr(tensor, sent).array), dtype=leaf.wire)
    values = _shaped(values, list(tensor.shape), leaf.shape)
    if check_bounds and leaf.kind != "text":
        low, high = _bounds(leaf)
        if low is not None and np.any(values < np.asarray(low)):
            raise ValueError(f"values below the minimum {np.asarray(low).tolist()}")
        if high is not None and np.any(values > np.asarray(high)):
            raise ValueError(f"values above the maximum {np.asarray(high).tolist()}")
    if leaf.kind == "discrete":
        return int(values)
    if leaf.kind == "text":
        return str(values.item())
    return values if leaf.wire == leaf.dtype else values.astype(leaf.dtype)


def _shaped(values: np.ndarray, sent: list[int], expected: tuple[int, ...]) -> np.ndarray:
    """Apply dm_env_rpc's shape rules (one -1 inferred; one value broadcast) and check the shape."""
    if len(sent) != len(expected):
        raise ValueError(f"expected shape {list(expected)}, got {sent}")
    if sum(1 for d in sent if d < 0) > 1:
        raise ValueError(f"shape {sent} has more than one variable (negative) dimension")
    if values.size == 1 and values.size != int(np.prod(expected)):
        return np.full(expected, values.ravel()[0], dtype=values.dtype)
    if not sent:
        if values.size != 1:
            raise ValueError(f"a scalar must have exactly one value, got {values.size}")
        return values.reshape(())
    try:
        shaped = values.reshape(sent)
    except ValueError:
        raise ValueError(f"{values.size} values do not make shape {sent}") from None
    if shaped.shape != expected:
        raise ValueError(f"expected shape {list(expected)}, got {list(shaped.shape)}")
    return shaped
