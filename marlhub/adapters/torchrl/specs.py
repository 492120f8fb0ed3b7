"""Hub gymnasium spaces as TorchRL specs, and the values that go between them.

Each agent's observation space and action space becomes a :class:`Codec`: it
builds the TorchRL spec (:meth:`Codec.spec`), turns a hub value into the numpy
array that fills that spec (:meth:`Codec.encode`) and turns a TorchRL action
back into the hub's value (:meth:`Codec.decode`). Only :meth:`Codec.spec`
imports torch.

====================  =============================================================
hub space             TorchRL spec
====================  =============================================================
``Discrete(n, s)``    ``Categorical(n)`` holding ``value - s`` (``categorical=True``),
                      else ``OneHot(n)`` (int64), as TorchRL's ``GymWrapper`` does
``MultiDiscrete``     ``MultiCategorical(nvec)`` / ``MultiOneHot(nvec)`` holding
                      ``value - start`` (1-D ``nvec``); int64 ``Bounded`` otherwise
``Box``               ``Bounded(low, high)``, ``Unbounded`` where a bound is
                      infinite; shape ``()`` becomes ``(1,)``, as in TorchRL
``MultiBinary``       ``Binary`` (int8)
``Dict`` / ``Tuple``  ``Composite`` (a Tuple's keys are ``"0"``, ``"1"``, ...)
anything else         refused: :class:`~marlhub.errors.ConfigError` naming the
                      agent and the space (a ``Text`` observation, for one)
====================  =============================================================

Example:
    >>> import gymnasium as gym
    >>> codec = codec_for(gym.spaces.Discrete(3, start=1), agent="a", role="action",
    ...                   categorical=False)
    >>> codec.encode(2), codec.decode(np.array([0, 0, 1]))
    (array([0, 1, 0]), np.int64(3))
    >>> codec_for(gym.spaces.Text(5), agent="player_0", role="observation", categorical=True)
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'to_torchrl': the observation space of agent 'player_0' is Text(1, 5, charset=...), a Text space, which no TorchRL spec can hold. Give that agent an array observation (OpenSpiel games: make(id, {'observation': 'auto'}) picks a tensor when the game has one) or wrap the env to encode it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.errors import ConfigError
from marlhub.spaces import zero_like

__all__ = ["Codec", "codec_for", "encoded_zero", "torch_dtype"]

#: Who refuses a space, in error messages.
OWNER = "to_torchrl"


def torch_dtype(dtype: Any) -> Any:
    """Return the torch dtype of a numpy dtype (imports torch).

    Example:
        >>> torch_dtype(np.float32)
        torch.float32
    """
    import torch

    return torch.from_numpy(np.zeros(0, dtype=dtype)).dtype


class Codec:
    """One hub space as one TorchRL spec: the spec, and values in and out of it.

    Attributes:
        space: the hub space.
    """

    def __init__(self, space: gym.Space) -> None:
        self.space = space

    def spec(self, device: Any) -> Any:
        """Return the TorchRL spec of one agent's value (imports torch and torchrl)."""
        raise NotImplementedError

    def encode(self, value: Any) -> Any:
        """Return ``value`` (an element of the space) as the arrays that fill :meth:`spec`."""
        raise NotImplementedError

    def decode(self, data: Any) -> Any:
        """Return the element of the space that ``data`` (arrays shaped as the spec) stands for."""
        raise NotImplementedError


class DiscreteCodec(Codec):
    """``Discrete(n, start)``: the index ``value - start``, as a number or one-hot."""

    def __init__(self, space: gym.spaces.Discrete, categorical: bool) -> None:
        super().__init__(space)
        self.n, self.start = int(space.n), int(space.start)
        self.categorical = categorical

    def spec(self, device: Any) -> Any:
        import torch
        from torchrl.data import Categorical, OneHot

        if self.categorical:
            return Categorical(self.n, shape=(), dtype=torch.int64, device=device)
        return OneHot(self.n, dtype=torch.int64, device=device)

    def encode(self, value: Any) -> Any:
        index = int(value) - self.start
        if self.categorical:
            return np.asarray(index, dtype=np.int64)
        hot = np.zeros(self.n, dtype=np.int64)
        hot[index] = 1
        return hot

    def decode(self, data: Any) -> Any:
        array = np.asarray(data)
        index = int(array.argmax()) if not self.categorical else int(array.reshape(()))
        return np.int64(index + self.start)


class MultiDiscreteCodec(Codec):
    """``MultiDiscrete``: ``value - start`` per entry, as numbers or concatenated one-hots."""

    def __init__(self, space: gym.spaces.MultiDiscrete, categorical: bool) -> None:
        super().__init__(space)
        self.nvec = np.asarray(space.nvec, dtype=np.int64)
        self.start = np.asarray(space.start, dtype=np.int64)
        self.dtype = space.dtype
        # One-hot and MultiCategorical take a flat nvec; other shapes stay integers.
        self.flat = self.nvec.ndim == 1
        self.categorical = categorical or not self.flat

    def spec(self, device: Any) -> Any:
        import torch
        from torchrl.data import Bounded, MultiCategorical, MultiOneHot

        if not self.flat:
            return Bounded(torch.zeros(self.nvec.shape, dtype=torch.int64),
                            torch.as_tensor(self.nvec - 1), shape=self.nvec.shape,
                            dtype=torch.int64, device=device)
        if self.categorical:
            return MultiCategorical(self.nvec.tolist(), dtype=torch.int64, device=device)
        return MultiOneHot(self.nvec.tolist(), dtype=torch.int64, device=device)

    def encode(self, value: Any) -> Any:
        index = np.asarray(value, dtype=np.int64) - self.start
        if self.categorical:
            return index
        hot = np.zeros(int(self.nvec.sum()), dtype=np.int64)
        hot[np.concatenate([[0], np.cumsum(self.nvec)[:-1]]) + index] = 1
        return hot

    def decode(self, data: Any) -> Any:
        array = np.asarray(data)
        if not self.categorical:
            pieces = np.split(array, np.cumsum(self.nvec)[:-1])
            array = np.array([int(p.argmax()) for p in pieces])
        return (array.astype(np.int64) + self.start).astype(self.dtype)


