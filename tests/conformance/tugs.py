"""Tugs that keep their last command: the envs ``action.effective`` is judged on.

Three tugs act at every step; each sends a command and keeps it until it sends
another, so an env that drops a command (``if action_dict.get(agent):`` takes 0 for
"no command") plays the last one that took effect, not the previous one sent. Each
breaker drops 0 for some tugs in some action space, or in turn, or under a mask; the
valid envs keep every command, against walls (where a hold and a pull into the wall
play out alike) and in a dead zone too.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv, ResetNeededError


class Tugs(MultiAgentEnv):
    """Discrete(3) commands: 0 pulls left, 1 holds, 2 pulls right; each tug starts holding.

    A tug moves by its command at every step, within ``[-LIMIT, LIMIT]``. Its
    observation is the step count and its position; its reward is minus its distance
    from the middle.
    """

    LENGTH = 20
    LIMIT = 50.0
    START = 0.0
    #: The tugs whose falsy command is dropped (none: this env is valid).
    DROPPING: tuple[str, ...] = ()

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = ["tug_0", "tug_1", "tug_2"]
        self.agents: list[str] = []
        self.observation_spaces = {a: gym.spaces.Box(-100.0, 100.0, (2,), np.float32)
                                   for a in self.possible_agents}
        self.action_spaces = {a: self._action_space() for a in self.possible_agents}
        self.t, self.over = 0, True
        self.command: dict[str, Any] = {}
        self.position: dict[str, float] = {}

    def _action_space(self) -> gym.Space:
        return gym.spaces.Discrete(3)

    def _hold(self) -> Any:
        return 1

    def _pull(self, command: Any) -> float:
        return float(command) - 1.0

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.position[agent]], np.float32)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t, self.over = 0, False
        self.agents = list(self.possible_agents)
        self.command = {a: self._hold() for a in self.agents}
        self.position = {a: self.START for a in self.agents}
        return {a: self._obs(a) for a in self.agents}, {}

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        for agent in self.agents:
            if agent in self.DROPPING:
                if action_dict.get(agent):  # the bug: 0 is "no command", the last one stays
                    self.command[agent] = action_dict[agent]
            elif agent in action_dict:
                self.command[agent] = action_dict[agent]
        self.t += 1
        for agent in self.agents:
            moved = self.position[agent] + self._pull(self.command[agent])
            self.position[agent] = float(np.clip(moved, -self.LIMIT, self.LIMIT))
        obs = {a: self._obs(a) for a in self.agents}
        rewards = {a: -abs(self.position[a]) / 10.0 for a in self.agents}
        truncated = self.t >= self.LENGTH
        if truncated:
            self.over, self.agents = True, []
        return obs, rewards, {"__all__": False}, {"__all__": truncated}, {}


class TugsAtAWall(Tugs):
    """Valid: the tugs start against the left wall, where holding and pulling left alike
    leave a tug where it is."""

    LIMIT = 1.0
    START = -1.0


class TugsKeepTheirLastCommand(Tugs):
    """Every tug drops command 0 (pull left) and keeps pulling as it last did."""

    DROPPING = ("tug_0", "tug_1", "tug_2")


class SecondTugKeepsItsLastCommand(Tugs):
    """Only 'tug_1' drops command 0; 'tug_0', the first agent a probe finds, is right."""

    DROPPING = ("tug_1",)


class TugsDropTheirHold(Tugs):
    """Commands -1, 0, 1 (Discrete(3, start=-1)): 0 is the hold, and the tugs drop it."""

    DROPPING = ("tug_0", "tug_1", "tug_2")

    def _action_space(self) -> gym.Space:
        return gym.spaces.Discrete(3, start=-1)

    def _hold(self) -> Any:
        return 0

    def _pull(self, command: Any) -> float:
        return float(command)


class ThrottlesDropZero(Tugs):
    """Box(-1, 1, (1,)) throttles: ``np.array([0.0])`` is falsy too, and is dropped."""

    DROPPING = ("tug_2",)

    def _action_space(self) -> gym.Space:
        return gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def _hold(self) -> Any:
        return np.zeros(1, np.float32)

    def _pull(self, command: Any) -> float:
        return float(np.asarray(command).reshape(-1)[0])


class OneDimensionalCommandsDropZero(Tugs):
    """MultiDiscrete([3]) commands: ``np.array([0])`` is falsy, and is dropped."""

    DROPPING = ("tug_0", "tug_1", "tug_2")

    def _action_space(self) -> gym.Space:
        return gym.spaces.MultiDiscrete([3])

    def _hold(self) -> Any:
        return np.ones(1, np.int64)

    def _pull(self, command: Any) -> float:
        return float(np.asarray(command).reshape(-1)[0]) - 1.0


class Throttles(ThrottlesDropZero):
    """Valid: the throttles of :class:`ThrottlesDropZero`, every one taken."""

    DROPPING = ()


class ThrottlesWithADeadZone(Throttles):
    """Valid: a throttle under 0.5 in size does nothing (0 and small throttles alike)."""

    def _pull(self, command: Any) -> float:
        value = super()._pull(command)
        return value if abs(value) >= 0.5 else 0.0


class TugsInANarrowDock(Tugs):
    """Valid: 0 stays, 1 pulls left, 2 pulls right, within [-1, 1]. A kept command soon
    meets a wall, where staying and pulling into it play out alike; a pull sent long
    before the turn meets the other wall by then."""

    LIMIT = 1.0

    def _hold(self) -> Any:
        return 0

    def _pull(self, command: Any) -> float:
        return (0.0, -1.0, 1.0)[int(command)]


class TugsTakeTurns(Tugs):
    """Valid: one tug sends its command per step, in turn; the tugs move when the round
    is complete (a simultaneous game played turn by turn)."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        obs, infos = super().reset(seed=seed, options=options)
        return {"tug_0": obs["tug_0"]}, infos

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        [agent] = action_dict
        if agent not in self.DROPPING or action_dict.get(agent):
            self.command[agent] = action_dict[agent]
        self.t += 1
        index = self.possible_agents.index(agent)
        rewards = {a: 0.0 for a in self.agents}
        if index == len(self.possible_agents) - 1:
            for a in self.agents:
                moved = self.position[a] + self._pull(self.command[a])
                self.position[a] = float(np.clip(moved, -self.LIMIT, self.LIMIT))
                rewards[a] = -abs(self.position[a]) / 10.0
        if self.t >= 3 * self.LENGTH:
            obs = {a: self._obs(a) for a in self.agents}
            self.over, self.agents = True, []
            return obs, rewards, {"__all__": False}, {"__all__": True}, {}
        following = self.possible_agents[(index + 1) % len(self.possible_agents)]
        return ({following: self._obs(following)}, rewards, {"__all__": False},
                {"__all__": False}, {})


