"""``marlhub serve`` against clients that misbehave on purpose, on 127.0.0.1.

Each hostile client runs beside a well-behaved one, whose episodes must stay those of a
local env, step for step, reward for reward (``compare_with_local``). Covered here: floods
of connections and of worlds (refused past ``--max-connections`` and ``--max-worlds``), a
stream that is never read (gRPC's flow control holds the server to its window), bad tokens
(each refused alike, through ``hmac.compare_digest``), and 10,000 hostile calls (wrong
tokens, garbage bytes, wrong message types) after which the server's memory stays within
``tests/hostile.py``'s bound. test_faults.py has the rest (garbage and out-of-order
requests, oversized requests, the token, loopback).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
from dm_env_rpc.v1 import connection as dm_connection  # noqa: E402
from dm_env_rpc.v1 import dm_env_rpc_pb2, error  # noqa: E402
from google.protobuf import any_pb2  # noqa: E402
from google.rpc import status_pb2  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.remote import connect  # noqa: E402
from marlhub.adapters.remote.lockstep import compare_with_local  # noqa: E402
from marlhub.errors import RemoteEnvError  # noqa: E402
from tests.hostile import GROWTH_BOUND_MIB, HOSTILE_CALLS, ended, idle, rss_mib  # noqa: E402
from tests.remote.servers import ServeProcess, serving  # noqa: E402

TOKEN = "sesame"
PROCESS = "/dm_env_rpc.v1.Environment/Process"
REFUSED_TOKEN = ("this marlhub server requires a token: send it as call metadata 'authorization: "
                 "Bearer TOKEN' (marlhub's client: the 'token' config key or MARLHUB_TOKEN)")
#: Valid protocol buffers of the wrong kind: no payload, a response, an unknown extension,
#: a response read as a request. Each gets an error answer, and the stream goes on.
WRONG_TYPES = [
    b"",
    dm_env_rpc_pb2.EnvironmentResponse(error=status_pb2.Status(code=3)).SerializeToString(),
    dm_env_rpc_pb2.EnvironmentRequest(extension=any_pb2.Any(
        type_url="type.googleapis.com/not.a.Message", value=b"\x01")).SerializeToString(),
    dm_env_rpc_pb2.EnvironmentResponse(step=dm_env_rpc_pb2.StepResponse(
        state=dm_env_rpc_pb2.RUNNING)).SerializeToString(),
]


@pytest.fixture(scope="module")
def hosted() -> Iterator[ServeProcess]:
    """A real ``marlhub serve`` process with a token: its memory is the server's alone."""
    with serving("tic_tac_toe", "--token", TOKEN) as server:
        yield server


def _good(address: str, **options: Any) -> tuple[Any, Any]:
    return connect(address, **options), marlhub.make("tic_tac_toe")


