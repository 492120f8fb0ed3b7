"""The wire formats: JSON values, space descriptions, tensors, action dicts, error statuses."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("dm_env_rpc")

from marlhub import errors  # noqa: E402
from marlhub.adapters.remote import codec  # noqa: E402
from marlhub.adapters.remote.actions import put_actions, take_actions  # noqa: E402
from marlhub.adapters.remote.layout import Layout, agent_names  # noqa: E402
from marlhub.adapters.remote.status import error_of, status_of  # noqa: E402
from marlhub.adapters.remote.tensors import (  # noqa: E402
    dm_env_rpc_pb2,
    leaves_of,
    pack,
    read_sent,
    tensor_spec,
    unpack,
)
from marlhub.contract.compare import why_different  # noqa: E402

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                    st.text(max_size=5), st.binary(max_size=5),
                    st.builds(np.float32, st.floats(width=32)), st.builds(np.int8, st.integers(-128, 127)),
                    st.builds(lambda v: np.arange(v, dtype=np.int16), st.integers(0, 4)))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner),
    st.dictionaries(st.one_of(st.text(max_size=4), st.integers(0, 3)), inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(values)
def test_any_value_comes_back_equal_types_and_key_order_included(value: Any) -> None:
    back = codec.loads(codec.dumps(value))
    assert why_different(back, value) is None
    assert _types(back) == _types(value)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", [(_types(k), _types(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_types(v) for v in value])
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape)
    return type(value).__name__


def test_objects_without_json_form_travel_as_their_repr() -> None:
    assert codec.loads(codec.dumps({"f": print})) == {"f": "<unencodable builtin_function_or_method: "
                                                            "<built-in function print>>"}
    with pytest.raises(ValueError, match="unknown tag '~zz'"):
        codec.loads('{"~zz": 1}')


SPACES = [
    gym.spaces.Discrete(4, start=-2),
    gym.spaces.Box(-1.0, 2.0, (2, 3), np.float32),
    gym.spaces.Box(np.array([0, -np.inf]), np.array([1, np.inf]), dtype=np.float64),
    gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
    gym.spaces.Box(-5, 5, (2,), np.int16),
    gym.spaces.MultiDiscrete([3, 4], start=[1, 0]),
    gym.spaces.MultiBinary(5),
    gym.spaces.Text(8, min_length=0, charset="ab"),
    gym.spaces.Dict({"mask": gym.spaces.MultiBinary(3), "obs": gym.spaces.Box(0, 1, (2,))}),
    gym.spaces.Tuple([gym.spaces.Discrete(2), gym.spaces.Tuple([gym.spaces.Discrete(3)])]),
]


@pytest.mark.parametrize("space", SPACES, ids=[type(s).__name__ for s in SPACES])
def test_spaces_are_described_rebuilt_and_their_samples_travel_as_tensors(space: gym.Space) -> None:
    assert codec.space_from(codec.describe_space(space)) == space
    space.seed(0)
    sample = space.sample()
    leaves = leaves_of(space)
    for leaf in leaves:
        spec = tensor_spec(f"a.observation{leaf.suffix}", leaf)
        part = leaf.get(sample)
        tensor = pack(part, leaf.wire, leaf.shape)
        assert why_different(unpack(tensor, leaf), part if leaf.kind != "discrete" else int(part)) \
            is None
        assert why_different(read_sent(tensor, leaf, check_bounds=True), unpack(tensor, leaf)) is None
        assert spec.name.startswith("a.observation")


@pytest.mark.parametrize("space", SPACES, ids=[type(s).__name__ for s in SPACES])
def test_a_leaf_put_makes_the_tensor_pack_makes(space: gym.Space) -> None:
    space.seed(1)
    sample = space.sample()
    for leaf in leaves_of(space):
        part = leaf.get(sample)
        part = int(part) if leaf.kind == "discrete" else part
        assert leaf.fits(part)
        put = dm_env_rpc_pb2.Tensor()
        leaf.put(part, put)
        assert put.SerializeToString() == pack(part, leaf.wire, leaf.shape).SerializeToString()
        assert why_different(leaf.read(put), part) is None


def test_observations_travel_exactly_in_tensors_or_whole() -> None:
    spaces = {"d": gym.spaces.Discrete(3), "box": gym.spaces.Box(0, 1, (2,), np.float16),
              "dict": SPACES[-2], "tuple": SPACES[-1], "text": gym.spaces.Text(4)}
    layout = Layout(list(spaces), spaces, {a: gym.spaces.Discrete(2) for a in spaces})
    requested = set(layout.observation_uids())
    fitting = {"tuple": (1, (2,)), "dict": {"obs": np.zeros(2, np.float32),  # the env's key order
                                            "mask": np.ones(3, np.int8)},
               "d": 2, "box": np.ones(2, np.float16), "text": "ab"}
    odd = {"d": 2**70, "box": [0.5, 0.5], "dict": {"obs": 1}, "tuple": [1, [2]], "text": None,
           "nobody": 1}
    leaves = sum(len(slots.observation) for slots in layout.slots.values())
    for obs, in_tensors in ((fitting, leaves), (odd, 0)):
        response = dm_env_rpc_pb2.StepResponse()
        marked = layout.put_observations(obs, response.observations, requested)
        assert len(response.observations) == in_tensors
        document = codec.dumps(marked)
        sent = dm_env_rpc_pb2.StepResponse.FromString(response.SerializeToString())
        back = layout.take_observations(codec.loads(document), sent.observations)
        assert why_different(back, obs) is None and list(back) == list(obs)
        assert list(back["dict"]) == list(obs["dict"])  # type: ignore[call-overload]


@pytest.mark.parametrize("space", [gym.spaces.Graph(gym.spaces.Discrete(2), None),
                                   gym.spaces.Sequence(gym.spaces.Discrete(2)),
                                   gym.spaces.OneOf([gym.spaces.Discrete(2), gym.spaces.Discrete(3)]),
                                   gym.spaces.Dict({"a.b": gym.spaces.Discrete(2)})])
def test_spaces_without_a_tensor_form_are_refused_by_name(space: gym.Space) -> None:
    with pytest.raises(codec.UnmappableSpace):
        leaves_of(space)


@pytest.mark.parametrize(("agents", "problem"), [
    ([("tuple", "id")], "tensor names need str or int agent ids"),
    (["a.b"], "without '.'"),
    (["x", "x"], "must be unique"),
    (["__all__"], "not '__all__'"),
    ([1, "1"], "must be unique"),
])
def test_agent_ids_that_cannot_name_tensors_are_refused(agents: list, problem: str) -> None:
    with pytest.raises(codec.UnmappableSpace, match=problem):
        agent_names(agents)


def _tensor(values: Any, dtype: Any, shape: list[int]) -> Any:
    tensor = pack(np.asarray(values, dtype=dtype).ravel(), np.dtype(dtype), ())
    tensor.shape[:] = shape
    return tensor


@pytest.mark.parametrize(("tensor", "problem"), [
    (_tensor([1.0], np.float64, []), "expected int64s \\(int64\\) values, got doubles"),
    (_tensor([1, 2], np.int64, [2]), "expected shape \\[\\], got \\[2\\]"),
    (_tensor([5], np.int64, []), "values above the maximum 2"),
    (_tensor([-1], np.int64, []), "values below the minimum 0"),
])
def test_sent_tensors_are_checked_as_dm_env_rpc_says(tensor: Any, problem: str) -> None:
    (leaf,) = leaves_of(gym.spaces.Discrete(3))
    with pytest.raises(ValueError, match=problem):
        read_sent(tensor, leaf, check_bounds=True)


def test_sent_tensors_may_broadcast_and_infer_one_dimension() -> None:
    (leaf,) = leaves_of(gym.spaces.Box(0, 9, (2, 3), np.int32))
    np.testing.assert_array_equal(read_sent(_tensor([4], np.int32, [2, 3]), leaf,
                                            check_bounds=True), np.full((2, 3), 4))
    assert read_sent(_tensor(np.arange(6), np.int32, [-1, 3]), leaf, check_bounds=True).shape == (2, 3)
    with pytest.raises(ValueError, match="more than one variable"):
        read_sent(_tensor(np.arange(6), np.int32, [-1, -1]), leaf, check_bounds=True)


def test_action_dicts_travel_exactly_whatever_they_hold() -> None:
    spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Box(0, 1, (2,), np.float32)}
    layout = Layout(["a", "b"], spaces, spaces)
    cases = [{"a": 1, "b": np.array([0.5, 0.25], np.float32)},
             {"b": np.zeros(2, np.float32), "a": 2},  # another key order
             {"a": np.int64(1), "b": [0.5, 0.5], "c": None},  # numpy int, a list, an unknown key
             {"a": True}, [1, 2], "nonsense", {}]
    for action_dict in cases:
        request = dm_env_rpc_pb2.StepRequest()
        put_actions(action_dict, layout, request.actions)
        sent = dm_env_rpc_pb2.StepRequest.FromString(request.SerializeToString())
        back = take_actions(sent.actions, layout, check_bounds=False)
        assert why_different(back, action_dict) is None and _types(back) == _types(action_dict)


def test_errors_travel_as_their_class_with_their_fields_or_as_refusals() -> None:
    sent = errors.ConfigError("traffic", "unknown key 'x'", unknown=["x"], accepted=["num_cars"])
    back = error_of(status_of(sent), address="h:1", call="CreateWorld")
    assert type(back) is errors.ConfigError and str(back) == str(sent) and back.unknown == ["x"]
    assert type(error_of(status_of(KeyError("k")), address="h:1", call="Step")) is KeyError

    class Custom(Exception):
        pass

    odd = error_of(status_of(Custom("boom")), address="h:1", call="Step")
    assert isinstance(odd, errors.RemoteRequestError)
    assert str(odd) == ("The server at h:1 refused Step (INTERNAL): the env raised "
                        f"{__name__}.Custom: boom")
