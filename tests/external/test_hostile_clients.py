"""The external-simulator server against clients that misbehave on purpose, on 127.0.0.1.

Each hostile client runs beside a well-behaved one; the good one must still get every
reward exactly once and its episodes untouched. Covered: a stolen session id (refused as
an unknown one), another client's episode ids (nothing learned, nothing reached), wrong
tokens (refused alike, compared in constant time), an oversized request (refused before it
is held), garbage bytes, an episode that ends before its first decision (no copy
waits for it), floods of simulators, calls and episodes (refused past ``max_clients``,
``max_calls`` and ``max_client_episodes`` / ``max_episodes``), a stream that is never read
(flow control holds it in the client), and 10,000 hostile calls after which the memory
stays within ``tests/hostile.py``'s bound.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.errors import ExternalEnvError
from marlhub.external import PolicyClient
from marlhub.external.codec import space_message
from marlhub.external.server import MAX_MESSAGE_BYTES
from tests.hostile import GROWTH_BOUND_MIB, HOSTILE_CALLS, ended, idle, rss_mib

from .simulators import ACTION_SPACES, AGENTS, OBSERVATION_SPACES

grpc = pytest.importorskip("grpc")

SPACES = {"possible_agents": AGENTS, "observation_spaces": OBSERVATION_SPACES,
          "action_spaces": ACTION_SPACES}
DECLARE = dict(possible_agents=AGENTS, observation_spaces=OBSERVATION_SPACES,
               action_spaces=ACTION_SPACES, connect_timeout=10)
OBS = {"red": np.array([1.0, 2.0], np.float32)}
LAST = {"red": np.array([3.0, 4.0], np.float32)}
SERVICE = "/marlhub.external.v1.ExternalEnv/"
REFUSED_TOKEN = ("a wrong or missing token: pass the learner's token (config key 'token') as "
                 "PolicyClient(..., token=...)")


def _learner(num_envs: int = 1, **config: Any) -> Any:
    return marlhub.make_vec("external/127.0.0.1:0", num_envs, {**SPACES, "timeout": 10, **config},
                            batch_size=1)


def _message(name: str) -> Any:
    from marlhub.external.proto import load_wire

    return load_wire().messages[name]


def _raw(address: str, method: str) -> Any:
    channel = grpc.insecure_channel(address)
    return channel, channel.unary_unary(f"/marlhub.external.v1.ExternalEnv/{method}")


def _play_good(envs: Any, client: PolicyClient, meanwhile: Any = None) -> None:
    """One scripted episode of ``client`` through the learner's one copy (``meanwhile`` runs
    once the copy holds it): each side gets exactly what the other sent, each reward once."""
    got: dict[str, Any] = {}

    def play() -> None:
        episode = client.start_episode()
        got["first"] = client.get_action(episode, OBS)
        client.log_returns(episode, {"red": 0.5})
        client.log_returns(episode, {"red": 0.25})
        got["second"] = client.get_action(episode, LAST)
        client.log_returns(episode, {"red": 1.0})
        client.end_episode(episode, LAST)

    playing = threading.Thread(target=play, daemon=True)
    playing.start()
    obs, _ = envs.reset()
    if meanwhile is not None:
        meanwhile()
    assert set(obs[0]) == {"red"} and np.array_equal(obs[0]["red"], OBS["red"])
    obs, rewards, terminateds, _, _ = envs.step([{"red": 1}])
    assert np.array_equal(obs[0]["red"], LAST["red"]) and rewards[0] == {"red": 0.75}
    obs, rewards, terminateds, _, _ = envs.step([{"red": 2}])
    assert rewards[0] == {"red": 1.0} and terminateds[0]["__all__"]
    playing.join(10)
    assert got == {"first": {"red": 1}, "second": {"red": 2}}


def _session(address: str) -> tuple[Any, Any, str]:
    """A raw client's channel, its open Connect stream and its session (a session is good
    on its own connection only)."""
    channel = grpc.insecure_channel(address)
    request = _message("ConnectRequest")(name="raw")
    for agent in AGENTS:
        item = request.agents.add(agent=agent)
        item.observation.CopyFrom(space_message(OBSERVATION_SPACES[agent]))
        item.action.CopyFrom(space_message(ACTION_SPACES[agent]))
    connected = channel.unary_stream(SERVICE + "Connect")(request.SerializeToString())
    return channel, connected, _message("ConnectResponse").FromString(next(connected)).session


def _free_calls(channel: Any, seconds: float = 10.0) -> None:
    """Wait until the server takes calls again (the streams of a flood have ended there)."""
    probe = channel.unary_unary(SERVICE + "Disconnect")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            probe(b"", timeout=5)
        except grpc.RpcError as refused:
            if refused.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                return
        time.sleep(0.05)


def test_a_stolen_session_or_episode_id_is_refused_and_the_victim_plays_on() -> None:
    envs = _learner()
    victim = PolicyClient(envs.address, name="victim", **DECLARE)
    episode = victim.start_episode("mine")
    channel, log_returns = _raw(envs.address, "LogReturns")
    disconnect = channel.unary_unary("/marlhub.external.v1.ExternalEnv/Disconnect")
    stolen = victim.session  # what an eavesdropper or a guess would give
    request = _message("LogReturnsRequest")(session=stolen, episode_id=episode)
    request.rewards.add(agent="red", reward=1000.0)
    for call, payload in ((log_returns, request),
                          (disconnect, _message("DisconnectRequest")(session=stolen))):
        with pytest.raises(grpc.RpcError) as refused:
            call(payload.SerializeToString(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "an unknown session" in refused.value.details()
    channel.close()

    thief = PolicyClient(envs.address, name="thief", **DECLARE)  # a session of its own
    with pytest.raises(ExternalEnvError, match="not running") as foreign:
        thief.log_returns(episode, {"red": 1000.0})  # the victim's episode: not the thief's
    with pytest.raises(ExternalEnvError, match="not running") as unknown:
        thief.log_returns("no-such-episode", {"red": 1000.0})
    assert str(foreign.value).replace(episode, "X") == str(unknown.value).replace(
        "no-such-episode", "X")  # the same answer: the thief learns nothing of the ids
    assert thief.start_episode("mine") == "mine"  # its own "mine", another episode

    # The victim's episode is untouched: its reward is its own, once.
    answer: dict[str, Any] = {}

    def play() -> None:
        answer.update(victim.get_action(episode, OBS))
        victim.log_returns(episode, {"red": 0.5})
        victim.end_episode(episode, OBS)

    playing = threading.Thread(target=play, daemon=True)
    playing.start()
    obs, infos = envs.reset()
    assert envs.envs[0].episode_id == "mine" and set(obs[0]) == {"red"}
    obs, rewards, terminateds, _, _ = envs.step([{"red": 1}])
    playing.join(10)
    assert answer == {"red": 1}
    assert rewards[0] == {"red": 0.5} and terminateds[0]["__all__"]  # not the thief's 1000
    thief.close()
    victim.close()
    envs.close()


def test_wrong_tokens_are_refused_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from marlhub.external import server

    compared = []
    original = hmac.compare_digest

    def compare_digest(a: bytes, b: bytes) -> bool:
        compared.append(len(a))
        return original(a, b)

    monkeypatch.setattr(server.hmac, "compare_digest", compare_digest)
    envs = _learner(token="sesame")
    details = set()
    for token in ("", "sesamf", "s", "sesame" * 100):
        with pytest.raises(ExternalEnvError, match="UNAUTHENTICATED") as refused:
            PolicyClient(envs.address, token=token, **DECLARE)
        details.add(str(refused.value))
    assert len(details) == 1  # no answer says how close a guess came
    assert len(compared) == 4  # each through hmac.compare_digest: its time tells nothing
    with PolicyClient(envs.address, token="sesame", **DECLARE):
        pass
    envs.close()


def test_an_oversized_request_is_refused_before_it_is_held() -> None:
    envs = _learner()
    client = PolicyClient(envs.address, name="good", **DECLARE)
    channel, get_action = _raw(envs.address, "GetAction")
    with pytest.raises(grpc.RpcError) as refused:
        get_action(b"\x0a" + b"\xff" * (MAX_MESSAGE_BYTES + 1024), timeout=30)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as garbage:
        get_action(b"\xff\xff\xff", timeout=10)
    assert garbage.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    channel.close()
    episode = client.start_episode()  # the server goes on
    client.log_returns(episode, {"red": 1.0})
    client.close()
    envs.close()


def test_an_episode_that_ends_before_its_first_decision_leaves_no_copy_waiting() -> None:
    envs = _learner(2, timeout=8)  # two copies wait for episodes: one for each started
    quitter = PolicyClient(envs.address, name="quitter", **DECLARE)
    player = PolicyClient(envs.address, name="player", **DECLARE)


    envs.async_reset()
    quitter.end_episode(quitter.start_episode(), {})  # starts, and ends before asking
    gone = quitter.start_episode()
    quitter.close()  # and one that disconnects before asking
    episode = player.start_episode()
    asking = threading.Thread(target=lambda: player.get_action(episode, OBS), daemon=True)
    asking.start()
    start = time.monotonic()
    got = envs.recv()
    waited = time.monotonic() - start
    assert waited < 4, waited  # the player's decision, not the learner's whole timeout
    (copy,) = got.copy_ids
    assert set(got.obs[0]) == {"red"}
    assert envs.envs[copy].episode_id == episode != gone
    envs.send([{"red": 0}], got.copy_ids)
    asking.join(10)
    player.close()
    envs.close()


def test_floods_of_simulators_calls_and_episodes_are_refused_past_their_bounds() -> None:
    envs = _learner(max_clients=2, max_client_episodes=3, max_episodes=4)
    good = PolicyClient(envs.address, name="good", **DECLARE)
    hostile = PolicyClient(envs.address, name="hostile", **DECLARE)
    for _ in range(4):
        with pytest.raises(ExternalEnvError, match="RESOURCE_EXHAUSTED\\): 2 simulators "
                           "are connected already"):
            PolicyClient(envs.address, **DECLARE)
    # Calls at once: 2 * max_clients + 8 = 12, of which the two Connect streams hold two.
    channel = grpc.insecure_channel(envs.address)
    decide = channel.stream_stream(SERVICE + "Decide")
    stop = threading.Event()
    flood = [decide(idle(stop)) for _ in range(20)]
    assert ended(flood, 10) == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 10
    stop.set()
    for call in flood:
        call.cancel()
    _free_calls(channel)
    channel.close()

    for k in range(3):
        hostile.start_episode(f"h{k}")  # episodes that never ask
    with pytest.raises(ExternalEnvError, match="RESOURCE_EXHAUSTED.*runs 3 episodes already, "
                       "its limit \\(the learner's 'max_client_episodes'\\)"):
        hostile.start_episode()
    first = good.start_episode("g")  # the 4th of max_episodes=4
    with pytest.raises(ExternalEnvError, match="RESOURCE_EXHAUSTED.*max_episodes=4"):
        good.start_episode()
    good.end_episode(first, {})  # ends before it asks: forgotten at once
    _play_good(envs, good)
    hostile.close()  # its episodes end with it
    _play_good(envs, good)
    good.close()
    envs.close()


def test_a_decide_stream_that_is_never_read_leaves_the_memory_flat() -> None:
    envs = _learner()
    good = PolicyClient(envs.address, name="good", **DECLARE)
    channel, connected, session = _session(envs.address)
    started = channel.unary_unary(SERVICE + "StartEpisode")(
        _message("StartEpisodeRequest")(session=session).SerializeToString())
    episode = _message("StartEpisodeResponse").FromString(started).episode_id
    request = _message("GetActionRequest")(session=session, episode_id=episode)
    request.observations.add(agent="red").value.tensor.doubles.values.extend([1.0, 2.0])
    # 64 KiB of an unknown field (15) on each request, 128 MiB in all, never answered
    padded = request.SerializeToString() + b"\x7a\x80\x80\x04" + b"\x00" * 65536
    pulled = []

    def requests() -> Iterator[bytes]:
        for _ in range(2000):
            pulled.append(1)
            yield padded

    unread: list[Any] = []
    before = rss_mib(os.getpid())

    def flood() -> None:  # while the good one's episode holds the learner's copy
        unread.append(channel.stream_stream(SERVICE + "Decide")(requests()))
        time.sleep(1.0)

    _play_good(envs, good, meanwhile=flood)
    grown = rss_mib(os.getpid()) - before
    assert len(pulled) < 500, len(pulled)  # the rest waits in the client: flow control
    assert grown < GROWTH_BOUND_MIB, f"{grown:.1f} MiB with {len(pulled)} requests unread"
    unread[0].cancel()
    connected.cancel()
    channel.close()
    good.close()
    envs.close()


def _hostile_calls(channel: Any, count: int, stolen: str) -> set[str]:
    """``count`` hostile calls, a quarter of each: Connects with wrong tokens, garbage bytes,
    a stolen session's rewards, requests of the wrong message type. Return the distinct
    refusals of the wrong tokens."""
    connect = channel.unary_stream(SERVICE + "Connect")
    tokens = ["", "sesamf", "s", "sesame" * 50, "SESAME", "sesame "]
    theft = _message("LogReturnsRequest")(session=stolen, episode_id="e")
    theft.rewards.add(agent="red", reward=1000.0)
    unary = [(channel.unary_unary(SERVICE + "GetAction"), b"\x0f\xff\xff"),  # wire type 7
             (channel.unary_unary(SERVICE + "LogReturns"), theft.SerializeToString()),
             (channel.unary_unary(SERVICE + "StartEpisode"),  # a ConnectRequest, misdirected
              _message("ConnectRequest")(token="x", name="y").SerializeToString())]
    expected = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.UNAUTHENTICATED}
    refusals: set[str] = set()
    batch = 25
    for start in range(0, count // 4, batch):
        streams = [connect(_message("ConnectRequest")(token=tokens[k % 6]).SerializeToString())
                   for k in range(start, start + batch)]
        for stream in streams:
            with pytest.raises(grpc.RpcError) as refused:
                list(stream)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            refusals.add(refused.value.details())
        for call, payload in unary:
            for future in [call.future(payload, timeout=10) for _ in range(batch)]:
                with pytest.raises(grpc.RpcError) as refused:
                    future.result()
                assert refused.value.code() in expected
    return refusals


def test_10000_hostile_calls_are_refused_and_the_memory_stays_bounded() -> None:
    envs = _learner(token="sesame")
    good = PolicyClient(envs.address, token="sesame", name="good", **DECLARE)
    _play_good(envs, good)
    channel = grpc.insecure_channel(envs.address)
    _hostile_calls(channel, 400, good.session)  # the server's threads and buffers, grown once
    # The server, the learner and the hostile client share this process: the bound holds
    # for their sum.
    before = rss_mib(os.getpid())
    refusals = _hostile_calls(channel, HOSTILE_CALLS, good.session)
    grown = rss_mib(os.getpid()) - before
    channel.close()
    assert refusals == {REFUSED_TOKEN}
    assert grown < GROWTH_BOUND_MIB, f"{grown:.1f} MiB after {HOSTILE_CALLS} hostile calls"
    _play_good(envs, good)  # its rewards its own, once: none of the stolen session's 1000s
    good.close()
    envs.close()
