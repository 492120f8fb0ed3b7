"""Whole batches through a codec: numpy and torch give the same values, torch on its device."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("torchrl")

import torch  # noqa: E402

from marlhub.adapters.torchrl.rows import decode_rows, encode_rows  # noqa: E402
from marlhub.adapters.torchrl.specs import codec_for  # noqa: E402
from tests.adapters.torchrl.test_specs import SPACES  # noqa: E402

LEAD = (3, 2)  # (num_envs, n)


def _rows(values: list[Any]) -> Any:
    """Values of one space stacked into arrays with the leading dims ``LEAD``."""
    first = values[0]
    if isinstance(first, dict):
        return {k: _rows([v[k] for v in values]) for k in first}
    if isinstance(first, tuple):
        return tuple(_rows([v[i] for v in values]) for i in range(len(first)))
    stacked = np.stack([np.asarray(v) for v in values])
    return stacked.reshape(*LEAD, *stacked.shape[1:])


def _map(fn: Any, value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_map(fn, v) for v in value)
    return fn(value)


def _same(numpy_side: Any, torch_side: Any) -> None:
    """Equal values, dtypes and shapes, the torch side all tensors."""
    if isinstance(numpy_side, (dict, tuple)):
        keys = numpy_side if isinstance(numpy_side, dict) else range(len(numpy_side))
        assert type(numpy_side) is type(torch_side)
        for k in keys:
            _same(numpy_side[k], torch_side[k])
        return
    assert isinstance(torch_side, torch.Tensor)
    expected = torch.from_numpy(np.ascontiguousarray(numpy_side))
    assert torch_side.dtype == expected.dtype and torch.equal(torch_side, expected)


@pytest.mark.parametrize("categorical", [True, False], ids=["categorical", "one_hot"])
@pytest.mark.parametrize("name", SPACES)
def test_a_batch_of_tensors_encodes_and_decodes_as_numpy_does(name: str,
                                                               categorical: bool) -> None:
    space = SPACES[name]
    space.seed(1)
    codec = codec_for(space, agent="a", role="action", categorical=categorical)
    values = _rows([space.sample() for _ in range(int(np.prod(LEAD)))])
    encoded = encode_rows(codec, values)
    _same(encoded, encode_rows(codec, _map(torch.from_numpy, values)))
    spec_values = _map(torch.from_numpy, encoded)
    decoded = decode_rows(codec, spec_values)
    _same(decoded, decode_rows(codec, spec_values, as_torch=True))
    _same(_map(np.asarray, values), _map(torch.from_numpy, decoded))  # and back where it began
    assert not isinstance(_first(decoded), torch.Tensor)  # numpy unless asked


def _first(value: Any) -> Any:
    while isinstance(value, (dict, tuple)):
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return value
