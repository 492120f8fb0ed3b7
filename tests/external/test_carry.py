"""Calls that need no answer ride on the next request: one round trip per decision.

``PolicyClient.log_returns`` is kept and sent inside the episode's next request
(``GetActionRequest.logged``, ``EndEpisodeRequest.logged``); the server applies each such
call in order, exactly as its unary call, before the request itself. Old clients that make
the unary calls, and new clients of a server that does not take them, go on as before.
"""

from __future__ import annotations

import threading
from concurrent import futures
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.errors import EpisodeDroppedError, ExternalEnvError
from marlhub.external import PolicyClient
from marlhub.external.carry import MAX_CARRIED_BYTES, MAX_CARRIED_CALLS, CarriedCalls
from marlhub.external.codec import encode_into, space_message
from marlhub.external.proto import REFUSED_LOGGED, load_wire
from marlhub.external.server import MAX_LOGGED_CALLS

from .simulators import ACTION_SPACES, AGENTS, OBSERVATION_SPACES

grpc = pytest.importorskip("grpc")

SPACES: dict[str, Any] = {"possible_agents": AGENTS, "observation_spaces": OBSERVATION_SPACES,
                          "action_spaces": ACTION_SPACES}
DECLARE: dict[str, Any] = dict(possible_agents=AGENTS, observation_spaces=OBSERVATION_SPACES,
                               action_spaces=ACTION_SPACES, connect_timeout=10)
OBS = np.array([1.0, 2.0], np.float32)
LAST = np.array([3.0, 4.0], np.float32)
SERVICE = "/marlhub.external.v1.ExternalEnv/"


def _learner() -> Any:
    """The learner's one-episode env on a free loopback port."""
    return marlhub.make("external/127.0.0.1:0", {**SPACES, "timeout": 10})


def _message(kind: str, **fields: Any) -> Any:
    return load_wire().messages[kind](**fields)


