"""External simulators in process: what the learner sees of their calls, and every error."""

from __future__ import annotations

import threading
import time

import gymnasium as gym
import numpy as np
import pytest

from marlhub.conformance import check
from marlhub.errors import (
    ActionError,
    EpisodeDroppedError,
    ExternalEnvError,
    ExternalTimeoutError,
)
from marlhub.external import OFF_POLICY_ACTION, ExternalMultiAgentEnv, from_external
from marlhub.external.episodes import EpisodeBook

from .simulators import TurnGame

SPACES = {"a": gym.spaces.Discrete(10), "b": gym.spaces.Discrete(10)}
ACTIONS = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}


class Script(ExternalMultiAgentEnv):
    """Runs the function it is given as its loop (once)."""

    possible_agents = ["a", "b"]
    observation_spaces = SPACES
    action_spaces = ACTIONS

    def __init__(self, loop) -> None:
        super().__init__()
        self.loop = loop
        self.errors: list[BaseException] = []
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.loop(self)
        except BaseException as exc:
            self.errors.append(exc)
            raise
        finally:
            self.done.set()


def test_rewards_between_decisions_are_summed_and_come_once() -> None:
    def loop(sim):
        episode = sim.start_episode("e")
        sim.log_returns(episode, {"a": 0.5})  # before the first decision: the first step's
        sim.get_action(episode, {"a": 1, "b": 1})
        sim.log_returns(episode, {"a": 1.0, "b": 2.0})
        sim.log_returns(episode, {"a": 1.0}, {"a": {"note": 1}})
        sim.get_action(episode, {"b": 2})  # only b decides now
        sim.log_returns(episode, {"b": 3.0}, done_dict={"a": True})
        sim.end_episode(episode, {"b": 3})

    sim = Script(loop)
    env = from_external(sim, timeout=5)
    obs, infos = env.reset()
    assert obs == {"a": 1, "b": 1} and env.episode_id == "e"
    obs, rewards, terminateds, truncateds, infos = env.step({"a": 0, "b": 1})
    assert obs == {"b": 2}
    assert rewards == {"a": 2.5, "b": 2.0}
    assert terminateds == {"__all__": False} and truncateds == {"__all__": False}
    assert infos == {"b": {}, "__common__": {"agents": {"a": {"note": 1}}}}
    obs, rewards, terminateds, truncateds, infos = env.step({"b": 0})
    assert obs == {"b": 3} and rewards == {"b": 3.0}
    assert terminateds == {"a": True, "b": True, "__all__": True}
    assert truncateds == {"__all__": False}
    assert sim.done.wait(5) and not sim.errors
    env.close()


def test_the_learners_actions_reach_the_simulator() -> None:
    got = []

    def loop(sim):
        episode = sim.start_episode()
        got.append(sim.get_action(episode, {"a": 0}))
        got.append(sim.get_action(episode, {"a": 1, "b": 1}))
        sim.end_episode(episode, {})

    env = from_external(Script(loop), timeout=5)
    env.reset()
    env.step({"a": 1})
    env.step({"a": 0, "b": 1})
    assert got == [{"a": 1}, {"a": 0, "b": 1}]
    env.close()


def test_an_action_the_simulator_took_comes_back_in_infos() -> None:
    def loop(sim):
        episode = sim.start_episode()
        sim.log_action(episode, {"a": 4}, {"a": 1})  # does not wait for the learner
        sim.log_returns(episode, {"a": 1.0})
        sim.get_action(episode, {"a": 5})
        sim.end_episode(episode, {"a": 6})

    env = from_external(Script(loop), timeout=5)
    obs, infos = env.reset()
    assert obs == {"a": 4} and infos["a"][OFF_POLICY_ACTION] == 1
    obs, rewards, *_ , infos = env.step({"a": 0})  # ignored: the simulator acted already
    assert obs == {"a": 5} and rewards == {"a": 1.0} and OFF_POLICY_ACTION not in infos["a"]
    env.close()


def test_a_silent_simulator_is_truncated_with_its_last_observations() -> None:
    release = threading.Event()

    def loop(sim):
        episode = sim.start_episode()
        sim.get_action(episode, {"a": 1, "b": 2})
        sim.log_returns(episode, {"b": 1.0})
        release.wait(10)  # silent: the learner's time-out ends the episode
        with pytest.raises(EpisodeDroppedError, match="did not answer"):
            sim.get_action(episode, {"a": 3})

    sim = Script(loop)
    env = from_external(sim, timeout=0.3)
    env.reset()
    start = time.monotonic()
    obs, rewards, terminateds, truncateds, infos = env.step({"a": 0, "b": 0})
    assert 0.25 < time.monotonic() - start < 5
    assert obs == {"a": 1, "b": 2} and rewards == {"a": 0.0, "b": 1.0}
    assert truncateds == {"a": True, "b": True, "__all__": True}
    assert terminateds == {"__all__": False}
    assert "did not answer" in infos["__common__"]["truncated_because"]
    release.set()
    assert sim.done.wait(5) and not sim.errors
    env.close()


def test_no_simulator_is_a_clear_time_out() -> None:
    env = from_external(Script(lambda sim: None), timeout=0.2)
    with pytest.raises(ExternalTimeoutError, match=r"within timeout=0.2 s \(1 of 1 threads of "
                       r"the simulator ended: run\(\) returned\)"):
        env.reset()
    env.close()


def test_a_reset_mid_episode_drops_the_episode_and_the_simulator_goes_on() -> None:
    sim = TurnGame(seed=3, off_policy=0.0)
    env = from_external(sim, timeout=5)
    first = env.reset()
    env.reset()
    assert sim.runs == 2  # run() raised EpisodeDroppedError and was called again
    obs, infos = env.reset()
    assert set(obs) <= {"red", "blue"} and first
    env.close()


