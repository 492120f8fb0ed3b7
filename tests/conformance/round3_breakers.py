"""Envs that break the contract only when run beside another, stored, copied, closed or rendered.

Each is :class:`~tests.conformance.rule_breakers.Duel` (which keeps every rule) or a
small env of its own, changed as little as possible to make one bug real env authors
make; ``tests/conformance/valid_envs.py`` holds their valid twins.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv, ResetNeededError
from tests.conformance.rule_breakers import Duel


class SeedsNumpysGlobalGenerator(Duel):
    """Seeds np.random in reset and draws from it in step: alone, every episode replays."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        np.random.seed(seed)
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, {k: v + float(np.random.randint(10)) for k, v in rew.items()}, term, trunc, info


class SeedsPythonsRandom(Duel):
    """The same with Python's random module."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        random.seed(seed)
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, {k: v + random.random() for k, v in rew.items()}, term, trunc, info


class ForgetsItsDeadInStep(MultiAgentEnv):
    """'c' dies at step 2; the dead are forgotten when an episode ends in step, not in reset,
    so a reset in the middle of an episode starts the next without 'c'."""

    LENGTH = 6

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = ["a", "b", "c"]
        self.observation_spaces = {a: gym.spaces.Box(0.0, 10.0, (1,), np.float32)
                                   for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.possible_agents}
        self.agents: list[str] = []
        self.dead: set[str] = set()
        self.t, self.over = 0, True

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t, self.over = 0, False
        self.agents = [a for a in self.possible_agents if a not in self.dead]
        return {a: np.array([0.0], np.float32) for a in self.agents}, {}

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError("ForgetsItsDeadInStep")
        self.t += 1
        obs = {a: np.array([self.t], np.float32) for a in self.agents}
        rewards = {a: float(action_dict[a]) for a in self.agents}
        terminateds: dict[str, bool] = {"__all__": False}
        if self.t == 2 and "c" in self.agents:
            self.dead.add("c")
            terminateds["c"] = True
        self.agents = [a for a in self.agents if a not in self.dead]
        if self.t >= self.LENGTH:
            self.over, self.agents = True, []
            self.dead = set()  # the bug: forgotten here, not in reset()
            return obs, rewards, {"__all__": True}, {"__all__": False}, {}
        return obs, rewards, terminateds, {"__all__": False}, {}


class ReseedsNumpysGlobalGenerator(Duel):
    """Calls np.random.seed in reset and never draws from it: every episode replays, beside
    another instance too, but the process's other users of np.random are reseeded."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        np.random.seed(seed)
        return super().reset(seed=seed, options=options)


class InfiniteObs(Duel):
    """An unbounded Box observation that holds inf from step 3 on."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.observation_spaces = {a: gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
                                   for a in self.possible_agents}

    def _obs(self, agent: str) -> np.ndarray:
        obs = super()._obs(agent)
        if self.t >= 3:
            obs[0] = np.inf
        return obs


class WritesObsInPlace(Duel):
    """Writes every agent's observation into one array per agent, kept from step to step."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.buffers = {a: np.zeros(2, np.float32) for a in self.possible_agents}

    def _obs(self, agent: str) -> np.ndarray:
        self.buffers[agent][:] = super()._obs(agent)
        return self.buffers[agent]


class EditsInfosLater(Duel):
    """Hands every actor the same infos dict, and edits that dict at every step."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.shared: dict[str, Any] = {}

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        obs, _ = super().reset(seed=seed, options=options)
        self.shared["t"] = self.t
        return obs, {a: self.shared for a in obs}

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, _ = super().step(action_dict)
        self.shared["t"] = self.t
        return obs, rew, term, trunc, {a: self.shared for a in obs}


class TimeLimitAsTermination(Duel):
    """Declares max_steps and reports reaching it as termination."""

    max_steps = Duel.LENGTH


class DropsActionZero(Duel):
    """`if action:` treats 0 as no action and reuses the agent's last one (1 at first)."""

    LENGTH = 16

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.last = {a: 1 for a in self.possible_agents}

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.last = {a: 1 for a in self.possible_agents}
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        for agent, action in action_dict.items():
            if action:
                self.last[agent] = action
        return super().step({a: self.last[a] for a in action_dict})


class AppliesTheLastTurnsAction(Duel):
    """Applies the action an agent sent at its previous turn (1 at its first): no finding,
    as a simultaneous game played turn by turn pays a move only when the round is done."""

    LENGTH = 16

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.kept = {a: 1 for a in self.possible_agents}

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.kept = {a: 1 for a in self.possible_agents}
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        applied = {a: self.kept[a] for a in action_dict}
        self.kept.update(action_dict)
        return super().step(applied)


class HoldsALock(Duel):
    """Holds a threading.Lock, which neither deep-copies nor pickles."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.lock = threading.Lock()


class StepsOnAfterClose(Duel):
    """close() releases a handle, and step() goes on without it."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.handle: Any = object()

    def close(self) -> None:
        self.handle = None


class CloseRaisesTheSecondTime(StepsOnAfterClose):
    """close() releases a handle, raises when there is none left, and step() refuses."""

    def close(self) -> None:
        if self.handle is None:
            raise RuntimeError("already closed")
        super().close()

    def step(self, action_dict: dict) -> Any:
        if self.handle is None:
            raise ResetNeededError("CloseRaisesTheSecondTime was closed")
        return super().step(action_dict)


class RendersTextAsRgbArray(Duel):
    """Promises rgb_array frames and renders text."""

    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def render(self) -> Any:
        return f"t={self.t}"


class RefusesZeroDimArrays(Duel):
    """Takes int and numpy.int64 actions, but not 0-d arrays (as Gymnasium's FrozenLake)."""

    def step(self, action_dict: dict) -> Any:
        if any(isinstance(a, np.ndarray) for a in action_dict.values()):
            raise TypeError("unhashable type: 'numpy.ndarray'")
        return super().step(action_dict)