def _in_thread(play: Any) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            play()
        except BaseException as exc:  # shown by the test that joins it
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_carried_rewards_come_once_in_order_with_log_action_and_end_episode(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = _learner()
    client = PolicyClient(env.address, **DECLARE)
    assert client.carries_logged

    def unary(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a LogReturns call of its own")

    monkeypatch.setitem(client._calls, "LogReturns", unary)

    def play() -> None:
        episode = client.start_episode("e")
        client.log_returns(episode, {"red": 0.5})  # before the first decision
        assert client.get_action(episode, {"red": OBS}) == {"red": 1}
        client.log_returns(episode, {"red": 1.0, "blue": 2.0})
        client.log_returns(episode, {"red": 0.25}, {"red": {"note": 1}})
        assert client.get_action(episode, {"blue": OBS}) == {"blue": 2}
        client.log_returns(episode, {"blue": 3.0})  # carried by log_action, before it
        client.log_action(episode, {"red": OBS, "blue": OBS}, {"red": 2, "blue": 0})
        client.log_returns(episode, {"red": 4.0}, done_dict={"blue": True})
        assert client.get_action(episode, {"red": OBS}) == {"red": 0}
        client.log_returns(episode, {"red": 5.0})  # carried by end_episode
        client.end_episode(episode, {"red": LAST})

    thread, errors = _in_thread(play)
    obs, _ = env.reset()
    assert list(obs) == ["red"]
    obs, rewards, terminateds, _, infos = env.step({"red": 1})
    assert list(obs) == ["blue"] and rewards == {"red": 1.75, "blue": 2.0}
    assert infos["__common__"]["agents"] == {"red": {"note": 1}}
    obs, rewards, terminateds, _, infos = env.step({"blue": 2})
    assert set(obs) == {"red", "blue"} and rewards == {"red": 0.0, "blue": 3.0}
    assert {a: infos[a]["off_policy_action"] for a in obs} == {"red": 2, "blue": 0}
    obs, rewards, terminateds, _, _ = env.step({"red": 0, "blue": 0})
    assert list(obs) == ["red"] and rewards == {"red": 4.0} and terminateds["blue"]
    obs, rewards, terminateds, truncateds, _ = env.step({"red": 0})
    assert rewards == {"red": 5.0} and terminateds["__all__"] and not truncateds["__all__"]
    assert np.array_equal(obs["red"], LAST)
    thread.join(10)
    assert not errors, errors
    client.close()
    env.close()


@pytest.mark.parametrize("carry", [True, False], ids=["carried", "unary"])
def test_a_kept_reward_the_learner_refuses_raises_on_the_call_that_carries_it(
        carry: bool) -> None:
    env: Any = marlhub.make("external/127.0.0.1:0", {**SPACES, "timeout": 1.0})
    client = PolicyClient(env.address, carry_logged=carry, **DECLARE)
    episode = client.start_episode("e")
    thread, errors = _in_thread(lambda: client.get_action(episode, {"red": OBS}))
    env.reset()
    assert env.step({"red": 1})[3]["__all__"]  # the simulator is late: the episode is let go
    thread.join(10)
    if carry:  # kept: refused with the next request that carries it
        client.log_returns(episode, {"red": 1.0})
        with pytest.raises(EpisodeDroppedError) as refused:
            client.get_action(episode, {"red": OBS})
    else:
        with pytest.raises(EpisodeDroppedError) as refused:
            client.log_returns(episode, {"red": 1.0})
    assert str(refused.value) == (
        f"the learner at {env.address}: LogReturns was refused: episode 'e': log_returns() on "
        "an episode the learner let go of: the simulator did not answer within timeout=1 s "
        "(the learner truncated the episode). Start a new episode and go on.")
    with pytest.raises(EpisodeDroppedError, match="LogReturns was refused"):
        client.log_returns(episode, {"red": 1.0})  # the client knows now: refused at once
    assert not errors, errors
    client.close()
    env.close()


def test_close_sends_the_kept_rewards_into_the_truncated_end() -> None:
    env = _learner()
    client = PolicyClient(env.address, **DECLARE)

    def play() -> None:
        episode = client.start_episode()
        client.get_action(episode, {"red": OBS})
        client.log_returns(episode, {"red": 2.5})  # kept: no request follows but close's
        client.close()

    thread, errors = _in_thread(play)
    env.reset()
    _, rewards, _, truncateds, infos = env.step({"red": 1})
    assert rewards == {"red": 2.5} and truncateds["__all__"]
    assert "disconnected" in infos["__common__"]["truncated_because"]
    thread.join(10)
    assert not errors, errors
    env.close()


def _raw_session(channel: Any) -> tuple[Any, str, bool]:
    """A client of the raw stubs: its Connect stream, session, and whether the server takes
    logged calls."""
    request = _message("ConnectRequest", name="raw")
    for agent in AGENTS:
        item = request.agents.add(agent=agent)
        item.observation.CopyFrom(space_message(OBSERVATION_SPACES[agent]))
        item.action.CopyFrom(space_message(ACTION_SPACES[agent]))
    stream = channel.unary_stream(SERVICE + "Connect")(request.SerializeToString())
    connected = load_wire().messages["ConnectResponse"].FromString(next(stream))
    return stream, connected.session, connected.takes_logged


def test_unary_calls_of_old_clients_and_carried_ones_are_checked_alike() -> None:
    env = _learner()
    owner = grpc.insecure_channel(env.address)
    other = grpc.insecure_channel(env.address)
    owner_stream, session, takes_logged = _raw_session(owner)
    other_stream, intruder, _ = _raw_session(other)
    assert takes_logged

    def unary(channel: Any, rpc: str, request: Any) -> Any:
        return channel.unary_unary(SERVICE + rpc)(request.SerializeToString(), timeout=10)

    episode = _message("StartEpisodeResponse").FromString(unary(owner, "StartEpisode", _message(
        "StartEpisodeRequest", session=session, episode_id="mine"))).episode_id
    # Another client's episode id: the unary call and each carrying request are refused alike.
    theft = _message("LogReturnsRequest", session=intruder, episode_id=episode)
    theft.rewards.add(agent="red", reward=1000.0)
    with pytest.raises(grpc.RpcError) as alone:
        unary(other, "LogReturns", theft)
    assert alone.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "names an episode that is not running" in alone.value.details()
    decide = _message("GetActionRequest", session=intruder, episode_id="theirs")
    encode_into(decide.observations.add(agent="red").value, OBS)
    decide.logged.add(log_returns=theft)
    end = _message("EndEpisodeRequest", session=intruder, episode_id="theirs")
    end.logged.add(log_returns=theft)
    calls: list[Any] = [lambda: unary(other, "GetAction", decide),
                        lambda: unary(other, "EndEpisode", end),
                        lambda: next(other.stream_stream(SERVICE + "Decide")(
                            iter([decide.SerializeToString()]), timeout=10))]
    for call in calls:
        with pytest.raises(grpc.RpcError) as carried:
            call()
        assert carried.value.code() == alone.value.code()
        assert carried.value.details() == alone.value.details()
        assert (REFUSED_LOGGED, "0 LogReturns") in carried.value.trailing_metadata()
    empty = _message("GetActionRequest", session=intruder, episode_id="theirs")
    empty.logged.add()
    with pytest.raises(grpc.RpcError) as nothing:
        unary(other, "GetAction", empty)
    assert nothing.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "logged call 0 is empty" in nothing.value.details()
    assert (REFUSED_LOGGED, "0 Logged") in nothing.value.trailing_metadata()
    flood = _message("GetActionRequest", session=intruder, episode_id="theirs")
    for _ in range(MAX_LOGGED_CALLS + 1):
        flood.logged.add(log_returns=theft)
    with pytest.raises(grpc.RpcError) as too_many:
        unary(other, "GetAction", flood)
    assert too_many.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    # The owner, an old client: every call unary; its rewards reach the learner once.
    def play() -> None:
        ask = _message("GetActionRequest", session=session, episode_id=episode)
        encode_into(ask.observations.add(agent="red").value, OBS)
        unary(owner, "GetAction", ask)
        rewards = _message("LogReturnsRequest", session=session, episode_id=episode)
        rewards.rewards.add(agent="red", reward=0.5)
        unary(owner, "LogReturns", rewards)
        unary(owner, "LogReturns", rewards)
        unary(owner, "EndEpisode", _message("EndEpisodeRequest", session=session,
                                            episode_id=episode))

    thread, errors = _in_thread(play)
    env.reset()
    _, rewards, terminateds, _, _ = env.step({"red": 1})
    thread.join(10)
    assert not errors, errors
    assert rewards == {"red": 1.0} and terminateds["__all__"]  # not the intruder's 1000
    for stream, channel in ((owner_stream, owner), (other_stream, other)):
        stream.cancel()
        channel.close()
    env.close()


def test_a_client_of_a_server_that_does_not_take_logged_calls_makes_unary_calls() -> None:
    messages = load_wire().messages
    seen: list[str] = []
    stop = threading.Event()

    def answer(rpc: str, response: Any) -> Any:
        def handler(request: bytes, context: Any) -> Any:
            seen.append(rpc)
            return response
        return grpc.unary_unary_rpc_method_handler(
            handler, response_serializer=lambda m: m.SerializeToString())

    def connect(request: bytes, context: Any) -> Any:
        yield messages["ConnectResponse"](session="s", max_episodes=4)  # no takes_logged
        stop.wait(10)

    table = {rpc: answer(rpc, messages[response]()) for rpc, (_, response, kind)
             in load_wire().rpcs.items() if kind == "unary_unary"}
    table["StartEpisode"] = answer("StartEpisode", messages["StartEpisodeResponse"](
        episode_id="e"))
    table["Connect"] = grpc.unary_stream_rpc_method_handler(
        connect, response_serializer=lambda m: m.SerializeToString())
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        load_wire().service, table),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with PolicyClient(f"127.0.0.1:{port}", **DECLARE) as client:
            assert not client.carries_logged
            episode = client.start_episode()
            client.log_returns(episode, {"red": 1.0})
            client.log_action(episode, {"red": OBS}, {"red": 1})
            client.end_episode(episode, {"red": LAST})
        assert seen == ["StartEpisode", "LogReturns", "LogAction", "EndEpisode", "Disconnect"]
    finally:
        stop.set()
        server.stop(0)


def test_a_call_that_may_be_refused_is_sent_at_once() -> None:
    env = _learner()
    client = PolicyClient(env.address, **DECLARE)
    episode = client.start_episode()
    bad_rewards: list[tuple[dict[Any, Any], str]] = [
        ({"green": 1.0}, "unknown agent 'green'"), ({"red": float("nan")}, "reward nan")]
    for bad, message in bad_rewards:
        with pytest.raises(ExternalEnvError, match=f"LogReturns was refused.*{message}"):
            client.log_returns(episode, bad)
    with pytest.raises(ExternalEnvError, match="LogReturns was refused.*info 3"):
        client.log_returns(episode, {}, {"red": 3})
    client.close()
    env.close()


def test_the_kept_calls_are_bounded_per_episode_and_in_the_episodes_known() -> None:
    calls = CarriedCalls(max_episodes=1, agents=["red"])
    calls.started("e")
    for k in range(MAX_CARRIED_CALLS - 1):
        assert calls.keep("e", k, rewards={"red": 1.0}) and not calls.full("e")
    assert calls.keep("e", "last") and calls.full("e")  # sent on their own now
    assert calls.take("e")[-1] == "last" and not calls.full("e")
    assert calls.keep("e", "big", infos={"red": {}}, size=MAX_CARRIED_BYTES) and calls.full("e")
    assert not calls.keep("e", "at once", done=["blue"])  # an agent it does not have
    assert calls.keep("e", "red is done", done=["red"])
    assert not calls.keep("e", "at once", rewards={"red": 1.0})  # red's later calls go at once
    for k in range(100):  # episodes the learner let go of unheard: the idle ones forgotten
        calls.started(f"old-{k}")
    assert calls.keep("e", "still known") and not calls.keep("old-0", "forgotten")
    assert calls.take_all() == {"e": ["big", "red is done", "still known"]}