class BoxCodec(Codec):
    """``Box``: the array itself; a scalar Box is an array of one."""

    def __init__(self, space: gym.spaces.Box) -> None:
        super().__init__(space)
        self.box = space
        self.shape = tuple(space.shape) or (1,)
        self.dtype = space.dtype

    def spec(self, device: Any) -> Any:
        import torch
        from torchrl.data import Binary, Bounded, Unbounded

        space = self.box
        dtype = torch_dtype(self.dtype)
        if np.dtype(self.dtype) == np.bool_:
            return Binary(shape=self.shape, dtype=torch.bool, device=device)
        low = np.asarray(space.low).reshape(self.shape)
        high = np.asarray(space.high).reshape(self.shape)
        if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
            return Unbounded(shape=self.shape, dtype=dtype, device=device)
        return Bounded(torch.as_tensor(low, dtype=dtype), torch.as_tensor(high, dtype=dtype),
                        shape=self.shape, dtype=dtype, device=device)

    def encode(self, value: Any) -> Any:
        return np.asarray(value, dtype=self.dtype).reshape(self.shape)

    def decode(self, data: Any) -> Any:
        return np.asarray(data).astype(self.dtype).reshape(self.space.shape)


class MultiBinaryCodec(Codec):
    """``MultiBinary``: the 0/1 array itself."""

    def spec(self, device: Any) -> Any:
        from torchrl.data import Binary

        return Binary(shape=self.space.shape, dtype=torch_dtype(self.space.dtype), device=device)

    def encode(self, value: Any) -> Any:
        return np.asarray(value, dtype=self.space.dtype)

    def decode(self, data: Any) -> Any:
        return np.asarray(data).astype(self.space.dtype)


class DictCodec(Codec):
    """``Dict`` and ``Tuple``: a ``Composite``, one entry per member (a Tuple's: ``"0"``, ...)."""

    def __init__(self, space: gym.Space, members: Mapping[str, Codec]) -> None:
        super().__init__(space)
        self.members = dict(members)
        self.is_tuple = isinstance(space, gym.spaces.Tuple)

    def spec(self, device: Any) -> Any:
        from torchrl.data import Composite

        return Composite({k: c.spec(device) for k, c in self.members.items()}, device=device)

    def encode(self, value: Any) -> Any:
        if self.is_tuple:
            return {k: c.encode(value[int(k)]) for k, c in self.members.items()}
        return {k: c.encode(value[k]) for k, c in self.members.items()}

    def decode(self, data: Any) -> Any:
        decoded = {k: c.decode(data[k]) for k, c in self.members.items()}
        return tuple(decoded.values()) if self.is_tuple else decoded


def codec_for(space: gym.Space, *, agent: Any, role: str, categorical: bool,
              path: str = "") -> Codec:
    """Return the :class:`Codec` of ``space``, the ``role`` space of ``agent``.

    Args:
        space: a gymnasium space.
        agent: the agent whose space it is (for the error message).
        role: ``"observation"`` or ``"action"`` (for the error message).
        categorical: Discrete and MultiDiscrete as indices (True) or one-hot (False).
        path: where ``space`` sits inside the agent's space (for the error message).

    Raises:
        ConfigError: a space no TorchRL spec holds (Text, Graph, Sequence...).
    """
    if isinstance(space, gym.spaces.Discrete):
        return DiscreteCodec(space, categorical)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return MultiDiscreteCodec(space, categorical)
    if isinstance(space, gym.spaces.Box):
        return BoxCodec(space)
    if isinstance(space, gym.spaces.MultiBinary):
        return MultiBinaryCodec(space)
    if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)):
        items = (space.spaces.items() if isinstance(space, gym.spaces.Dict)
                 else ((str(i), s) for i, s in enumerate(space.spaces)))
        members: dict[str, Codec] = {}
        for key, sub in items:
            if not isinstance(key, str):
                _refuse(space, agent, role, path, f"a Dict with the key {key!r}, which is not a "
                         "string (TorchRL keys are)")
            members[key] = codec_for(sub, agent=agent, role=role, categorical=categorical,
                                      path=f"{path}[{key!r}]")
        return DictCodec(space, members)
    return _refuse(space, agent, role, path, f"a {_kind(space)} space")


def _kind(space: gym.Space) -> str:
    for base in type(space).__mro__:
        if base.__module__.startswith("gymnasium.spaces"):
            return base.__name__
    return type(space).__name__


def _refuse(space: gym.Space, agent: Any, role: str, path: str, what: str) -> Codec:
    where = f"the {role} space of agent {agent!r}" + (f" at {path}" if path else "")
    hint = ("Give that agent an array observation (OpenSpiel games: make(id, {'observation': "
            "'auto'}) picks a tensor when the game has one) or wrap the env to encode it."
            if role == "observation" else
            "Give that agent a Discrete, MultiDiscrete, Box, MultiBinary, Dict or Tuple "
            "action space.")
    raise ConfigError(OWNER, f"{where} is {_short(space)}, {what}, which no TorchRL spec can "
                       "hold", fix=hint)


def _short(space: gym.Space, limit: int = 120) -> str:
    text = repr(space)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def encoded_zero(codec: Codec) -> Any:
    """Return the encoded value that stands for "nothing observed yet" (see ``zero_like``)."""
    return codec.encode(zero_like(codec.space))
