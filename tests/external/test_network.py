"""External simulators over the network: real gRPC, simulators in other processes, faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.errors import (
    ConfigError,
    ExternalEnvError,
    ExternalTimeoutError,
    UnknownEnvError,
)
from marlhub.external import PolicyClient

from .simulators import ACTION_SPACES, AGENTS, OBSERVATION_SPACES, free_address

pytest.importorskip("grpc")

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SPACES = {"possible_agents": AGENTS, "observation_spaces": OBSERVATION_SPACES,
          "action_spaces": ACTION_SPACES}


@contextmanager
def simulators(address: str, *args: str, count: int = 1) -> Iterator[list[subprocess.Popen]]:
    """``count`` processes of network_simulator.py, killed and reaped on the way out."""
    processes = [subprocess.Popen([sys.executable, str(HERE / "network_simulator.py"), address,
                                   str(k), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, cwd=REPO) for k in range(count)]
    try:
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=30)


def learner(num_envs=None, **config):
    """The learner's side on a free loopback port, with the simulators' spaces."""
    options = {**SPACES, "timeout": 30, **config}
    if num_envs is None:
        return marlhub.make("external/127.0.0.1:0", options)
    return marlhub.make_vec("external/127.0.0.1:0", num_envs, options, batch_size=1)


def random_actions(envs, copy_ids, rng):
    return [{a: int(rng.integers(3)) for a in envs.actors[i]} for i in copy_ids]


def test_simulators_in_other_processes_give_every_reward_once() -> None:
    envs = learner(3, timeout=3)
    received: dict[str, float] = {}
    rng = np.random.default_rng(0)
    with simulators(envs.address, "6", count=3) as processes:
        envs.async_reset()
        while True:
            try:
                obs, rewards, terminateds, truncateds, infos, copy_ids = envs.recv()
            except ExternalTimeoutError:
                break  # every simulator played its episodes and left
            for k, i in enumerate(copy_ids):
                episode = envs.envs[i].episode_id  # the results' episode (ended ones too)
                received[episode] = received.get(episode, 0.0) + sum(rewards[k].values())
                assert not truncateds[k]["__all__"]
            envs.send(random_actions(envs, copy_ids, rng), copy_ids)
        logged = {}
        for process in processes:
            out, err = process.communicate(timeout=30)
            assert process.returncode == 0, err
            logged.update(json.loads(out)["episodes"])
    envs.close()
    assert len(logged) == 18
    for episode, total in logged.items():
        assert received.get(episode, 0.0) == pytest.approx(total)


def test_a_killed_simulator_ends_its_episode_truncated_and_frees_its_copy() -> None:
    env = learner()
    with simulators(env.address, "0", "--hang") as (hung,):
        obs, infos = env.reset()
        assert obs == {"red": pytest.approx(np.array([1.0, 2.0]))}
        hung.send_signal(signal.SIGKILL)  # while it waits in get_action
        hung.wait(10)
        start = time.monotonic()
        obs, rewards, terminateds, truncateds, infos = env.step({"red": 1})
        assert time.monotonic() - start < 10  # the stream closed: no waiting for the time-out
        assert truncateds["__all__"] and truncateds["red"]
        assert obs["red"] == pytest.approx(np.array([1.0, 2.0]))
        assert "disconnected" in infos["__common__"]["truncated_because"]
    with simulators(env.address, "1"):  # the copy takes the next simulator's episode
        obs, infos = env.reset()
        assert set(obs) <= set(AGENTS)
    env.close()


def test_a_silent_simulator_is_timed_out() -> None:
    env = learner(timeout=1.0)
    with simulators(env.address, "0", "--hang") as (hung,):
        env.reset()
        start = time.monotonic()
        *_, truncateds, infos = env.step({"red": 0})
        assert 0.9 < time.monotonic() - start < 10 and truncateds["__all__"]
        assert "did not answer within timeout=1 s" in infos["__common__"]["truncated_because"]
    env.close()


def test_malformed_and_out_of_space_requests_are_refused_and_the_server_goes_on() -> None:
    import grpc

    env = learner(timeout=10)
    channel = grpc.insecure_channel(env.address)
    raw = channel.unary_unary("/marlhub.external.v1.ExternalEnv/GetAction")
    with pytest.raises(grpc.RpcError) as garbage:
        raw(b"\xff\xff\xff", timeout=10)
    assert garbage.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not parse as marlhub.external.v1.GetActionRequest" in garbage.value.details()
    with pytest.raises(grpc.RpcError) as unknown:
        raw(b"", timeout=10)
    assert unknown.value.code() == grpc.StatusCode.UNAUTHENTICATED
    channel.close()
    client = PolicyClient(env.address, possible_agents=AGENTS,
                          observation_spaces=OBSERVATION_SPACES, action_spaces=ACTION_SPACES)
    episode = client.start_episode()
    with pytest.raises(ExternalEnvError, match="INVALID_ARGUMENT.*shape \\[3\\]"):
        client.get_action(episode, {"red": np.zeros(3, np.float32)})
    with pytest.raises(ExternalEnvError, match="INVALID_ARGUMENT.*not in Box"):
        client.get_action(episode, {"red": np.full(2, 500, np.float32)})
    with pytest.raises(ExternalEnvError, match="unknown agent 'green'"):
        client.log_returns(episode, {"green": 1.0})
    with pytest.raises(ExternalEnvError, match="not running"):
        client.log_returns("no-such-episode", {"red": 1.0})
    client.close()
    with simulators(env.address, "0", "2") as (good,):  # the server still serves
        obs, _ = env.reset()
        for _ in range(3):
            obs, _, terminateds, _, _ = env.step({a: 0 for a in obs})
            if terminateds["__all__"]:
                obs, _ = env.reset()
    env.close()


def _threads() -> int:
    """How many threads this process runs, the learner's server pool left out (it keeps
    idle threads for the next calls)."""
    return sum(not t.name.startswith("marlhub-policy-server") for t in threading.enumerate())


def _threads_settle_at(most: int) -> int:
    """Wait up to 10 s for :func:`_threads` to be at most ``most``; return it."""
    deadline = time.monotonic() + 10
    while _threads() > most and time.monotonic() < deadline:
        time.sleep(0.05)
    return _threads()


def test_a_dropped_episode_and_a_refused_call_say_what_to_do_once() -> None:
    env = learner(timeout=10)
    client = PolicyClient(env.address, possible_agents=AGENTS,
                          observation_spaces=OBSERVATION_SPACES, action_spaces=ACTION_SPACES)
    episode = client.start_episode()
    raised: list = []

    def decide() -> None:  # waits for the learner's answer, which never comes
        try:
            client.get_action(episode, {"red": np.zeros(2, np.float32)})
        except ExternalEnvError as exc:
            raised.append(exc)

    thread = threading.Thread(target=decide)
    thread.start()
    env.reset()  # takes the episode's decision...
    reset_again = threading.Thread(target=lambda: _quietly(env.reset))
    reset_again.start()  # ...and drops the episode mid-way, waiting for a new one
    thread.join(timeout=30)
    assert not thread.is_alive() and len(raised) == 1
    dropped = str(raised[0])
    assert "ABORTED" not in dropped and "reset" in dropped, dropped
    with pytest.raises(ExternalEnvError) as late:
        client.log_returns(episode, {"red": 1.0})  # on the episode the learner let go of
    with pytest.raises(ExternalEnvError) as unknown:
        client.log_returns("no-such-episode", {"red": 1.0})
    for message in (dropped, str(late.value), str(unknown.value)):
        assert ".." not in message, message
    for message in (dropped, str(late.value)):
        assert message.count("Start a new episode") == 1, message
    assert str(unknown.value).endswith("Fix the request as the message says.")
    client.close()
    env.close()
    reset_again.join(timeout=30)
    assert not reset_again.is_alive()


def _quietly(call) -> None:
    """Call ``call``; an error (the env closed under it) ends it quietly."""
    try:
        call()
    except Exception:
        pass


def test_decisions_go_on_one_stream_per_thread_that_ends_with_the_thread_or_close() -> None:
    import grpc

    env = learner(timeout=10)
    channel = grpc.insecure_channel(env.address)
    decide = channel.stream_stream("/marlhub.external.v1.ExternalEnv/Decide")
    with pytest.raises(grpc.RpcError) as garbage:
        next(decide(iter([b"\xff\xff\xff"]), timeout=10))
    assert garbage.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not parse as marlhub.external.v1.GetActionRequest" in garbage.value.details()
    channel.close()
    before = _threads()
    client = PolicyClient(env.address, possible_agents=AGENTS,
                          observation_spaces=OBSERVATION_SPACES, action_spaces=ACTION_SPACES)
    happened: list = []

    def play() -> None:  # in a thread of its own: a refused decision, then a short episode
        try:
            episode = client.start_episode()
            try:
                client.get_action(episode, {"red": np.zeros(3, np.float32)})
            except ExternalEnvError as exc:
                happened.append(str(exc))
            for _ in range(2):
                happened.append(client.get_action(episode, {"red": np.zeros(2, np.float32)}))
            client.end_episode(episode, {"red": np.zeros(2, np.float32)})
        except Exception as exc:  # pragma: no cover - shown by the asserts below
            happened.append(exc)

    counts = []
    for k in range(3):
        thread = threading.Thread(target=play)
        thread.start()
        obs, _ = env.reset()
        obs, *_ = env.step({"red": 1})
        assert env.step({"red": 2})[2]["__all__"]  # end_episode
        thread.join(timeout=30)
        assert not thread.is_alive()
        counts.append(_threads_settle_at(counts[0] if counts else _threads()))
    assert "INVALID_ARGUMENT" in happened[0] and "shape [3]" in happened[0]
    assert happened[1:3] == [{"red": 1}, {"red": 2}] and len(happened) == 9
    assert counts[2] <= counts[0], "the streams of threads that ended stay open"
    client.close()
    assert _threads_settle_at(before) <= before, "close() leaves streams open"
    env.close()


def test_connections_are_checked_at_connect() -> None:
    env = learner(token="sesame", max_clients=1)
    declare = dict(possible_agents=AGENTS, observation_spaces=OBSERVATION_SPACES,
                   action_spaces=ACTION_SPACES, connect_timeout=10)
    with pytest.raises(ExternalEnvError, match="UNAUTHENTICATED.*token"):
        PolicyClient(env.address, **declare)
    other = {**declare, "action_spaces": {a: gym.spaces.Discrete(4) for a in AGENTS}}
    with pytest.raises(ExternalEnvError, match="action space of 'red' is Discrete\\(4\\), the "
                       "learner's Discrete\\(3\\)"):
        PolicyClient(env.address, token="sesame", **other)
    with PolicyClient(env.address, token="sesame", **declare):
        with pytest.raises(ExternalEnvError, match="RESOURCE_EXHAUSTED.*max_clients"):
            PolicyClient(env.address, token="sesame", **declare)
    env.close()
    with pytest.raises(ExternalEnvError, match="no learner listens there"):
        PolicyClient(env.address, **{**declare, "connect_timeout": 0.5})


def test_the_first_simulator_declares_the_spaces() -> None:
    address = free_address()
    with simulators(address, "0", "3"):
        envs = marlhub.make_vec(f"external/{address}", 1, {"timeout": 30})
        assert envs.single_action_spaces == ACTION_SPACES
        assert envs.single_observation_spaces == OBSERVATION_SPACES
        obs, infos = envs.reset()
        assert set(obs[0]) <= set(AGENTS)
        envs.close()


def test_a_learner_alone_gets_a_clear_time_out() -> None:
    start = time.monotonic()
    with pytest.raises(ExternalTimeoutError, match="no simulator connected within timeout=0.5 s"):
        marlhub.make_vec(f"external/{free_address()}", 2, {"timeout": 0.5})
    env = learner(timeout=0.3)
    with pytest.raises(ExternalTimeoutError, match="no simulator is connected to 127.0.0.1"):
        env.reset()
    env.close()
    assert time.monotonic() - start < 10


def test_bad_ids_and_configs_are_refused() -> None:
    with pytest.raises(UnknownEnvError, match="external/HOST:PORT"):
        marlhub.make("external/nowhere")
    with pytest.raises(ConfigError, match="'spaces'"):
        marlhub.make("external/127.0.0.1:0", {"spaces": 1})
    with pytest.raises(ConfigError, match="without the others"):
        marlhub.make("external/127.0.0.1:0", {"possible_agents": AGENTS})


def test_marlhub_check_on_simulators_that_call_in() -> None:
    # One simulator: the check may end before a second one connects, which then never sees
    # a learner (simulators in numbers are the other tests' subject).
    address = free_address()
    with simulators(address, "0", count=1) as processes:
        result = subprocess.run([sys.executable, "-m", "marlhub", "check", f"external/{address}",
                                 "--episodes", "5", "--config", '{"timeout": 30}'],
                                capture_output=True, text=True, timeout=300, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert result.returncode == 0, result.stdout + result.stderr
        assert "PASS external/" in result.stdout
        for process in processes:
            out, err = process.communicate(timeout=30)
            assert "learner gone" in out, err
