"""Envs whose one bug shows only at a time limit, after a copy, at close or in a vector action.

Each is :class:`Patrol` (which keeps every rule) or a small env of its own, changed as
little as possible to make one bug real env authors make. :class:`BombAtTheLimit` and
:class:`NoopIsZero` are valid twins the suite must pass.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv, ResetNeededError


class Patrol(MultiAgentEnv):
    """Three agents walk a line at once; each dies with probability ``DEATH_P`` a step (a
    final observation and -1), and the episode is truncated at ``max_steps``, read at every
    step. Keeps every rule."""

    AGENTS = ("a", "b", "c")
    WIDTH = 6
    DEATH_P = 0.08
    max_steps = 8

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = list(self.AGENTS)
        self.observation_spaces = {a: gym.spaces.Box(0.0, 100.0, (2,), np.float32)
                                   for a in self.possible_agents}
        self.action_spaces = {a: self.action_space_of(a) for a in self.possible_agents}
        self.agents: list[str] = []
        self.pos: dict[str, int] = {}
        self.t, self.over = 0, True

    def action_space_of(self, agent: str) -> gym.Space:
        return gym.spaces.Discrete(3)

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.pos[agent]], np.float32)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t, self.over = 0, False
        self.agents = list(self.possible_agents)
        self.pos = {a: int(self.np_random.integers(self.WIDTH + 1)) for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, {}

    def move(self, agent: str, action: Any) -> None:
        self.pos[agent] = min(self.WIDTH, max(0, self.pos[agent] + int(action) - 1))

    def dies(self, agent: str) -> bool:
        return bool(self.np_random.random() < self.DEATH_P)

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        if sorted(action_dict) != sorted(self.agents):
            raise ValueError(f"expected actions for {self.agents}, got {sorted(action_dict)}")
        self.t += 1
        for agent, action in action_dict.items():
            self.move(agent, action)
        rewards = {a: self.pos[a] / 10.0 for a in self.agents}
        terminateds: dict[str, bool] = {}
        for agent in self.agents:
            if self.dies(agent):
                terminateds[agent], rewards[agent] = True, -1.0
        obs = {a: self._obs(a) for a in self.agents}
        self.agents = [a for a in self.agents if a not in terminateds]
        truncateds: dict[str, bool] = {}
        if not self.agents:
            self.over = True
        elif self.t >= self.max_steps:
            self.over, truncateds = True, dict.fromkeys(self.agents, True)
            self.agents = []
        terminateds["__all__"] = self.over and not truncateds
        truncateds["__all__"] = bool(truncateds)
        return obs, rewards, terminateds, truncateds, {}


# -- time limits ------------------------------------------------------------------------


class TerminatesEachAgentAtTheLimit(Patrol):
    """`terminated[a] = dead or t >= max_steps`: ``__all__`` is truncated at the limit, but
    every live agent is flagged terminated (RLlib reads the agents' flags: no bootstrap)."""

    def step(self, action_dict: dict) -> Any:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if truncateds["__all__"]:
            terminateds.update({a: True for a in truncateds if a != "__all__"})
            truncateds = {"__all__": True}
        return obs, rewards, terminateds, truncateds, infos


class CountsRoundsToItsLimit(MultiAgentEnv):
    """A turn-based port of an AEC game: 'a' and 'b' alternate, ``max_cycles`` counts full
    rounds, and reaching it is reported as termination (hub steps: twice ``max_cycles``)."""

    max_cycles = 3

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Box(0.0, 100.0, (1,), np.float32)
                                   for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self.agents: list[str] = []
        self.t, self.over = 0, True

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t, self.over, self.agents = 0, False, ["a", "b"]
        return {"a": np.array([0.0], np.float32)}, {}

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        mover = self.agents[self.t % 2]
        if list(action_dict) != [mover]:
            raise ValueError(f"expected an action for {mover!r}, got {sorted(action_dict)}")
        self.t += 1
        rewards = {mover: float(action_dict[mover]), self.agents[self.t % 2]: 0.0}
        obs_now = np.array([self.t], np.float32)
        if self.t // 2 >= self.max_cycles:
            self.over, self.agents = True, []
            return ({a: obs_now for a in self.possible_agents}, rewards, {"__all__": True},
                    {"__all__": False}, {})
        return {self.agents[self.t % 2]: obs_now}, rewards, {"__all__": False}, \
            {"__all__": False}, {}


class BombAtTheLimit(Patrol):
    """Valid: a bomb goes off at step 3 whatever the limit, and ``max_steps`` is 3, so each
    episode that reaches it ends by termination: every agent dies at the limit."""

    max_steps = 3

    def dies(self, agent: str) -> bool:
        return self.t == 3 or super().dies(agent)


class StartsFromOneSeedUnseeded(Patrol):
    """`if seed is None: seed = 42`: every run that does not seed plays the same episodes."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        return super().reset(seed=42 if seed is None else seed, options=options)


class KeepsItsMapOnAnEarlyReset(Patrol):
    """reset() draws a new map of bonus cells only when the last episode ended: a reset in
    the middle keeps the old map, which a reset with the same seed cannot show (it draws
    that map again) and a reset with another seed does."""

    DEATH_P = 0.0

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        ended = self.over
        obs, infos = super().reset(seed=seed, options=options)
        if ended or not hasattr(self, "bonus"):
            self.bonus = self.np_random.random(self.WIDTH + 1)
        return obs, infos

    def step(self, action_dict: dict) -> Any:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        return (obs, {a: r + float(self.bonus[self.pos[a]]) for a, r in rewards.items()},
                terminateds, truncateds, infos)


# -- the end, copies and close -----------------------------------------------------------


class StepsOnAfterTruncation(Patrol):
    """step() refuses once the game is over (everybody dead), not once the limit cut it: after
    a truncated episode it plays on. A storm kills everybody at step 2 in even-seeded
    episodes, so the first episode the suite plays ends by termination, the next by the limit."""

    DEATH_P = 0.0

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.storm, self.game_over = seed is not None and seed % 2 == 0, False
        return super().reset(seed=seed, options=options)

    def dies(self, agent: str) -> bool:
        return self.storm and self.t == 2

    def step(self, action_dict: dict) -> Any:
        if self.game_over:
            raise ResetNeededError(type(self).__name__)
        if self.over:  # cut by the limit: the bug, it plays on with whoever sends actions
            self.over, self.agents = False, sorted(action_dict)
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        self.game_over = terminateds["__all__"]
        return obs, rewards, terminateds, truncateds, infos


class EndsWhenAnyoneDies(Patrol):
    """`__all__ = any(terminateds.values())`: the episode is reported over at the first death,
    while the env plays on with the others (it refuses the dead agent's action)."""

    DEATH_P = 0.15

    def step(self, action_dict: dict) -> Any:
        if not self.agents and not self.over:  # the survivors of a reported end play on
            self.agents = self.survivors
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if any(v for a, v in terminateds.items() if a != "__all__"):
            terminateds["__all__"] = True
            self.survivors, self.agents = self.agents, []
        return obs, rewards, terminateds, truncateds, infos


class SharesStateWithItsCopy(Patrol):
    """`__deepcopy__` returns a shallow copy for speed: the copy shares the positions and
    the generator, so stepping the copy moves the original."""

    def __deepcopy__(self, memo: dict) -> Any:
        return copy.copy(self)


class CloseBeforeResetRaises(Patrol):
    """close() flushes an episode log that reset() makes: before any reset it raises."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.log: Any = None

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.log = []
        return super().reset(seed=seed, options=options)

    def close(self) -> None:
        self.log.clear()


# -- vector actions ----------------------------------------------------------------------


class DropsAllZeroVectors(Patrol):
    """MultiDiscrete([3, 3]) actions (a move and a turn); `if np.any(action):` takes [0, 0]
    for no action and keeps the agent's last command."""

    DEATH_P = 0.0

    def action_space_of(self, agent: str) -> gym.Space:
        return gym.spaces.MultiDiscrete([3, 3])

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.last = {a: np.array([1, 1]) for a in self.possible_agents}
        return super().reset(seed=seed, options=options)

    def move(self, agent: str, action: Any) -> None:
        if np.any(action):
            self.last[agent] = np.asarray(action)
        step, turn = (int(x) for x in self.last[agent])
        self.pos[agent] = min(self.WIDTH, max(0, self.pos[agent] + step - 1 + (turn - 1) * 2))


class NoopIsZero(DropsAllZeroVectors):
    """Valid: [0, 0] is a move left and a turn left, like any other command."""

    def move(self, agent: str, action: Any) -> None:
        self.last[agent] = np.asarray(action)
        super().move(agent, action)
