"""Whole batches through a codec: ``(num_envs, n, ...)`` arrays in and out of TorchRL's specs.

:class:`~marlhub.adapters.torchrl.specs.Codec` turns one agent's value into
its spec's arrays; :func:`encode_rows` and :func:`decode_rows` do the same
for a whole group of a vector env at once, for the ``to_torchrl`` view of a
vector env (:mod:`~marlhub.adapters.torchrl.vector_view`): in numpy, or in
torch on the tensors' own device where the vector env's array face gives torch
tensors (a batched simulator made with ``as_torch=True``), so that a batch on a
GPU never goes through the host.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from marlhub.adapters.torchrl.specs import codec_for
    >>> hot = codec_for(gym.spaces.Discrete(3, start=1), agent="a", role="action",
    ...                 categorical=False)
    >>> encode_rows(hot, np.array([[1, 3]])).tolist()
    [[[1, 0, 0], [0, 0, 1]]]
    >>> decode_rows(hot, encode_rows(hot, np.array([[1, 3]]))).tolist()
    [[1, 3]]
    >>> import torch
    >>> encode_rows(hot, torch.tensor([[1, 3]])).tolist()  # torch stays torch
    [[[1, 0, 0], [0, 0, 1]]]
    >>> decode_rows(hot, torch.tensor([[[0, 1, 0]]]), as_torch=True)
    tensor([[2]])
"""

from __future__ import annotations

import functools
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

__all__ = ["decode_rows", "encode_rows", "is_tensor"]


def encode_rows(codec: Codec, values: Any) -> Any:
    """Encode ``values`` (leading dims ``(num_envs, n)``, hub values) for ``codec``'s spec."""
    if isinstance(codec, DictCodec):
        if codec.is_tuple:
            return {k: encode_rows(c, values[int(k)]) for k, c in codec.members.items()}
        return {k: encode_rows(c, values[k]) for k, c in codec.members.items()}
    if is_tensor(values):
        return _encode_tensor(codec, values)
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


def decode_rows(codec: Codec, data: Any, *, as_torch: bool = False) -> Any:
    """Decode ``data`` (leading dims ``(num_envs, n)``, spec values) into hub values.

    Args:
        codec: the slot's codec.
        data: the group's spec values (a tensor, or anything numpy reads).
        as_torch: keep a tensor a tensor, on its device (else numpy on the host).
    """
    if isinstance(codec, DictCodec):
        decoded = {k: decode_rows(c, data[k], as_torch=as_torch)
                   for k, c in codec.members.items()}
        return tuple(decoded.values()) if codec.is_tuple else decoded
    if as_torch and is_tensor(data):
        return _decode_tensor(codec, data)
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


# -- the same in torch, on the tensors' device ----------------------------------------------

def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (never imports torch)."""
    return hasattr(value, "detach") and hasattr(value, "device")


def _encode_tensor(codec: Codec, values: Any) -> Any:
    import torch
    from torch.nn.functional import one_hot

    lead = values.shape[:2]
    if isinstance(codec, DiscreteCodec):
        index = values.reshape(lead).long() - codec.start
        return index if codec.categorical else one_hot(index, codec.n)
    if isinstance(codec, MultiDiscreteCodec):
        index = values.long() - torch.as_tensor(codec.start, device=values.device)
        if codec.categorical:
            return index
        return torch.cat([one_hot(index[..., k], int(n)) for k, n in enumerate(codec.nvec)], -1)
    if isinstance(codec, BoxCodec):
        return values.to(_torch_dtype(codec.dtype)).reshape(*lead, *codec.shape)
    if isinstance(codec, MultiBinaryCodec):
        return values.to(_torch_dtype(codec.space.dtype))
    raise TypeError(f"no batched encoding for {type(codec).__name__}")


def _decode_tensor(codec: Codec, data: Any) -> Any:
    import torch

    data = data.detach()
    lead = data.shape[:2]
    if isinstance(codec, DiscreteCodec):
        index = data.reshape(lead) if codec.categorical else data.argmax(-1)
        return index.long() + codec.start
    if isinstance(codec, MultiDiscreteCodec):
        if not codec.categorical:
            pieces = torch.split(data, [int(n) for n in codec.nvec], -1)
            data = torch.stack([p.argmax(-1) for p in pieces], -1)
        start = torch.as_tensor(codec.start, device=data.device)
        return (data.long() + start).to(_torch_dtype(codec.dtype))
    if isinstance(codec, BoxCodec):
        return data.to(_torch_dtype(codec.dtype)).reshape(*lead, *(codec.space.shape or ()))
    if isinstance(codec, MultiBinaryCodec):
        return data.to(_torch_dtype(codec.space.dtype))
    raise TypeError(f"no batched decoding for {type(codec).__name__}")


@functools.cache
def _torch_dtype(dtype: Any) -> Any:
    """The torch dtype of a numpy dtype (as ``torch.from_numpy`` would give it)."""
    import torch

    return torch.from_numpy(np.zeros(0, dtype)).dtype
