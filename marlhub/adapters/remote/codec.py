"""Python values and gymnasium spaces as JSON text, for what dm_env_rpc's tensors cannot carry.

Observations travel as dm_env_rpc tensors; everything else a hub env returns
(reward dicts in their key order, done flags, infos with arrays inside, the
agent list, reset options, action values that do not fit their space) travels
as JSON in one string tensor, written by :func:`dumps` and read back by
:func:`loads` into values equal to the originals, types included: numpy
arrays and scalars keep their dtype, tuples stay tuples, dicts keep their key
order and their non-string keys (agent ids may be ints).

JSON values stand for themselves; a one-key object whose key starts with
``~`` is a tagged value (``{"~a": [dtype, shape, base64]}`` an array,
``{"~s": [dtype, value]}`` a numpy scalar, ``{"~t": [...]}`` a tuple,
``{"~d": [[key, value], ...]}`` a dict whose keys are not all plain strings,
``{"~b": base64}`` bytes, ``{"~r": [type, repr]}`` an object with no JSON
form, read back as the text ``"<unencodable TYPE: REPR>"``). Nothing is ever
imported or called to read a value: unlike pickle, a server cannot make its
client run code.

:func:`describe_space` and :func:`space_from` do the same for the spaces a
server announces (Discrete, Box, MultiDiscrete, MultiBinary, Text, Dict and
Tuple of those); any other space raises :class:`UnmappableSpace`.

Example:
    >>> import numpy as np
    >>> value = {0: (np.float32(0.5), np.arange(3, dtype=np.int8)), "__all__": False}
    >>> back = loads(dumps(value))
    >>> back[0][1].dtype, type(back[0]).__name__, list(back)
    (dtype('int8'), 'tuple', [0, '__all__'])
    >>> import gymnasium as gym
    >>> space = gym.spaces.Dict({"obs": gym.spaces.Box(0, 1, (2,)), "n": gym.spaces.Discrete(3, start=1)})
    >>> space_from(describe_space(space)) == space
    True
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

__all__ = ["IN_TENSORS", "UnmappableSpace", "decode", "describe_space", "dumps", "encode", "loads",
           "space_from"]


class UnmappableSpace(ValueError):
    """A space that has no description (and no dm_env_rpc tensors): Graph, Sequence, OneOf..."""


class _InTensors:
    """Marks a value that travels in tensors beside the JSON (an observation)."""

    def __repr__(self) -> str:
        return "IN_TENSORS"


#: Stands in the JSON for a value sent as tensors; ``{"~T": 0}`` on the wire.
IN_TENSORS = _InTensors()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _array(value: np.ndarray) -> Any:
    if value.dtype.kind in "biufc":
        return {"~a": [value.dtype.str, list(value.shape), _b64(np.ascontiguousarray(value).tobytes())]}
    if value.dtype.kind == "U":
        return {"~au": [value.dtype.str, list(value.shape), value.ravel().tolist()]}
    return {"~ao": [list(value.shape), [encode(item) for item in value.ravel().tolist()]]}


def _scalar(value: np.generic) -> Any:
    if value.dtype.kind in "biuf":
        return {"~s": [value.dtype.str, value.item()]}
    if value.dtype.kind == "U":
        return {"~su": str(value)}
    return _array(np.asarray(value))  # complex and others: as a 0-d array


def _dict(value: dict) -> Any:
    if all(type(k) is str and not k.startswith("~") for k in value):
        return {k: encode(v) for k, v in value.items()}
    return {"~d": [[encode(k), encode(v)] for k, v in value.items()]}


_PLAIN = (str, int, float, bool, type(None))
_ENCODERS: dict[type, Callable[[Any], Any]] = {
    list: lambda v: [encode(x) for x in v],
    tuple: lambda v: {"~t": [encode(x) for x in v]},
    dict: _dict,
    np.ndarray: _array,
    bytes: lambda v: {"~b": _b64(v)},
    set: lambda v: {"~set": [encode(x) for x in v]},
    frozenset: lambda v: {"~fset": [encode(x) for x in v]},
    complex: lambda v: {"~c": [v.real, v.imag]},
    _InTensors: lambda v: {"~T": 0},
}


def encode(value: Any) -> Any:
    """Return ``value`` as JSON-ready data (see the module docstring)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    encoder = _ENCODERS.get(kind)
    if encoder is not None:
        return encoder(value)
    if isinstance(value, np.generic):
        return _scalar(value)
    if isinstance(value, dict):  # OrderedDict, defaultdict: their items, in order
        return _dict(dict(value))
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):  # IntEnum and other int subclasses
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, tuple):  # named tuples: their items
        return _ENCODERS[tuple](value)
    if isinstance(value, list):
        return _ENCODERS[list](value)
    return {"~r": [type(value).__qualname__, repr(value)[:200]]}


def _from_b64(dtype: str, shape: list[int], data: str) -> np.ndarray:
    raw = base64.b64decode(data)
    return np.frombuffer(raw, dtype=np.dtype(dtype)).reshape(shape).copy()




def _object_array(shape: list[int], items: list[Any]) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array.reshape(shape)


def _hook(data: dict[str, Any]) -> Any:
    """Read one JSON object whose members are read already (json's ``object_hook``)."""
    if len(data) == 1:
        [key] = data
        if key[:1] == "~":
            reader = _READERS.get(key)
            if reader is None:
                raise ValueError(f"unknown tag {key!r} in a marlhub remote message")
            return reader(data[key])
    return data


