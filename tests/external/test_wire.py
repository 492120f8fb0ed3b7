"""The wire: the shipped .proto read into messages, and spaces and values on it."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest

from marlhub.external.codec import (
    WireValueError,
    decode,
    encode,
    encode_into,
    space_from_message,
    space_message,
)
from marlhub.external.proto import PROTO_PATH, load_wire, parse_proto

pytest.importorskip("google.protobuf")

SPACES = [
    gym.spaces.Box(-1, 1, (2, 3), np.float32),
    gym.spaces.Box(np.array([0, -5]), np.array([10, 5]), dtype=np.int64),
    gym.spaces.Discrete(4, start=2),
    gym.spaces.MultiDiscrete([3, 5]),
    gym.spaces.MultiBinary(4),
    gym.spaces.MultiBinary([2, 2]),
    gym.spaces.Dict({"observation": gym.spaces.Box(0, 1, (3,), np.float64),
                     "action_mask": gym.spaces.Box(0, 1, (3,), np.int8)}),
    gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Box(0, 1, (1,), np.float32)]),
]


@pytest.mark.parametrize("space", SPACES, ids=str)
@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
def test_spaces_and_their_values_cross_the_wire(space: gym.Space, typed: bool) -> None:
    message = space_message(space)
    again = type(message).FromString(message.SerializeToString())
    assert space_from_message(again) == space
    space.seed(0)
    for _ in range(5):
        value = space.sample()
        wired = encode(value, typed=typed)
        decoded = decode(type(wired).FromString(wired.SerializeToString()), space)
        assert space.contains(decoded)
        flat = gym.spaces.flatten(space, decoded)
        assert np.array_equal(flat, gym.spaces.flatten(space, value))


@pytest.mark.parametrize("value, space, message", [
    (np.zeros(3, np.float32), gym.spaces.Box(0, 1, (2,)), "shape \\[3\\]"),
    (np.full(2, 2.0, np.float32), gym.spaces.Box(0, 1, (2,)), "is not in Box"),
    (np.array([1]), gym.spaces.Discrete(3), "scalar"),
    (1.5, gym.spaces.Discrete(3), "do not fit dtype int64"),
    (7, gym.spaces.Discrete(3), "7 is not in Discrete\\(3\\)"),
    ({"x": 1}, gym.spaces.Dict({"y": gym.spaces.Discrete(2)}), "keys \\['x'\\]"),
    (1, gym.spaces.Dict({"y": gym.spaces.Discrete(2)}), "expected a dict value"),
    ((1,), gym.spaces.Tuple([gym.spaces.Discrete(2)] * 2), "tuple value of 2 items"),
])
def test_values_outside_their_space_are_refused(value, space, message) -> None:
    with pytest.raises(WireValueError, match=message):
        decode(encode(value), space)


def test_the_quick_path_of_box_and_discrete_values_refuses_what_the_long_path_refuses() -> None:
    box = gym.spaces.Box(-1, 1, (2, 3), np.float32)
    value = decode(encode(np.full((2, 3), 0.5, np.float32)), box)
    assert value.dtype == np.float32 and value.shape == (2, 3) and value.flags.writeable
    value[0, 0] = 0.0  # its own memory, not the message's bytes
    transposed = encode(np.zeros((3, 2), np.float32))
    with pytest.raises(WireValueError, match="shape \\[3, 2\\]"):
        decode(transposed, box)
    with pytest.raises(WireValueError, match="is not in Box"):
        decode(encode(np.full((2, 3), np.nan, np.float32)), box)
    # Another dtype takes the long way: cast when the values fit, refused when they do not.
    assert decode(encode(np.zeros((2, 3), np.float64)), box).dtype == np.float32
    with pytest.raises(WireValueError, match="do not fit dtype int64"):
        decode(encode(np.array(0.5)), gym.spaces.Discrete(3))
    discrete = gym.spaces.Discrete(3, start=1)
    assert decode(encode(np.int64(3), typed=True), discrete) == 3
    with pytest.raises(WireValueError, match="0 is not in Discrete"):
        decode(encode(0, typed=True), discrete)
    with pytest.raises(WireValueError, match="scalar"):
        decode(encode(np.array([2]), typed=True), discrete)


def test_values_are_written_in_place_into_the_field_of_a_message() -> None:
    messages = load_wire().messages
    request = messages["GetActionRequest"](session="s", episode_id="e")
    values = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": (np.int64(1), {"x": np.array([1], np.int8)})}
    for agent, value in values.items():
        encode_into(request.observations.add(agent=agent).value, value)
    again = type(request).FromString(request.SerializeToString())
    spaces = {"a": gym.spaces.Box(0, 9, (2, 3), np.float32),
              "b": gym.spaces.Tuple([gym.spaces.Discrete(2),
                                     gym.spaces.Dict({"x": gym.spaces.MultiBinary(1)})])}
    decoded = {item.agent: decode(item.value, spaces[item.agent]) for item in again.observations}
    assert np.array_equal(decoded["a"], values["a"])
    assert decoded["b"][0] == 1 and decoded["b"][1]["x"].tolist() == [1]


def test_a_tensor_whose_size_does_not_match_its_shape_is_refused() -> None:
    wired = encode(np.zeros(2, np.float32))
    wired.tensor.shape[:] = [3]
    with pytest.raises(WireValueError, match="shape \\[3\\] holds 2 values"):
        decode(wired, gym.spaces.Box(0, 1, (3,)))


def test_spaces_the_wire_has_no_message_for_are_refused() -> None:
    with pytest.raises(WireValueError, match="Text"):
        space_message(gym.spaces.Text(5))
    with pytest.raises(WireValueError, match="no kind"):
        space_from_message(load_wire().messages["Space"]())


def test_the_proto_names_every_rpc_and_message() -> None:
    wire = load_wire()
    assert wire.rpcs["Decide"] == ("GetActionRequest", "GetActionResponse", "stream_stream")
    assert wire.rpcs["GetAction"][2] == "unary_unary"
    assert set(wire.rpcs) == {"Connect", "StartEpisode", "GetAction", "Decide", "LogAction",
                              "LogReturns",
                              "EndEpisode", "Disconnect"}
    for request, response, _ in wire.rpcs.values():
        assert request in wire.messages and response in wire.messages
    text = PROTO_PATH.read_text()
    assert len(re.findall(r"^message (\w+)", text, re.M)) == len(wire.messages)


def test_a_proto_outside_the_subset_read_is_refused() -> None:
    with pytest.raises(ValueError, match="unexpected 'enum'"):
        parse_proto("syntax = \"proto3\"; package p; enum E { A = 0; }")
    with pytest.raises(ValueError, match="ends early"):
        parse_proto("message M { int64 x = 1;")