def _free_streams(process: Any, seconds: float = 10.0) -> None:
    """Wait until the server takes streams again (those of a flood have ended there)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            list(process(iter(())))
            return
        except grpc.RpcError as refused:
            if refused.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                return
        time.sleep(0.05)


def _hostile_calls(process: Any, count: int, seed: int) -> set[str]:
    """``count`` hostile calls: a quarter streams with wrong tokens, a quarter streams of garbage
    bytes, half requests of the wrong kind on streams with the token. Return the refusals'
    distinct messages to wrong tokens."""
    rng = random.Random(seed)
    tokens = ["", TOKEN[:-1] + "f", TOKEN[:1], TOKEN * 50, TOKEN.upper(), f"{TOKEN} "]
    refusals: set[str] = set()
    batch = 25
    for start in range(0, count // 4, batch):
        calls = [process(iter(()), metadata=[("authorization", f"Bearer {tokens[k % 6]}")])
                 for k in range(start, start + batch)]
        calls += [process(iter([b"\x0f" + rng.randbytes(rng.randint(0, 64))]),  # wire type 7
                          metadata=[("authorization", f"Bearer {TOKEN}")]) for _ in range(batch)]
        for call in calls:
            with pytest.raises(grpc.RpcError) as refused:
                list(call)
            if refused.value.code() == grpc.StatusCode.UNAUTHENTICATED:
                refusals.add(refused.value.details())
            else:
                assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    per_stream = 500
    for _ in range(count // 2 // per_stream):
        answers = process(iter(WRONG_TYPES[k % 4] for k in range(per_stream)),
                          metadata=[("authorization", f"Bearer {TOKEN}")])
        errors = [dm_env_rpc_pb2.EnvironmentResponse.FromString(a).error.code for a in answers]
        assert len(errors) == per_stream and 0 not in errors
    return refusals


def test_10000_hostile_calls_are_refused_and_the_memory_stays_bounded(
        hosted: ServeProcess) -> None:
    env, local = _good(hosted.address, token=TOKEN)
    assert compare_with_local(env, local, episodes=1, seed=0) == []
    channel = grpc.insecure_channel(hosted.address)
    process = channel.stream_stream(PROCESS)
    _hostile_calls(process, 400, seed=0)  # the server's threads and buffers, grown once
    before = rss_mib(hosted.process.pid)
    refusals = _hostile_calls(process, HOSTILE_CALLS, seed=1)
    grown = rss_mib(hosted.process.pid) - before
    channel.close()
    assert refusals == {REFUSED_TOKEN}  # every wrong token alike: nothing on how close it came
    assert grown < GROWTH_BOUND_MIB, f"{grown:.1f} MiB after {HOSTILE_CALLS} hostile calls"
    assert compare_with_local(env, local, episodes=2, seed=1) == []  # the good client's episodes
    env.close()


def test_a_stream_that_is_never_read_holds_the_server_to_its_window(
        hosted: ServeProcess) -> None:
    env, local = _good(hosted.address, token=TOKEN)
    channel = grpc.insecure_channel(hosted.address)
    # Each request is answered with an error that names the world: 64 KiB out for 64 KiB in,
    # 128 MiB in all, that the client never reads.
    big = dm_env_rpc_pb2.EnvironmentRequest(join_world=dm_env_rpc_pb2.JoinWorldRequest(
        world_name="x" * 65536)).SerializeToString()
    pulled = []

    def requests() -> Iterator[bytes]:
        for _ in range(2000):
            pulled.append(1)
            yield big

    before = rss_mib(hosted.process.pid)
    unread = channel.stream_stream(PROCESS)(requests(), metadata=[("authorization",
                                                                   f"Bearer {TOKEN}")])
    time.sleep(1.0)
    assert compare_with_local(env, local, episodes=2, seed=2) == []  # meanwhile, the good one
    grown = rss_mib(hosted.process.pid) - before
    assert len(pulled) < 500, len(pulled)  # the rest waits in the client: flow control
    # What flow control lets in is at most what was pulled: 500 requests of 64 KiB (31 MiB),
    # where a server that read the whole stream would hold 125 MiB (320 pulled, 20 MiB held,
    # on a quiet machine; a loaded one pulls fewer in the second).
    assert grown < 500 * 64 / 1024, f"{grown:.1f} MiB with {len(pulled)} requests unanswered"
    unread.cancel()
    channel.close()
    env.close()


def test_floods_of_connections_and_worlds_are_refused_past_their_limits(served: Any) -> None:
    server = served("tic_tac_toe", max_connections=4, max_worlds=3)
    env, local = _good(server.address)  # holds one stream and one world
    channel = grpc.insecure_channel(server.address)
    process = channel.stream_stream(PROCESS)
    stop = threading.Event()
    flood = [process(idle(stop)) for _ in range(12)]
    refused = ended(flood, 9)
    assert refused == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 9  # 3 held, beside the good one
    with pytest.raises(RemoteEnvError, match="RESOURCE_EXHAUSTED"):
        connect(server.address)  # a newcomer is refused while the flood holds the streams
    assert compare_with_local(env, local, episodes=2, seed=3) == []  # the good one plays on
    stop.set()
    for call in flood:
        call.cancel()
    _free_streams(process)

    worlds = dm_connection.Connection(channel)  # a flood of worlds: two beside the good one's
    for _ in range(2):
        worlds.send(dm_env_rpc_pb2.CreateWorldRequest())
    with pytest.raises(error.DmEnvRpcError, match="the server holds its limit of 3 worlds"):
        worlds.send(dm_env_rpc_pb2.CreateWorldRequest())
    assert len(server.worlds.worlds) == 3
    assert compare_with_local(env, local, episodes=2, seed=4) == []
    worlds.close()
    channel.close()
    end = time.monotonic() + 10
    while len(server.worlds.worlds) > 1 and time.monotonic() < end:
        time.sleep(0.02)  # the flood's worlds go with its connection
    newcomer, twin = _good(server.address)
    assert compare_with_local(newcomer, twin, episodes=1, seed=5) == []
    newcomer.close()
    env.close()


def test_each_wrong_token_is_compared_in_constant_time_and_refused_alike(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from marlhub.adapters.remote import view

    compared = []
    original = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append(len(a))
        return original(a, b)

    monkeypatch.setattr(view.hmac, "compare_digest", compare_digest)
    server = served("tic_tac_toe", token=TOKEN)
    channel = grpc.insecure_channel(server.address)
    process = channel.stream_stream(PROCESS)
    details = set()
    tokens = ["", "s", TOKEN[:-1], TOKEN + "!", TOKEN.upper(), TOKEN * 100]
    for token in tokens:
        with pytest.raises(grpc.RpcError) as refused:
            list(process(iter(()), metadata=[("authorization", f"Bearer {token}")]))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        details.add(refused.value.details())
    assert details == {REFUSED_TOKEN} and len(compared) == len(tokens)
    channel.close()
    env, local = _good(server.address, token=TOKEN)
    assert compare_with_local(env, local, episodes=1, seed=6) == []
    env.close()
