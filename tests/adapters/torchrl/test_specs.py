"""Hub spaces as TorchRL specs: every value of the space encodes into its spec and back."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torchrl")

import torch  # noqa: E402

from marlhub.adapters.torchrl.specs import codec_for  # noqa: E402
from marlhub.errors import ConfigError  # noqa: E402

SPACES = {
    "discrete": gym.spaces.Discrete(4),
    "discrete_start": gym.spaces.Discrete(3, start=-1),
    "multi_discrete": gym.spaces.MultiDiscrete([3, 5, 2], start=[0, 1, -1]),
    "multi_discrete_2d": gym.spaces.MultiDiscrete([[2, 3], [4, 5]]),
    "box": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32),
    "box_scalar": gym.spaces.Box(0.0, 5.0, (), np.float64),
    "box_unbounded": gym.spaces.Box(-np.inf, np.inf, (4,), np.float32),
    "box_int": gym.spaces.Box(0, 255, (2, 2), np.uint8),
    "multi_binary": gym.spaces.MultiBinary(5),
    "dict": gym.spaces.Dict({"a": gym.spaces.Discrete(2), "b": gym.spaces.Box(0, 1, (2,))}),
    "tuple": gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.MultiBinary(2))),
}


def _tensors(data: Any) -> Any:
    if isinstance(data, dict):
        from tensordict import TensorDict

        return TensorDict({k: _tensors(v) for k, v in data.items()}, batch_size=())
    return torch.from_numpy(np.array(data))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


@pytest.mark.parametrize("categorical", [True, False], ids=["categorical", "one_hot"])
@pytest.mark.parametrize("name", SPACES)
def test_values_go_into_the_spec_and_back(name: str, categorical: bool) -> None:
    space = SPACES[name]
    space.seed(0)
    codec = codec_for(space, agent="a", role="action", categorical=categorical)
    spec = codec.spec("cpu")
    for _ in range(20):
        value = space.sample()
        encoded = _tensors(codec.encode(value))
        assert spec.is_in(encoded), (name, value, encoded)
        decoded = codec.decode(encoded.numpy() if hasattr(encoded, "numpy") else encoded)
        assert space.contains(decoded) and _same(decoded, value), (name, value, decoded)
    sample = spec.rand()
    decoded = codec.decode(sample.numpy() if not hasattr(sample, "items") else sample.numpy())
    assert space.contains(decoded), (name, sample, decoded)


@pytest.mark.parametrize(("space", "match"), [
    (gym.spaces.Text(8), "the observation space of agent 'p' is Text"),
    (gym.spaces.Dict({"board": gym.spaces.Box(0, 1, (2,)),
                      "moves": gym.spaces.Sequence(gym.spaces.Discrete(3))}),
     r"agent 'p' at \['moves'\] is Sequence"),
    (gym.spaces.Dict({1: gym.spaces.Discrete(2)}), "the key 1, which is not a string"),
])
def test_spaces_without_a_spec_are_refused(space: gym.Space, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        codec_for(space, agent="p", role="observation", categorical=True)