@pytest.mark.parametrize("call, args, message", [
    ("get_action", ({"a": 11},), "observation 11 for agent 'a', which is not in Discrete"),
    ("get_action", ({"zed": 1},), "unknown agent 'zed'"),
    ("get_action", ({},), "got no observation"),
    ("log_action", ({"a": 1}, {"a": 5}), "action 5 for agent 'a'"),
    ("log_action", ({"a": 1}, {"b": 1}), "actions for \\['b'\\] and observations for \\['a'\\]"),
    ("log_returns", ({"a": float("nan")},), "reward nan"),
    ("log_returns", ({"a": True},), "reward True"),
    ("log_returns", ({"a": 1.0}, {"a": 3}), "info 3"),
    ("log_returns", ({}, None, {"__all__": True}), "end_episode"),
    ("end_episode", ({"a": -1},), "observation -1"),
])
def test_a_bad_call_raises_in_the_simulator_and_changes_nothing(call, args, message) -> None:
    book = EpisodeBook(["a", "b"], SPACES, ACTIONS)
    episode = book.start_episode("e")
    book.log_returns(episode, {"a": 1.0})
    with pytest.raises(ExternalEnvError, match=message):
        getattr(book, call)(episode, *args)
    book.log_action(episode, {"a": 2}, {"a": 0})
    event = book.claim(1.0).events[0]
    assert event.obs == {"a": 2} and event.rewards == {"a": 1.0}


def test_episodes_are_bounded_and_named_once() -> None:
    book = EpisodeBook(["a"], SPACES, ACTIONS, max_episodes=1)
    book.start_episode("x")
    with pytest.raises(ExternalEnvError, match="max_episodes=1"):
        book.start_episode("y")
    with pytest.raises(ExternalEnvError, match="not running"):
        book.log_returns("nope", {"a": 1.0})
    with pytest.raises(ExternalEnvError, match="running already"):
        book.start_episode("x")
    book.end_episode("x", {})  # before it asked anything: nothing to play, forgotten at once
    assert book.claimable() == 0 and not book.episodes
    assert book.start_episode("x") == "x"  # so its id is free again


def test_the_contract_holds() -> None:
    report = check(lambda: from_external(TurnGame(seed=1), timeout=5), episodes=8)
    assert report.ok, report.findings


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_concurrent_episodes_give_every_reward_once(mode: str) -> None:
    sims = TurnGame(seed=7)
    envs = from_external(sims, 3, threads=3, timeout=5, autoreset_mode=mode)
    envs.reset()
    received: dict[str, float] = {}
    ended: set[str] = set()
    rng = np.random.default_rng(0)
    while len(ended) < 30:
        playing = [env.episode_id for env in envs.envs]
        actions = [{a: int(rng.integers(3)) for a in actors} for actors in envs.actors]
        obs, rewards, terminateds, truncateds, infos = envs.step(actions)
        for k, episode in enumerate(playing):
            received[episode] = received.get(episode, 0.0) + sum(rewards[k].values())
            assert not truncateds[k]["__all__"]
            if terminateds[k]["__all__"]:
                ended.add(episode)
                if mode == "same_step":
                    assert "final_obs" in infos[k]["__common__"]
        over = np.array([t["__all__"] for t in terminateds])
        if mode == "disabled" and over.any():
            envs.reset(options={"reset_mask": over})
    envs.close()
    for episode in ended:
        assert received[episode] == pytest.approx(sims.per_episode[episode])


def test_recv_send_takes_whoever_asks_and_every_reward_comes_once() -> None:
    sims = TurnGame(seed=11, episodes=10)
    envs = from_external(sims, 4, threads=4, timeout=1, batch_size=2)
    envs.async_reset()
    total, ended, rng = 0.0, 0, np.random.default_rng(1)
    while True:
        try:
            obs, rewards, terminateds, truncateds, infos, copy_ids = envs.recv()
        except ExternalTimeoutError:
            break
        assert len(copy_ids) <= 2
        total += sum(sum(r.values()) for r in rewards)
        ended += sum(t["__all__"] for t in terminateds)
        envs.send([{a: int(rng.integers(3)) for a in envs.actors[i]} for i in copy_ids], copy_ids)
    envs.close()
    assert ended == 40
    assert total == pytest.approx(sims.logged)


def test_a_bad_action_moves_no_copy() -> None:
    got = []

    def loop(sim):
        while True:
            episode = sim.start_episode()
            got.append(sim.get_action(episode, {"a": 0}))

    envs = from_external(Script(loop), 2, threads=2, timeout=5)
    envs.reset()
    with pytest.raises(ActionError, match="copy 1"):
        envs.step([{"a": 1}, {"a": 7}])
    time.sleep(0.1)
    assert got == []  # no simulator got an answer
    envs.step([{"a": 1}, {"a": 0}])
    assert sorted(a["a"] for a in got) == [0, 1]
    envs.close()


def test_close_releases_the_simulators_thread() -> None:
    sim = TurnGame(seed=2)
    env = from_external(sim, timeout=5)
    env.reset()
    env.close()
    assert not any(t.name.startswith("marlhub-external") and t.is_alive()
                   for t in threading.enumerate())


def test_a_simulator_without_spaces_is_refused() -> None:
    with pytest.raises(ExternalEnvError, match="declares no agents"):
        from_external(ExternalMultiAgentEnv())
    with pytest.raises(ExternalEnvError, match="not attached to a learner"):
        ExternalMultiAgentEnv(["a"], SPACES, ACTIONS).start_episode()