class TugsTakeTurnsAndDropZero(TugsTakeTurns):
    """Every tug drops command 0, in turn: what 0 does shows when the round is complete."""

    DROPPING = ("tug_0", "tug_1", "tug_2")


class MaskedTugsDropZero(TugsKeepTheirLastCommand):
    """An action mask in the observation forbids command 0 at every third step."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        box = self.observation_spaces["tug_0"]
        self.observation_spaces = {
            a: gym.spaces.Dict({"observation": box,
                                "action_mask": gym.spaces.Box(0, 1, (3,), np.int8)})
            for a in self.possible_agents}

    def _obs(self, agent: str) -> Any:
        mask = np.array([self.t % 3 != 1, 1, 1], np.int8)
        return {"observation": super()._obs(agent), "action_mask": mask}


class TugsInAMarina(Tugs):
    """Valid: 0 stays, 1 to 4 move one berth left, up, right or down for that step only,
    in the grid of OpenSpiel's pathfinding, where most moves meet a wall after one berth:
    0 and a move into a wall play alike, and so do two moves into walls."""

    GRID = ("..*..**", "..*....", "....*..")
    MOVES = ((0, 0), (0, -1), (-1, 0), (0, 1), (1, 0))

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.observation_spaces = {a: gym.spaces.Box(-100.0, 100.0, (3,), np.float32)
                                   for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(5) for a in self.possible_agents}
        self.berth: dict[str, tuple[int, int]] = {}

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, *self.berth[agent]], np.float32)

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.berth = {a: (2, 5) for a in self.possible_agents}
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        self.t += 1
        for agent, action in action_dict.items():
            (row, col), (down, right) = self.berth[agent], self.MOVES[int(action)]
            row, col = row + down, col + right
            if 0 <= row < len(self.GRID) and 0 <= col < len(self.GRID[0]) and (
                    self.GRID[row][col] != "*"):
                self.berth[agent] = (row, col)
        obs = {a: self._obs(a) for a in self.agents}
        rewards = {a: -0.01 for a in self.agents}
        truncated = self.t >= self.LENGTH
        if truncated:
            self.over, self.agents = True, []
        return obs, rewards, {"__all__": False}, {"__all__": truncated}, {}
