"""The external-simulator server against clients that misbehave on purpose, on 127.0.0.1.

Each hostile client runs beside a well-behaved one; the good one must still get every
reward exactly once and its episodes untouched. Covered: a stolen session id (refused as
an unknown one), another client's episode ids (nothing learned, nothing reached), wrong
tokens (refused alike, compared in constant time), an oversized request (refused before it
is held), garbage bytes, and an episode that ends before its first decision (no copy
waits for it).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.errors import ExternalEnvError
from marlhub.external import PolicyClient
from marlhub.external.server import MAX_MESSAGE_BYTES

from .simulators import ACTION_SPACES, AGENTS, OBSERVATION_SPACES

grpc = pytest.importorskip("grpc")

SPACES = {"possible_agents": AGENTS, "observation_spaces": OBSERVATION_SPACES,
          "action_spaces": ACTION_SPACES}
DECLARE = dict(possible_agents=AGENTS, observation_spaces=OBSERVATION_SPACES,
               action_spaces=ACTION_SPACES, connect_timeout=10)
OBS = {"red": np.array([1.0, 2.0], np.float32)}


def _learner(num_envs: int = 1, **config: Any) -> Any:
    return marlhub.make_vec("external/127.0.0.1:0", num_envs, {**SPACES, "timeout": 10, **config},
                            batch_size=1)


def _message(name: str) -> Any:
    from marlhub.external.proto import load_wire

    return load_wire().messages[name]


def _raw(address: str, method: str) -> Any:
    channel = grpc.insecure_channel(address)
    return channel, channel.unary_unary(f"/marlhub.external.v1.ExternalEnv/{method}")


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


def test_wrong_tokens_are_refused_alike() -> None:
    envs = _learner(token="sesame")
    details = set()
    for token in ("", "sesamf", "s", "sesame" * 100):
        with pytest.raises(ExternalEnvError, match="UNAUTHENTICATED") as refused:
            PolicyClient(envs.address, token=token, **DECLARE)
        details.add(str(refused.value))
    assert len(details) == 1  # no answer says how close a guess came
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