#: Tag -> reader of its content, whose JSON objects are read already.
_READERS: dict[str, Callable[[Any], Any]] = {
    "~a": lambda v: _from_b64(*v),
    "~au": lambda v: np.array(v[2], dtype=np.dtype(v[0])).reshape(v[1]),
    "~ao": lambda v: _object_array(v[0], v[1]),
    "~s": lambda v: np.dtype(v[0]).type(v[1]),
    "~su": np.str_,
    "~t": tuple,
    "~d": lambda v: {k: x for k, x in v},
    "~b": base64.b64decode,
    "~set": set,
    "~fset": frozenset,
    "~c": lambda v: complex(v[0], v[1]),
    "~r": lambda v: f"<unencodable {v[0]}: {v[1]}>",
    "~T": lambda v: IN_TENSORS,
}


def decode(data: Any) -> Any:
    """Return the value that :func:`encode` turned into ``data``."""
    kind = type(data)
    if kind is list:
        return [decode(x) for x in data]
    if kind is dict:
        return _hook({k: decode(v) for k, v in data.items()})
    return data


_SCALARS = frozenset({str, int, float, bool, type(None)})
#: What json writes as it is, or (the marker) through ``_default``: no walk needed.
_LEAVES = _SCALARS | {_InTensors}


def _plain_json(value: Any) -> bool:
    """Whether json writes ``value`` as it is, or through ``_default`` only, with nothing lost.

    json would silently turn tuples into lists and non-string keys into strings.
    """
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or key[:1] == "~":
                return False
            if type(item) not in _LEAVES and not _plain_json(item):
                return False
        return True
    if kind is list:
        for item in value:
            if type(item) not in _LEAVES and not _plain_json(item):
                return False
        return True
    return not isinstance(value, (dict, list, tuple, set, frozenset))


def _default(value: Any) -> Any:
    """What json calls for the objects it does not know (arrays, numpy scalars, markers)."""
    return _MARK if value is IN_TENSORS else encode(value)


_MARK = {"~T": 0}


_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_default, check_circular=False)
_DECODER = json.JSONDecoder(object_hook=_hook)


def _encoder() -> Callable[[Any], str]:
    """``_ENCODER.encode`` without building json's C encoder again on every call."""
    make: Any = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # no C encoder: json's own way
        return _ENCODER.encode
    try:
        chunks = make(None, _default, json.encoder.encode_basestring_ascii, None, ":", ",",
                      False, False, True)  # what JSONEncoder.iterencode passes it
    except TypeError:  # another signature
        return _ENCODER.encode
    return lambda value: "".join(chunks(value, 0))


_ENCODE = _encoder()


def dumps(value: Any) -> str:
    """Return ``value`` as JSON text (NaN and infinities included, as Python writes them)."""
    if _plain_json(value):
        return _ENCODE(value)
    return _ENCODE(encode(value))


def loads(text: str) -> Any:
    """Return the value that :func:`dumps` wrote."""
    return _DECODER.decode(text)


# -- spaces ----------------------------------------------------------------------------


def describe_space(space: gym.Space) -> dict[str, Any]:
    """Return a JSON-ready description of ``space`` that :func:`space_from` rebuilds.

    Raises:
        UnmappableSpace: a space other than Discrete, Box, MultiDiscrete,
            MultiBinary, Text, or Dict / Tuple of those.
    """
    if isinstance(space, gym.spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, gym.spaces.Box):
        return {"type": "Box", "low": encode(space.low), "high": encode(space.high),
                "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": encode(space.nvec), "start": encode(space.start),
                "dtype": np.dtype(space.dtype).str}
    if isinstance(space, gym.spaces.MultiBinary):
        return {"type": "MultiBinary", "n": encode(space.n)}
    if isinstance(space, gym.spaces.Text):
        return {"type": "Text", "max_length": space.max_length, "min_length": space.min_length,
                "charset": space.characters}
    if isinstance(space, gym.spaces.Dict):
        bad = [k for k in space.spaces if not isinstance(k, str)]
        if bad:
            raise UnmappableSpace(f"a Dict space with non-string keys {bad!r}")
        return {"type": "Dict", "spaces": [[k, describe_space(s)] for k, s in space.spaces.items()]}
    if isinstance(space, gym.spaces.Tuple):
        return {"type": "Tuple", "spaces": [describe_space(s) for s in space.spaces]}
    raise UnmappableSpace(
        f"{space!r} ({type(space).__name__}) has no dm_env_rpc form: the remote protocol maps "
        "Discrete, Box, MultiDiscrete, MultiBinary, Text, and Dict / Tuple of those")


def space_from(description: dict[str, Any]) -> gym.Space:
    """Return the space that :func:`describe_space` described."""
    kind = description["type"]
    if kind == "Discrete":
        return gym.spaces.Discrete(description["n"], start=description["start"])
    if kind == "Box":
        low, high = decode(description["low"]), decode(description["high"])
        return gym.spaces.Box(low, high, shape=low.shape, dtype=np.dtype(description["dtype"]))
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(decode(description["nvec"]), dtype=np.dtype(description["dtype"]),
                                        start=decode(description["start"]))
    if kind == "MultiBinary":
        return gym.spaces.MultiBinary(decode(description["n"]))
    if kind == "Text":
        return gym.spaces.Text(description["max_length"], min_length=description["min_length"],
                               charset=description["charset"])
    if kind == "Dict":
        return gym.spaces.Dict({k: space_from(s) for k, s in description["spaces"]})
    if kind == "Tuple":
        return gym.spaces.Tuple([space_from(s) for s in description["spaces"]])
    raise ValueError(f"unknown space type {kind!r} in a remote env's description")
