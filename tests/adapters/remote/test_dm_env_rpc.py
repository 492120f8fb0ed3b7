"""dm_env_rpc's own client (DmEnvAdaptor) plays marlhub servers: all agents, one per connection, one agent."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.adapters.remote import from_dm_env_rpc, is_dm_env_adaptor

dm_env = pytest.importorskip("dm_env")
from dm_env_rpc.v1 import connection as dm_connection  # noqa: E402
from dm_env_rpc.v1 import dm_env_adaptor, dm_env_rpc_pb2, tensor_utils  # noqa: E402


def _connect(address: str) -> Any:
    return dm_connection.create_secure_channel_and_connect(address, timeout=30)


def _reset_world(connection: Any, world: str, seed: int) -> None:
    connection.send(dm_env_rpc_pb2.ResetWorldRequest(
        world_name=world, settings={"seed": tensor_utils.pack_tensor(seed)}))


def test_dm_env_adaptor_plays_tic_tac_toe_as_the_local_env_does(served: Any) -> None:
    server = served("tic_tac_toe")
    connection = _connect(server.address)
    env, world = dm_env_adaptor.create_and_join_world(connection, {}, {})
    local = marlhub.make("tic_tac_toe")
    _reset_world(connection, world, 5)
    timestep = env.step({})  # the first step of a sequence starts it
    obs, _ = local.reset(seed=5)
    rng = np.random.default_rng(0)
    totals = {"player1": 0.0, "player2": 0.0}
    assert timestep.step_type == dm_env.StepType.FIRST
    while not timestep.last():
        (actor,) = [a for a in totals if timestep.observation[a]["acting"]]
        assert list(obs) == [actor]
        np.testing.assert_array_equal(timestep.observation[actor]["observation"], obs[actor])
        action = int(rng.choice(np.flatnonzero(timestep.observation[actor]["action_mask"])))
        timestep = env.step({actor: {"action": action}})
        obs, rewards, terminateds, *_ = local.step({actor: action})
        for agent in totals:
            totals[agent] += rewards.get(agent, 0.0)
            assert timestep.observation[agent]["reward"] == rewards.get(agent, 0.0)
    assert terminateds["__all__"] and timestep.observation["__all__"]["terminated"]
    assert timestep.step_type == dm_env.StepType.LAST and any(totals.values())
    assert env.reset().step_type == dm_env.StepType.FIRST  # and a new sequence starts
    env.close()
    connection.send(dm_env_rpc_pb2.DestroyWorldRequest(world_name=world))
    connection.close()
    assert server.worlds.worlds == {}


def test_one_connection_per_agent_plays_a_simultaneous_game(served: Any) -> None:
    """Each player joins with its own connection and acts in its own thread; rewards route."""
    server = served("rock_paper_scissors")
    creator = _connect(server.address)
    world = dm_env_adaptor.create_world(creator, {})
    results: dict[str, Any] = {}

    def play(agent: str, move: int) -> None:
        connection = _connect(server.address)
        env = dm_env_adaptor.join_world(connection, world, {"agent": agent})
        timestep, total, steps = env.reset(), 0.0, 0
        while not timestep.last():
            timestep = env.step({"action": move})
            total += float(timestep.reward)
            steps += 1
        results[agent] = (total, steps, float(timestep.discount))
        env.close()
        connection.close()

    threads = [threading.Thread(target=play, args=("player1", 0)),
               threading.Thread(target=play, args=("player2", 1))]  # paper beats rock
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(t.is_alive() for t in threads)
    assert results == {"player1": (-10.0, 10, 0.0), "player2": (10.0, 10, 0.0)}
    creator.send(dm_env_rpc_pb2.DestroyWorldRequest(world_name=world))
    creator.close()


def test_a_single_agent_join_reads_as_a_plain_dm_env(served: Any) -> None:
    """Joined as one agent, the tensors are unprefixed: DmEnvAdaptor routes reward and discount."""
    server = served("gymnasium/CartPole-v1")
    connection = _connect(server.address)
    env, world = dm_env_adaptor.create_and_join_world(connection, {}, {"agent": "0"})
    assert set(env.observation_spec()) >= {"observation", "acting", "action_mask"}
    assert env.action_spec()["action"].num_values == 2
    timestep, total = env.reset(), 0.0
    while not timestep.last():
        timestep = env.step({"action": 1})
        total += timestep.reward
    assert timestep.discount == 0.0 and 5 <= total < 100  # the pole fell: terminated
    env.close()
    connection.send(dm_env_rpc_pb2.DestroyWorldRequest(world_name=world))
    connection.close()


def test_from_dm_env_rpc_takes_a_dm_env_adaptor(served: Any) -> None:
    server = served("gymnasium/CartPole-v1")
    connection = _connect(server.address)
    adaptor, world = dm_env_adaptor.create_and_join_world(connection, {}, {"agent": "0"})
    assert is_dm_env_adaptor(adaptor) and not is_dm_env_adaptor(marlhub.make("traffic"))
    hub = marlhub.convert(adaptor)
    assert type(hub).__name__ == "PlainRemoteEnv" and hub.possible_agents == ["agent"]
    local = marlhub.make("gymnasium/CartPole-v1")
    for seed in (4, 5):  # every tensor of the world is the plain env's observation
        obs, _ = hub.reset(seed=seed)
        local_obs, _ = local.reset(seed=seed)
        np.testing.assert_array_equal(obs["agent"]["observation"], local_obs[0])
        done, steps = False, 0
        while not done:
            action = {"action": steps % 2, "__all__.actions": ""}  # every action tensor
            obs, rewards, terminateds, truncateds, _ = hub.step({"agent": action})
            local_obs, local_rewards, *_ = local.step({0: steps % 2})
            np.testing.assert_array_equal(obs["agent"]["observation"], local_obs[0])
            assert rewards == {"agent": local_rewards[0]}
            done, steps = terminateds["__all__"] or truncateds["__all__"], steps + 1
    hub.close()
    connection.send(dm_env_rpc_pb2.LeaveWorldRequest())
    connection.send(dm_env_rpc_pb2.DestroyWorldRequest(world_name=world))
    connection.close()


def test_from_dm_env_rpc_refuses_other_objects() -> None:
    with pytest.raises(TypeError, match="takes 'HOST:PORT' or a DmEnvAdaptor"):
        from_dm_env_rpc(42)
