"""Faults and security: dead or hung servers, lost clients, garbage, isolation, tokens, limits."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

grpc = pytest.importorskip("grpc")
from dm_env_rpc.v1 import connection as dm_connection  # noqa: E402
from dm_env_rpc.v1 import dm_env_rpc_pb2, error, tensor_utils  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.remote import connect  # noqa: E402
from marlhub.adapters.remote.lockstep import compare_with_local  # noqa: E402
from marlhub.errors import RemoteEnvError, RemoteRequestError  # noqa: E402
from tests.remote.servers import REPO, serving  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _raw(address: str) -> Any:
    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=30)
    return channel, dm_connection.Connection(channel)


def _wait_for(condition: Any, seconds: float = 15.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_a_server_killed_mid_episode_makes_the_client_raise_at_once() -> None:
    with serving("tic_tac_toe") as server:
        env = connect(server.address, timeout=5.0)
        obs, _ = env.reset(seed=1)
        env.step({next(iter(obs)): 4})
        server.process.kill()
        server.process.wait(10)
        start = time.monotonic()
        with pytest.raises(RemoteEnvError) as caught:
            env.step({"player2": 0})
        assert time.monotonic() - start < 5.0
    message = str(caught.value)
    assert caught.value.address == server.address and caught.value.call == "Step"
    assert f"The remote env at {server.address} failed in Step: the connection was lost" in message
    with pytest.raises(RemoteEnvError, match="lost earlier"):  # and stays broken, clearly
        env.reset()
    env.close()


def test_a_hung_server_times_out_after_the_configured_seconds() -> None:
    with serving("tic_tac_toe") as server:
        env = connect(server.address, timeout=1.0)
        obs, _ = env.reset(seed=0)
        server.process.send_signal(signal.SIGSTOP)
        stat = Path(f"/proc/{server.process.pid}/stat")
        assert not stat.exists() or _wait_for(lambda: stat.read_text().split()[2] == "T")
        try:
            start = time.monotonic()
            with pytest.raises(RemoteEnvError, match="failed in Step: the server did not answer "
                               "within 1s"):
                env.step({next(iter(obs)): 0})
            assert 0.9 < time.monotonic() - start < 4.0
        finally:
            server.process.send_signal(signal.SIGCONT)
        env.close()


def test_no_server_at_the_address_is_a_clear_error() -> None:
    port = _free_port()
    with pytest.raises(RemoteEnvError, match=f"127.0.0.1:{port} failed in connect: no server "
                       "accepted the connection within 0.5s"):
        connect(f"127.0.0.1:{port}", connect_timeout=0.5)
    # The hint names the config key that gives the connection longer.
    with pytest.raises(RemoteEnvError, match=r"marlhub.make\('remote/HOST:PORT', "
                                             r"\{'connect_timeout': seconds\}\)"):
        marlhub.make(f"remote/127.0.0.1:{port}", {"connect_timeout": 0.5})


def test_a_client_that_goes_away_frees_its_world(served: Any) -> None:
    server = served("tic_tac_toe")
    code = ("import marlhub, time\n"
            f"env = marlhub.make('remote/{server.address}')\n"
            "env.reset(seed=0)\nprint('ready', flush=True)\ntime.sleep(120)\n")
    client = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    try:
        assert client.stdout is not None and client.stdout.readline().strip() == "ready"
        assert len(server.worlds.worlds) == 1
        client.kill()
        client.wait(10)
        assert _wait_for(lambda: server.worlds.worlds == {})
    finally:
        if client.poll() is None:
            client.kill()
        client.wait(10)
        if client.stdout is not None:
            client.stdout.close()


def test_malformed_and_out_of_order_requests_are_refused_and_other_worlds_play_on(
        served: Any) -> None:
    server = served("openspiel/kuhn_poker")
    env, local = connect(server.address), marlhub.make("openspiel/kuhn_poker")
    env.reset(seed=3), local.reset(seed=3)
    channel, raw = _raw(server.address)
    refusals = [
        (dm_env_rpc_pb2.StepRequest(), "has not joined a world"),
        (dm_env_rpc_pb2.ResetRequest(), "has not joined a world"),
        (dm_env_rpc_pb2.JoinWorldRequest(world_name="nope"), "no world named 'nope'"),
        (dm_env_rpc_pb2.JoinWorldRequest(world_name=env.world_name), "driven directly"),
        (dm_env_rpc_pb2.DestroyWorldRequest(world_name=env.world_name), "are joined to world"),
        (dm_env_rpc_pb2.CreateWorldRequest(settings={"env_id": tensor_utils.pack_tensor(
            "os:system")}), "unknown settings \\['env_id'\\]"),
    ]
    for request, message in refusals:
        with pytest.raises(error.DmEnvRpcError) as refused:
            raw.send(request)
        assert re.search(message, refused.value.message), refused.value.message
    world = raw.send(dm_env_rpc_pb2.CreateWorldRequest()).world_name
    raw.send(dm_env_rpc_pb2.JoinWorldRequest(world_name=world))
    raw.send(dm_env_rpc_pb2.StepRequest())  # the first step starts the sequence
    with pytest.raises(error.DmEnvRpcError) as refused:
        raw.send(dm_env_rpc_pb2.StepRequest(actions={999: tensor_utils.pack_tensor(0)}))
    assert "action uid 999 is not in this connection's specs" in refused.value.message
    raw.close()
    channel.close()
    garbage = grpc.insecure_channel(server.address)
    call = garbage.stream_stream("/dm_env_rpc.v1.Environment/Process")
    with pytest.raises(grpc.RpcError) as caught:
        list(call(iter([b"\xff\x00 not a protocol buffer"]), timeout=10))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not parse as dm_env_rpc.v1.EnvironmentRequest" in caught.value.details()
    garbage.close()
    # The first client's world never noticed.
    assert compare_with_local(env, local, episodes=3, seed=3) == []
    env.close()


def test_many_concurrent_clients_are_isolated(served: Any) -> None:
    server = served("openspiel/leduc_poker")
    findings: dict[int, Any] = {}

    def play(seed: int) -> None:
        env = connect(server.address)
        findings[seed] = compare_with_local(env, marlhub.make("openspiel/leduc_poker"),
                                            episodes=3, seed=seed)
        env.close()

    threads = [threading.Thread(target=play, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert findings == {seed: [] for seed in range(6)}
    assert server.worlds.worlds == {}


def test_a_token_is_required_when_set(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    server = served("rock_paper_scissors", token="s3cret")
    monkeypatch.delenv("MARLHUB_TOKEN", raising=False)
    for options in ({}, {"token": "wrong"}):
        with pytest.raises(RemoteEnvError, match="UNAUTHENTICATED: this marlhub server requires "
                           "a token.*Pass the server's token"):
            connect(server.address, **options)
    connect(server.address, token="s3cret").close()
    monkeypatch.setenv("MARLHUB_TOKEN", "s3cret")
    marlhub.make(f"remote/{server.address}").close()


def test_the_server_listens_on_loopback_only_by_default(served: Any) -> None:
    server = served("rock_paper_scissors")
    assert server.host == "127.0.0.1" and server.address == f"127.0.0.1:{server.port}"
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        pytest.skip("reads Linux's socket tables")
    listening = [line.split()[1] for table in tables if table.exists()
                 for line in table.read_text().splitlines()[1:] if line.split()[3] == "0A"]
    ours = {local.split(":")[0] for local in listening if int(local.split(":")[1], 16) == server.port}
    loopback = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}
    assert ours and ours <= loopback, ours  # 127.0.0.1 (or ::1), no other interface


def test_the_world_limit_and_the_wait_for_other_agents_are_bounded(served: Any) -> None:
    server = served("rock_paper_scissors", max_worlds=1, step_wait=0.5)
    env = connect(server.address)
    with pytest.raises(RemoteRequestError, match="RESOURCE_EXHAUSTED.*limit of 1 worlds"):
        connect(server.address)
    env.close()
    channel, raw = _raw(server.address)
    world = raw.send(dm_env_rpc_pb2.CreateWorldRequest()).world_name
    specs = raw.send(dm_env_rpc_pb2.JoinWorldRequest(
        world_name=world, settings={"agents": tensor_utils.pack_tensor(["player1"])})).specs
    uid = next(u for u, s in specs.actions.items() if s.name == "player1.action")
    raw.send(dm_env_rpc_pb2.StepRequest())  # starts the sequence
    start = time.monotonic()
    with pytest.raises(error.DmEnvRpcError) as refused:
        raw.send(dm_env_rpc_pb2.StepRequest(actions={uid: tensor_utils.pack_tensor(0)}))
    assert refused.value.message == "waited 0.5s for the agents ['player2'] of other connections to act"
    assert time.monotonic() - start < 3.0
    raw.close()
    channel.close()


def test_a_server_that_stops_makes_clients_raise(served: Any) -> None:
    server = served("tic_tac_toe")
    env = connect(server.address, timeout=5.0)
    env.reset(seed=0)
    server.stop(0)
    with pytest.raises(RemoteEnvError, match="failed in Step"):
        env.step({"player1": 0})
    env.close()


def test_a_direct_connection_may_reset_the_dm_env_rpc_way(served: Any) -> None:
    """Reset then Step, as dm_env_rpc clients do; a failed Reset voids the Step sent after it."""
    server = served("tic_tac_toe")
    channel, raw = _raw(server.address)
    world = raw.send(dm_env_rpc_pb2.CreateWorldRequest()).world_name
    specs = raw.send(dm_env_rpc_pb2.JoinWorldRequest(
        world_name=world, settings={"direct": tensor_utils.pack_tensor(True)})).specs
    step_uid = next(u for u, s in specs.observations.items() if s.name == "__all__.step")
    raw.send(dm_env_rpc_pb2.ResetRequest(settings={"seed": tensor_utils.pack_tensor(1)}))
    observed = raw.send(dm_env_rpc_pb2.StepRequest(requested_observations=[step_uid]))
    assert '"obs":{"player1"' in observed.observations[step_uid].strings.array[0]
    with pytest.raises(error.DmEnvRpcError):
        raw.send(dm_env_rpc_pb2.ResetRequest(settings={"seed_json": tensor_utils.pack_tensor(
            '"abc"')}))
    with pytest.raises(error.DmEnvRpcError) as refused:
        raw.send(dm_env_rpc_pb2.StepRequest(requested_observations=[step_uid]))
    assert refused.value.message == "this Step was not run: the Reset before it failed"
    raw.send(dm_env_rpc_pb2.LeaveWorldRequest())
    raw.close()
    channel.close()


def test_an_oversized_request_is_refused_before_it_is_held(served: Any) -> None:
    from marlhub.adapters.remote.view import MAX_MESSAGE_BYTES

    server = served("openspiel/kuhn_poker")
    env, local = connect(server.address), marlhub.make("openspiel/kuhn_poker")
    env.reset(seed=5), local.reset(seed=5)
    channel = grpc.insecure_channel(server.address)
    call = channel.stream_stream("/dm_env_rpc.v1.Environment/Process")
    padded = dm_env_rpc_pb2.EnvironmentRequest(create_world=dm_env_rpc_pb2.CreateWorldRequest(
        settings={"pad": tensor_utils.pack_tensor(np.zeros(MAX_MESSAGE_BYTES + 1024, np.uint8))}))
    with pytest.raises(grpc.RpcError) as refused:
        list(call(iter([padded.SerializeToString()]), timeout=30))
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    channel.close()
    assert len(server.worlds.worlds) == 1  # the good client's only: no world from the padding
    assert compare_with_local(env, local, episodes=2, seed=5) == []  # the good client plays on
    env.close()
