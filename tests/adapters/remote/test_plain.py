"""A plain single-agent dm_env_rpc server (no marlhub in it) as a one-agent hub env."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent import futures
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

grpc = pytest.importorskip("grpc")
from dm_env_rpc.v1 import (  # noqa: E402
    dm_env_rpc_pb2,
    dm_env_rpc_pb2_grpc,
    tensor_spec_utils,
    tensor_utils,  # noqa: E402
)
from google.rpc import code_pb2, status_pb2  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.remote.plain import PlainRemoteEnv, space_of_spec  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ActionError,
    ConfigError,
    RemoteRequestError,
    ResetNeededError,
)

STEPS = 6


def _specs() -> Any:
    specs = dm_env_rpc_pb2.ActionObservationSpecs()
    specs.observations[1].CopyFrom(dm_env_rpc_pb2.TensorSpec(name="position", shape=[2],
                                                             dtype=dm_env_rpc_pb2.FLOAT))
    specs.observations[2].CopyFrom(dm_env_rpc_pb2.TensorSpec(name="reward",
                                                             dtype=dm_env_rpc_pb2.FLOAT))
    move = dm_env_rpc_pb2.TensorSpec(name="move", dtype=dm_env_rpc_pb2.INT8)
    tensor_spec_utils.set_bounds(move, np.int8(-1), np.int8(1))
    specs.actions[1].CopyFrom(move)
    return specs


class Walk(dm_env_rpc_pb2_grpc.EnvironmentServicer):
    """A walker on a line, written against dm_env_rpc alone: reward = -|position|, 6 steps."""

    def Process(self, requests: Iterator[Any], context: Any) -> Iterator[Any]:  # noqa: N802
        position, steps, fresh, rng = 0.0, 0, True, np.random.default_rng(0)
        for request in requests:
            response = dm_env_rpc_pb2.EnvironmentResponse()
            kind = request.WhichOneof("payload")
            if kind == "create_world":
                response.create_world.world_name = "walk"
            elif kind == "join_world":
                response.join_world.specs.CopyFrom(_specs())
            elif kind == "reset":
                settings = {k: tensor_utils.unpack_tensor(v) for k, v in request.reset.settings.items()}
                if set(settings) - {"seed"}:
                    response.error.CopyFrom(status_pb2.Status(code=code_pb2.INVALID_ARGUMENT,
                                                              message="only 'seed' is a setting"))
                    yield response
                    continue
                if "seed" in settings:  # without one, the generator goes on
                    rng = np.random.default_rng(settings["seed"])
                position, steps, fresh = float(rng.integers(-3, 4)), 0, True
                response.reset.specs.CopyFrom(_specs())
            elif kind == "step":
                if not fresh:
                    move = request.step.actions.get(1)
                    position += tensor_utils.unpack_tensor(move) if move is not None else 0
                    steps += 1
                fresh = False
                done = steps >= STEPS
                response.step.state = dm_env_rpc_pb2.TERMINATED if done else dm_env_rpc_pb2.RUNNING
                values = {1: np.array([position, steps], np.float32), 2: np.float32(-abs(position))}
                for uid in request.step.requested_observations:
                    response.step.observations[uid].CopyFrom(tensor_utils.pack_tensor(values[uid]))
            elif kind == "extension":  # as dm_env_rpc's catch example: no extensions
                response.error.CopyFrom(status_pb2.Status(code=code_pb2.UNIMPLEMENTED,
                                                          message="no extensions here"))
            else:
                getattr(response, kind).SetInParent()
            yield response


@pytest.fixture
def walk_server() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    dm_env_rpc_pb2_grpc.add_EnvironmentServicer_to_server(Walk(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None).wait(10)


def test_a_plain_server_becomes_a_one_agent_hub_env(walk_server: str) -> None:
    env = marlhub.make(f"remote/{walk_server}")
    assert isinstance(env, PlainRemoteEnv) and env.possible_agents == ["agent"]
    assert env.get_observation_space("agent") == gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
    assert env.get_action_space("agent") == gym.spaces.Discrete(3, start=-1)
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called"):
        env.step({"agent": 1})
    obs, infos = env.reset(seed=1)
    start = obs["agent"][0]
    with pytest.raises(ActionError, match="got 2, expected an action in Discrete\\(3, start=-1\\)"):
        env.step({"agent": 2})
    obs, rewards, terms, truncs, _ = env.step({"agent": 1})
    assert obs["agent"][0] == start + 1 and rewards == {"agent": -abs(start + 1)}
    for _ in range(STEPS - 1):
        obs, rewards, terms, truncs, _ = env.step({"agent": 0})
    assert terms == {"agent": True, "__all__": True} and truncs["__all__"] is False
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="episode is over"):
        env.step({"agent": 0})
    env.close()


def test_a_plain_server_env_passes_the_conformance_suite(walk_server: str) -> None:
    report = check(lambda: marlhub.make(f"remote/{walk_server}"), episodes=3, strict=True)
    assert report.ok, str(report)


def test_the_plain_servers_refusals_come_back_with_its_message(walk_server: str) -> None:
    env = marlhub.make(f"remote/{walk_server}")
    with pytest.raises(RemoteRequestError, match="refused Reset \\(INVALID_ARGUMENT\\): only 'seed'"):
        env.reset(options={"level": 2})
    env.close()
    with pytest.raises(ConfigError, match="'config' is for marlhub servers"):
        marlhub.make(f"remote/{walk_server}", {"config": {"x": 1}})


@pytest.mark.parametrize(("spec", "space"), [
    (dict(dtype=dm_env_rpc_pb2.DOUBLE, shape=[3]), gym.spaces.Box(-np.inf, np.inf, (3,), np.float64)),
    (dict(dtype=dm_env_rpc_pb2.UINT8, shape=[2, 2]), gym.spaces.Box(0, 255, (2, 2), np.uint8)),
    (dict(dtype=dm_env_rpc_pb2.INT32), gym.spaces.Box(-2**31, 2**31 - 1, (), np.int32)),
    (dict(dtype=dm_env_rpc_pb2.BOOL, shape=[2]),
     gym.spaces.Box(np.zeros(2, bool), np.ones(2, bool), (2,), np.bool_)),
])
def test_tensor_specs_become_spaces(spec: dict, space: gym.Space) -> None:
    assert space_of_spec(dm_env_rpc_pb2.TensorSpec(name="x", **spec)) == space


def test_a_variable_length_spec_has_no_space() -> None:
    from marlhub.adapters.remote.codec import UnmappableSpace

    with pytest.raises(UnmappableSpace, match="variable-length shape \\[-1\\]"):
        space_of_spec(dm_env_rpc_pb2.TensorSpec(name="words", shape=[-1],
                                                dtype=dm_env_rpc_pb2.INT32))
