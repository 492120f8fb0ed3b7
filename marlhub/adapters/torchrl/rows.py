"""Whole batches through a codec: ``(num_envs, n, ...)`` arrays in and out of TorchRL's specs.

:class:`~marlhub.adapters.torchrl.specs.Codec` turns one agent's value into
its spec's arrays; :func:`encode_rows` and :func:`decode_rows` do the same
for a whole group of a vector env at once, in numpy, for the ``to_torchrl``
view of a vector env (:mod:`~marlhub.adapters.torchrl.vector_view`).

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from marlhub.adapters.torchrl.specs import codec_for
    >>> hot = codec_for(gym.spaces.Discrete(3, start=1), agent="a", role="action",
    ...                 categorical=False)
    >>> encode_rows(hot, np.array([[1, 3]])).tolist()
    [[[1, 0, 0], [0, 0, 1]]]
    >>> decode_rows(hot, encode_rows(hot, np.array([[1, 3]]))).tolist()
    [[1, 3]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marlhub.adapters.torchrl.specs import (
    BoxCodec,
    Codec,
    DictCodec,
    DiscreteCodec,
    MultiBinaryCodec,
    MultiDiscreteCodec,
)

__all__ = ["decode_rows", "encode_rows"]


def encode_rows(codec: Codec, values: Any) -> Any:
    """Encode ``values`` (leading dims ``(num_envs, n)``, hub values) for ``codec``'s spec."""
    if isinstance(codec, DictCodec):
        if codec.is_tuple:
            return {k: encode_rows(c, values[int(k)]) for k, c in codec.members.items()}
        return {k: encode_rows(c, values[k]) for k, c in codec.members.items()}
    values = np.asarray(values)
    lead = values.shape[:2]
    if isinstance(codec, DiscreteCodec):
        index = values.reshape(lead).astype(np.int64) - codec.start
        return index if codec.categorical else np.eye(codec.n, dtype=np.int64)[index]
    if isinstance(codec, MultiDiscreteCodec):
        index = values.astype(np.int64) - codec.start
        if codec.categorical:
            return index
        return np.concatenate([np.eye(int(n), dtype=np.int64)[index[..., k]]
                               for k, n in enumerate(codec.nvec)], -1)
    if isinstance(codec, BoxCodec):
        return values.astype(codec.dtype, copy=False).reshape(*lead, *codec.shape)
    if isinstance(codec, MultiBinaryCodec):
        return values.astype(codec.space.dtype, copy=False)
    raise TypeError(f"no batched encoding for {type(codec).__name__}")


def decode_rows(codec: Codec, data: Any) -> Any:
    """Decode ``data`` (leading dims ``(num_envs, n)``, spec values) into hub values."""
    if isinstance(codec, DictCodec):
        decoded = {k: decode_rows(c, data[k]) for k, c in codec.members.items()}
        return tuple(decoded.values()) if codec.is_tuple else decoded
    array = data.detach().cpu().numpy() if hasattr(data, "detach") else np.asarray(data)
    lead = array.shape[:2]
    if isinstance(codec, DiscreteCodec):
        index = array.reshape(lead) if codec.categorical else array.argmax(-1)
        return index.astype(np.int64) + codec.start
    if isinstance(codec, MultiDiscreteCodec):
        if not codec.categorical:
            pieces = np.split(array, np.cumsum(codec.nvec)[:-1], axis=-1)
            array = np.stack([p.argmax(-1) for p in pieces], -1)
        return (array.astype(np.int64) + codec.start).astype(codec.dtype)
    if isinstance(codec, BoxCodec):
        return array.astype(codec.dtype, copy=False).reshape(*lead, *(codec.space.shape or ()))
    if isinstance(codec, MultiBinaryCodec):
        return array.astype(codec.space.dtype, copy=False)
    raise TypeError(f"no batched decoding for {type(codec).__name__}")
