"""TorchRL -> hub: one agent's TorchRL spec as a gymnasium space, with the codec of its values.

The reverse of :mod:`~marlhub.adapters.torchrl.specs`: each spec becomes the
hub space whose :class:`~marlhub.adapters.torchrl.specs.Codec` builds that same
spec, so values cross with the same ``encode`` (hub -> tensor) and ``decode``
(tensor -> hub) in both directions.

===========================  ==================================================
TorchRL spec                 hub space
===========================  ==================================================
``Categorical(n)``           ``Discrete(n)`` (a shape ``(k,)``: ``MultiDiscrete([n] * k)``)
``OneHot(n)``                ``Discrete(n)``, sent and read as one-hot
``MultiCategorical(nvec)``   ``MultiDiscrete(nvec)``
``MultiOneHot(nvec)``        ``MultiDiscrete(nvec)``, sent and read as one-hot
``Bounded`` / ``Unbounded``  ``Box(low, high)`` (infinite bounds when unbounded)
``Binary``                   ``MultiBinary`` (a bool ``Binary``: a bool ``Box``)
``Composite``                ``Dict``
anything else                refused: :class:`~marlhub.errors.ConfigError`
===========================  ==================================================

Example:
    >>> from torchrl.data import Categorical, OneHot, Bounded
    >>> space, codec = space_of_spec(OneHot(3), agent="a", role="action")
    >>> space, codec.encode(2).tolist(), codec.decode(np.array([0, 1, 0]))
    (Discrete(3), [0, 0, 1], np.int64(1))
    >>> space_of_spec(Bounded(-1.0, 1.0, shape=(2,)), agent="a", role="action")[0]
    Box(-1.0, 1.0, (2,), float32)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.adapters.torchrl.specs import (
    BoxCodec,
    Codec,
    DictCodec,
    DiscreteCodec,
    MultiBinaryCodec,
    MultiDiscreteCodec,
)
from marlhub.errors import ConfigError

__all__ = ["numpy_dtype", "space_of_spec"]

#: Who refuses a spec, in error messages.
OWNER = "from_torchrl"


def numpy_dtype(torch_dtype: Any) -> np.dtype:
    """Return the numpy dtype of a torch dtype.

    Example:
        >>> import torch
        >>> numpy_dtype(torch.float32)
        dtype('float32')
    """
    import torch

    return np.dtype(torch.empty(0, dtype=torch_dtype).numpy().dtype)


def space_of_spec(spec: Any, *, agent: Any, role: str, path: str = "") -> tuple[gym.Space, Codec]:
    """Return ``(space, codec)`` for one agent's TorchRL ``spec``.

    Args:
        spec: a TorchRL spec without batch or agent dimensions.
        agent: the agent whose spec it is (for the error message).
        role: ``"observation"`` or ``"action"`` (for the error message).
        path: where ``spec`` sits inside the agent's spec (for the error message).

    Raises:
        ConfigError: a spec no gymnasium space holds (``NonTensor``, for one).
    """
    from torchrl.data import (
        Binary,
        Categorical,
        Composite,
        MultiCategorical,
        MultiOneHot,
        OneHot,
    )

    if isinstance(spec, Composite):
        members = {key: space_of_spec(sub, agent=agent, role=role, path=f"{path}[{key!r}]")
                   for key, sub in spec.items()}
        space = gym.spaces.Dict({key: sp for key, (sp, _) in members.items()})
        return space, DictCodec(space, {key: codec for key, (_, codec) in members.items()})
    if isinstance(spec, MultiOneHot):
        nvec = [int(n) for n in spec.nvec]
        multi = gym.spaces.MultiDiscrete(nvec)
        return multi, MultiDiscreteCodec(multi, categorical=False)
    if isinstance(spec, OneHot):
        discrete = gym.spaces.Discrete(int(spec.n))
        return discrete, DiscreteCodec(discrete, categorical=False)
    if isinstance(spec, MultiCategorical):
        multi = gym.spaces.MultiDiscrete(np.asarray(spec.nvec).reshape(spec.shape).tolist())
        return multi, MultiDiscreteCodec(multi, categorical=True)
    if isinstance(spec, Categorical):
        return _categorical(spec)
    if isinstance(spec, Binary) and numpy_dtype(spec.dtype) != np.bool_:
        binary = gym.spaces.MultiBinary(list(spec.shape))
        return binary, MultiBinaryCodec(binary)
    if _is_array_spec(spec):
        box = _box(spec)
        return box, BoxCodec(box)
    where = f"the {role} spec of agent {agent!r}" + (f" at {path}" if path else "")
    raise ConfigError(OWNER, f"{where} is a {type(spec).__name__}, which no gymnasium space holds",
                      fix="Give that agent tensor specs (Bounded, Unbounded, Categorical, OneHot, "
                          "MultiCategorical, MultiOneHot, Binary or Composite of those), or "
                          "exclude the entry with a TorchRL transform (ExcludeTransform).")


def _categorical(spec: Any) -> tuple[gym.Space, Codec]:
    n = int(spec.space.n)
    shape = tuple(spec.shape)
    if shape == ():
        discrete = gym.spaces.Discrete(n)
        return discrete, DiscreteCodec(discrete, categorical=True)
    multi = gym.spaces.MultiDiscrete(np.full(shape, n, dtype=np.int64))
    return multi, MultiDiscreteCodec(multi, categorical=True)


def _is_array_spec(spec: Any) -> bool:
    from torchrl.data import Binary, Bounded, Unbounded

    return isinstance(spec, (Bounded, Unbounded, Binary))


def _box(spec: Any) -> gym.spaces.Box:
    from torchrl.data import Bounded

    dtype = numpy_dtype(spec.dtype)
    shape = tuple(spec.shape)
    if dtype == np.bool_:
        return gym.spaces.Box(False, True, shape, np.bool_)  # type: ignore[arg-type]
    if isinstance(spec, Bounded):
        low = spec.space.low.detach().cpu().numpy().astype(dtype)
        high = spec.space.high.detach().cpu().numpy().astype(dtype)
        return gym.spaces.Box(low, high, shape, dtype)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return gym.spaces.Box(info.min, info.max, shape, dtype)
    return gym.spaces.Box(-np.inf, np.inf, shape, dtype)
