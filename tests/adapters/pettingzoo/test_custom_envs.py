"""Two small PettingZoo envs doing what the built-in ones rarely do, checked by PettingZoo itself.

* :class:`Relay` (AEC): heterogeneous spaces, the action mask in ``infos``,
  rewards to agents that are not acting, an agent that terminates mid-episode
  and is stepped with None only when its turn comes round (no
  ``_deads_step_first``), and still receives a reward in between; truncation
  of the others at ``max_cycles``.
* :class:`Herd` (parallel): heterogeneous spaces, one agent terminates early
  while the others are truncated later, infos carry a key that names no agent.

The other PettingZoo test modules import them from here.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo import AECEnv, ParallelEnv  # noqa: E402

with warnings.catch_warnings():
    # pettingzoo.test imports connect_four_v3 the deprecated way at import time.
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.test import api_test, parallel_api_test, seed_test  # noqa: E402

RUNNER_OBS = gym.spaces.Box(0.0, 100.0, (4,), np.float32)


class Relay(AECEnv):
    """Two runners and a coach take turns; runner_1 may drop out; everyone else is truncated."""

    metadata = {"name": "relay_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, max_cycles: int = 6, render_mode: Optional[str] = None) -> None:
        super().__init__()
        self.possible_agents = ["runner_0", "runner_1", "coach_0"]
        self._obs_spaces = {
            "runner_0": RUNNER_OBS,
            "runner_1": gym.spaces.Box(0.0, 100.0, (4,), np.float32),
            "coach_0": gym.spaces.Box(0.0, 100.0, (2,), np.float32),
        }
        self._act_spaces = {
            "runner_0": gym.spaces.Discrete(3),
            "runner_1": gym.spaces.Discrete(3),
            "coach_0": gym.spaces.Discrete(2),
        }
        self.max_cycles = max_cycles
        self.render_mode = render_mode
        self.np_random = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._act_spaces[agent]

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self._order = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.cycle = 0
        self.pos = {a: float(self.np_random.integers(0, 3)) for a in self.agents}
        self.noise = float(self.np_random.random())
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self._order[0]
        self._update_masks()

    def _update_masks(self) -> None:
        for agent in self.agents:
            if agent.startswith("runner"):
                self.infos[agent] = {"action_mask": np.array([1, 1, int(self.cycle > 0)], np.int8)}

    def observe(self, agent: str) -> np.ndarray:
        if agent.startswith("runner"):
            return np.array([self.pos[agent], self.cycle, self.noise, 1.0], np.float32)
        return np.array([self.cycle, sum(self.pos.values())], np.float32)

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError("when an agent is dead, the only valid action is None")
            index = self._order.index(agent)
            self._order.remove(agent)
            for table in (self.terminations, self.truncations, self.rewards,
                          self._cumulative_rewards, self.infos):
                del table[agent]
            self.agents.remove(agent)
            self._clear_rewards()
            if self._order:
                self.agent_selection = self._order[index % len(self._order)]
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        if agent.startswith("runner"):
            self.pos[agent] += int(action)
            self.rewards[agent] += 0.1 * int(action)
            if "coach_0" in self.rewards:
                self.rewards["coach_0"] += 0.5
            if agent == "runner_1" and int(action) == 2:
                self.terminations[agent] = True
                self.rewards[agent] -= 1.0
        elif int(action) == 1:
            for other in self.agents:  # terminated-but-not-removed agents get it too
                if other != agent:
                    self.rewards[other] += 0.25
        index = self._order.index(agent)
        if index == len(self._order) - 1:
            self.cycle += 1
            self.noise = float(self.np_random.random())
            if self.cycle >= self.max_cycles:
                for other in self.agents:
                    if not self.terminations[other]:
                        self.truncations[other] = True
        self._accumulate_rewards()
        self._update_masks()
        self.agent_selection = self._order[(index + 1) % len(self._order)]

    def render(self) -> str:
        return f"cycle {self.cycle}: {self.pos}"

    def close(self) -> None:
        pass


class Herd(ParallelEnv):
    """A dog and two sheep move at once; sheep_1 is penned (terminated) at step 2."""

    metadata = {"name": "herd_v0", "render_modes": []}

    def __init__(self, max_steps: int = 4) -> None:
        self.possible_agents = ["dog_0", "sheep_0", "sheep_1"]
        self._obs_spaces = {
            "dog_0": gym.spaces.Box(-10.0, 10.0, (3,), np.float32),
            "sheep_0": gym.spaces.Discrete(5),
            "sheep_1": gym.spaces.Discrete(5),
        }
        self._act_spaces = {
            "dog_0": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "sheep_0": gym.spaces.Discrete(2),
            "sheep_1": gym.spaces.Discrete(2),
        }
        self.max_steps = max_steps
        self.render_mode = None
        self.np_random = np.random.default_rng()

    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_spaces[agent]

    def action_space(self, agent: str) -> gym.Space:
        return self._act_spaces[agent]

    def _obs(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for agent in self.agents:
            if agent == "dog_0":
                out[agent] = np.array([self.t, self.wind, 0.5], np.float32)
            else:
                out[agent] = np.int64(min(self.t, 4))
        return out

    def reset(self, seed: Optional[int] = None,
              options: Optional[dict] = None) -> tuple[dict, dict]:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self.wind = float(self.np_random.uniform(-1, 1))
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        self.wind = float(self.np_random.uniform(-1, 1))
        obs = self._obs()
        rewards = {a: (float(np.sum(actions[a])) if a == "dog_0" else 0.5 * int(actions[a]))
                   for a in self.agents}
        terms = {a: a == "sheep_1" and self.t == 2 for a in self.agents}
        truncs = {a: self.t >= self.max_steps and not terms[a] for a in self.agents}
        infos: dict[str, Any] = {a: {"t": self.t} for a in self.agents}
        infos["weather"] = {"wind": self.wind}  # a key that names no agent
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass


def _quietly(fn: Any, *args: Any, **kwargs: Any) -> None:
    """Run a PettingZoo test: it prints, and warns about style (names, dtypes) not tested here."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        fn(*args, **kwargs)


def test_relay_is_a_valid_pettingzoo_aec_env() -> None:
    _quietly(api_test, Relay(), num_cycles=50)
    _quietly(seed_test, Relay, num_cycles=50)


def test_herd_is_a_valid_pettingzoo_parallel_env() -> None:
    _quietly(parallel_api_test, Herd(), num_cycles=10)


def test_relay_kills_runner_1_before_its_dead_step() -> None:
    env = Relay()
    env.reset(seed=1)
    env.step(0)  # runner_0
    env.step(1)  # runner_1
    env.step(0)  # coach_0 -> cycle 1: action 2 allowed
    env.step(0)
    env.step(2)  # runner_1 terminates
    assert env.terminations["runner_1"] and env.agent_selection == "coach_0"
    env.step(1)  # the coach's bonus reaches runner_1 before it is removed
    assert env.rewards["runner_1"] == 0.25 and env.agent_selection == "runner_0"
