"""Gymnasium envs of the Tuple convention, written for the tests (one env for a team of agents)."""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np


class Meet(gym.Env):
    """Walkers on a line of 7 cells, one env for the team, as ma-gym and lbforaging are.

    Each agent observes every position (its own first), moves with 0 stay, 1 left,
    2 right, and gets -0.1 a step and +1 when all stand on one cell, which ends the
    episode (one ``terminated`` for all); ``limit`` steps truncate it.

    Args:
        n: how many walkers.
        n_agents: whether it says its size in EPyMARL's ``n_agents``.
        team_reward: one scalar reward for the team instead of a list.
        limit: the step limit.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, n: int = 2, n_agents: bool = True, team_reward: bool = False,
                 limit: int = 30, render_mode: Optional[str] = None) -> None:
        cell = gym.spaces.Box(0, 6, (n,), np.int64)
        self.observation_space = gym.spaces.Tuple([cell] * n)
        self.action_space = gym.spaces.Tuple([gym.spaces.Discrete(3)] * n)
        if n_agents:
            self.n_agents = n
        self.n, self.team_reward, self.limit, self.render_mode = n, team_reward, limit, render_mode
        self.pos = np.zeros(n, np.int64)
        self.t = 0

    def _obs(self) -> tuple[np.ndarray, ...]:
        return tuple(np.roll(self.pos, -i).copy() for i in range(self.n))

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.pos = self.np_random.integers(0, 7, self.n)
        self.t = 0
        return self._obs(), {"step": 0}

    def step(self, action: Any) -> Any:
        self.pos = np.clip(self.pos + np.array([0, -1, 1])[list(action)], 0, 6)
        self.t += 1
        met = bool((self.pos == self.pos[0]).all())
        each = [1.0 if met else -0.1] * self.n
        reward: Any = sum(each) if self.team_reward else each
        return self._obs(), reward, met, self.t >= self.limit and not met, {"step": self.t}

    def render(self) -> str:
        return " ".join(map(str, self.pos))


class Relay(gym.Env):
    """Two runners who take turns, saying who acts in ``info["acting"]`` (as a Tuple view does).

    The runner whose turn it is moves the baton 0 (not) or 1 (one cell); the other
    sends the first action. ``info["action_mask"]`` forbids standing still at cell 0
    (and allows the waiting runner only its first action); the baton at cell 8 ends
    the episode, +1 to the runners still in. Runner 1 is out (``info["alive"]``
    False) after its third turn.
    """

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Tuple([gym.spaces.Discrete(9)] * 2)
        self.action_space = gym.spaces.Tuple([gym.spaces.Discrete(2)] * 2)
        self.baton = 0
        self.turn = 0
        self.turns = [0, 0]

    def _info(self) -> dict[str, Any]:
        alive = (True, self.turns[1] < 3)
        acting = (self.turn == 0 or not alive[1], self.turn == 1 and alive[1])
        moving = np.array([0, 1] if self.baton == 0 else [1, 1], np.int8)
        masks = tuple(moving.copy() if act else np.array([1, 0], np.int8) for act in acting)
        return {"acting": acting, "alive": alive, "action_mask": masks,
                "agent_infos": ({"turns": self.turns[0]}, {"turns": self.turns[1]})}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.baton, self.turns = int(self.np_random.integers(0, 2)), [0, 0]
        self.turn = int(self.np_random.integers(0, 2))
        return (self.baton, self.baton), self._info()

    def step(self, action: Any) -> Any:
        runner = 0 if self._info()["acting"][0] else 1
        self.baton = min(self.baton + int(action[runner]), 8)
        self.turns[runner] += 1
        self.turn = 1 - runner
        done = self.baton == 8
        info = self._info()
        return (self.baton, self.baton), [float(done and alive) for alive in info["alive"]], \
            done, False, info
