"""Simulators the external tests drive: in process (:class:`TurnGame`) and their spaces."""

from __future__ import annotations

import random
import socket
import threading
from typing import Optional

import gymnasium as gym
import numpy as np

from marlhub.external import ExternalMultiAgentEnv

AGENTS = ["red", "blue"]
OBSERVATION_SPACES = {a: gym.spaces.Box(-100, 100, (2,), np.float32) for a in AGENTS}
ACTION_SPACES = {a: gym.spaces.Discrete(3) for a in AGENTS}


def free_address() -> str:
    """A loopback address with a port nobody listens at."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def play_turns(sim, rng: random.Random, episodes: int, off_policy: float = 0.2,
               per_episode: Optional[dict] = None) -> float:
    """Play ``episodes`` episodes in which a random subset of agents decides at each turn;
    return the total reward logged (and each ended episode's in ``per_episode``). ``sim`` is
    a simulator or a PolicyClient."""
    logged = 0.0
    for _ in range(episodes):
        start = logged
        episode = sim.start_episode()
        position = np.zeros(2, np.float32)
        for _ in range(rng.randint(2, 6)):
            deciding = [a for a in AGENTS if rng.random() < 0.7] or ["red"]
            obs = {a: position.copy() for a in deciding}
            if rng.random() < off_policy:
                actions = {a: rng.randrange(3) for a in deciding}
                sim.log_action(episode, obs, actions)
            else:
                actions = sim.get_action(episode, obs)
            for agent, action in actions.items():
                position[AGENTS.index(agent)] += int(action) - 1
            rewards = {a: round(rng.random(), 3) for a in deciding}
            sim.log_returns(episode, rewards)
            logged += sum(rewards.values())
        sim.end_episode(episode, {a: position.copy() for a in AGENTS})
        if per_episode is not None:
            per_episode[episode] = logged - start
    return logged


class TurnGame(ExternalMultiAgentEnv):
    """Agents decide at different times; some turns the simulator acts itself (off-policy).

    Each ``run()`` (one per thread) plays ``episodes`` episodes (forever for None); the
    simulator adds up what every run logged.
    """

    possible_agents = AGENTS
    observation_spaces = OBSERVATION_SPACES
    action_spaces = ACTION_SPACES

    def __init__(self, seed: int = 0, episodes=None, off_policy: float = 0.2) -> None:
        super().__init__()
        self.seed, self.episodes, self.off_policy = seed, episodes, off_policy
        self.logged = 0.0
        self.per_episode: dict = {}  # each ended episode's rewards
        self.runs = 0
        self._lock = threading.Lock()

    def run(self) -> None:
        with self._lock:
            self.runs += 1
            rng = random.Random(self.seed + 1000 * self.runs)
        left = self.episodes
        while left is None or left > 0:
            logged = play_turns(self, rng, 1, self.off_policy, self.per_episode)
            with self._lock:
                self.logged += logged
            left = None if left is None else left - 1
