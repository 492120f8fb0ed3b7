"""dm_envs of lists per player, written for the tests, and whether dm_control's soccer runs here."""

from __future__ import annotations

import importlib.util
from typing import Any, Optional

import numpy as np
from dm_env import Environment, StepType, TimeStep, restart, specs


def soccer_missing() -> Optional[str]:
    """Why dm_control's soccer cannot run here (the skip reason), or None when it can."""
    if importlib.util.find_spec("dm_control") is None:
        return "dm_control's soccer needs marlhub[dmc]"
    from marlhub.adapters.dm_env.family import dm_control_fault

    return dm_control_fault()


class Relay(Environment):
    """Two players, one ``TimeStep`` of lists, ending after ``length`` steps.

    Player 0 moves a point (a ``BoundedArray`` action) and observes it with a clock (a
    ``DiscreteArray``); player 1 chooses 0, 1 or 2 (a ``DiscreteArray`` action) and
    observes noise drawn from ``random_state`` and a bool. Rewards: player 0 the sum of
    the point's coordinates, player 1 its choice (``rewards="shared"``: one number for
    both; ``"none"``: None). The last step's discount is ``ending`` (one number or one
    per player). ``actions`` keeps every list of actions the env was given.
    """

    def __init__(self, length: int = 3, ending: Any = (0.0, 1.0), rewards: str = "list",
                 seed: Optional[int] = None) -> None:
        self.random_state = np.random.RandomState(seed)
        self.length = length
        self.ending = ending
        self.rewards = rewards
        self.actions: list[list[Any]] = []
        self._t = 0
        self._point = np.zeros(2, np.float32)

    def observation_spec(self) -> list[dict[str, Any]]:
        return [{"point": specs.BoundedArray((2,), np.float32, -10.0, 10.0, name="point"),
                 "clock": specs.DiscreteArray(16, name="clock")},
                {"noise": specs.Array((3,), np.float64, name="noise"),
                 "ready": specs.Array((), np.bool_, name="ready")}]

    def action_spec(self) -> list[Any]:
        return [specs.BoundedArray((2,), np.float32, -1.0, 1.0, name="move"),
                specs.DiscreteArray(3, name="choice")]

    def reset(self) -> TimeStep:
        self._t = 0
        self._point = np.zeros(2, np.float32)
        return restart(self._observation())

    def step(self, action: Any) -> TimeStep:
        move, choice = action
        self.actions.append([move, choice])
        self._point = np.clip(self._point + move, -10, 10).astype(np.float32)
        self._t += 1
        reward: Any = [np.float32(self._point.sum()), np.asarray(choice, np.float32)]
        if self.rewards == "shared":
            reward = np.float32(1.0)
        elif self.rewards == "none":
            reward = None
        if self._t < self.length:
            return TimeStep(StepType.MID, reward, np.float32(1.0), self._observation())
        ending = (np.float32(self.ending) if np.ndim(self.ending) == 0
                  else [np.float32(d) for d in self.ending])
        return TimeStep(StepType.LAST, reward, ending, self._observation())

    def _observation(self) -> list[dict[str, Any]]:
        return [{"point": self._point.copy(), "clock": np.int32(self._t)},
                {"noise": self.random_state.normal(size=3), "ready": np.bool_(self._t % 2 == 0)}]


class Solo(Relay):
    """A single-agent dm_env: one spec, not a list."""

    def action_spec(self) -> Any:
        return specs.DiscreteArray(3)


class Unseeded(Relay):
    """A multi-player dm_env with no random state marlhub can find."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rng = self.random_state
        del self.random_state

    def _observation(self) -> list[dict[str, Any]]:
        return [{"point": self._point.copy(), "clock": np.int32(self._t)},
                {"noise": self.rng.normal(size=3), "ready": np.bool_(self._t % 2 == 0)}]
