"""dm_env specs as gymnasium spaces, and values both ways."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("dm_env", reason="from_dm_env needs marlhub[dmc]")

from dm_env import specs  # noqa: E402

from marlhub.adapters.dm_env.specs import convert_spec, spec_to_space  # noqa: E402
from marlhub.errors import ConfigError  # noqa: E402


@pytest.mark.parametrize(("spec", "space"), [
    (specs.BoundedArray((2,), np.float32, -1.0, 1.0), gym.spaces.Box(-1.0, 1.0, (2,), np.float32)),
    (specs.BoundedArray((2,), np.float64, [-1.0, 0.0], 2.0),
     gym.spaces.Box(np.array([-1.0, 0.0]), np.array([2.0, 2.0]), (2,), np.float64)),
    (specs.BoundedArray((), np.int64, 0, 9), gym.spaces.Box(0, 9, (), np.int64)),
    (specs.DiscreteArray(5), gym.spaces.Discrete(5)),
    (specs.Array((1, 3), np.float64), gym.spaces.Box(-np.inf, np.inf, (1, 3), np.float64)),
    (specs.Array((4,), np.uint8), gym.spaces.Box(0, 255, (4,), np.uint8)),
    (specs.Array((1,), np.bool_), gym.spaces.Box(0, 1, (1,), np.bool_)),
], ids=["bounded", "bounds-broadcast", "bounded-int", "discrete", "array-float", "array-uint8",
        "array-bool"])
def test_each_kind_of_spec_has_its_space(spec: Any, space: gym.Space) -> None:
    assert spec_to_space(spec) == space


def test_nested_specs_keep_their_order_and_values_convert_both_ways() -> None:
    spec = {"z": specs.Array((2,), np.float64), "a": specs.DiscreteArray(3),
            "pair": (specs.Array((), np.int32), specs.BoundedArray((1,), np.float32, 0, 1))}
    converted = convert_spec(spec, "observation_spec()[0]")
    assert list(converted.space.spaces) == ["z", "a", "pair"]  # the spec's order, not sorted
    assert isinstance(converted.space["pair"], gym.spaces.Tuple)
    buffer = np.ones(2)
    value = converted.read({"z": buffer, "a": np.int32(2),
                            "pair": (np.int32(7), np.zeros(1, np.float32))})
    assert converted.space.contains(value)
    buffer[0] = 5.0
    assert value["z"][0] == 1.0  # a copy: the env may write into its buffer again
    action = converted.write({"z": [0.5, 0.5], "a": np.int64(1), "pair": (3, [0.5])})
    assert action["a"].dtype == np.int32 and action["pair"][1].dtype == np.float32


@pytest.mark.parametrize(("spec", "message"), [
    (specs.StringArray(()), r"observation_spec\(\)\[0\]\['name'\] is StringArray.*strings have "
     r"no gymnasium space"),
    (specs.Array((2,), np.complex64), r"its dtype complex64 is neither a float, an integer nor "
     r"a bool"),
    ("not a spec", r"it is not a dm_env spec"),
])
def test_specs_without_a_space_are_refused_saying_where(spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        convert_spec({"name": spec}, "observation_spec()[0]")
