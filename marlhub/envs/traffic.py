"""Traffic: cars that enter, queue at a light and leave; a light that earns their throughput.

A one-lane road of ``road_length`` cells ends at a traffic light. Cars
``"car_0" .. "car_{n-1}"`` arrive at seeded random times (drawn from
``self.np_random`` at reset) and enter on cell 0 when it is free; each moves
0, 1 or 2 cells a step, never into an occupied cell, and leaves the episode
by crossing the stop line on green. The ``"light"`` agent sets the phase
(0 red, 1 green).

It is the test bed for the hard parts of the contract (:data:`marlhub.contract.rules.RULES`):

* agents **enter** after reset: a car's first observation comes with the first
  step it acts, so only ``car_0`` (and the light) are there at reset;
* agents **leave early**: a car that crosses is terminated on its own, with its
  final observation (position ``road_length``) and +1 in that step;
* agents act in **changing groups**: on steps ``0, joint_every, 2 * joint_every, ...``
  the light and every live car act; on the other multiples of ``light_every``
  the light acts alone; on all remaining steps every live car acts (or, with
  no car on the road, the light, so there is always an actor);
* agents get **rewards while not acting**: every live car that did not move
  gets -0.1 each step, acting or not; the light gets +1 for each car that
  crosses, on any step;
* **heterogeneous spaces**: a car observes ``MultiDiscrete([road_length + 1,
  road_length, 2])`` = (position, free cells ahead, phase) and acts in
  ``Discrete(3)``; the light observes ``Box(0, 1, (road_length + 1,), float32)``
  = (occupancy of each cell, phase) and acts in ``Discrete(2)``;
* the episode is **terminated** when every car has crossed and **truncated**
  at ``max_steps``, when every live agent gets its last observation.
* a **global state** for centralised critics (MAPPO, QMIX): ``state()`` is the
  whole world as a float32 array in ``state_space``, three entries per car
  (cell, on the road, crossed: the cell is 0 before the car enters and
  ``road_length`` once it crossed), then the phase and the step ``t``.

Within a step the light switches first, then cars move front to back.

Example:
    >>> env = Traffic({"num_cars": 3, "max_steps": 20})
    >>> obs, infos = env.reset(seed=1)
    >>> sorted(obs), env.agents
    (['car_0', 'light'], ['car_0', 'light'])
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"car_0": 2, "light": 1})
    >>> obs["car_0"], rewards
    (array([2, 3, 1]), {'car_0': 0.0, 'light': 0.0})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.context import check_config, check_int
from marlhub.core import (
    ALL,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running

__all__ = ["Traffic"]

ENV_ID = "traffic"
LIGHT = "light"
RED, GREEN = 0, 1
EXIT_REWARD = 1.0
WAIT_COST = -0.1
_DEFAULTS: dict[str, Any] = {
    "num_cars": 4,
    "max_steps": 100,
    "road_length": 6,
    "arrival_gap": 3,
    "light_every": 4,
    "joint_every": 10,
}
_MINIMUM = {"num_cars": 1, "max_steps": 1, "road_length": 2, "arrival_gap": 0,
            "light_every": 1, "joint_every": 1}


class Traffic(MultiAgentEnv):
    """Cars queue at a traffic light on a one-lane road; the light is an agent too.

    Args:
        config: a dict or ``EnvContext`` with any of ``num_cars`` (4),
            ``max_steps`` (100), ``road_length`` (6), ``arrival_gap`` (3: gaps
            between arrivals are uniform in ``[0, 2 * arrival_gap]`` steps),
            ``light_every`` (4) and ``joint_every`` (10), see the module docs.

    Raises:
        ConfigError: unknown keys, or values that are not integers in range.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        cfg = check_config(ENV_ID, config, _DEFAULTS)
        ints = {key: check_int(ENV_ID, cfg, key, minimum=low) for key, low in _MINIMUM.items()}
        self.num_cars = ints["num_cars"]
        self.max_steps = ints["max_steps"]
        self.road_length = ints["road_length"]
        self.arrival_gap = ints["arrival_gap"]
        self.light_every = ints["light_every"]
        self.joint_every = ints["joint_every"]
        self.cars = [f"car_{i}" for i in range(self.num_cars)]
        self.possible_agents = [*self.cars, LIGHT]
        self.agents = []
        n = self.road_length
        car_obs = gym.spaces.MultiDiscrete([n + 1, n, 2])
        car_act = gym.spaces.Discrete(3)
        self.observation_spaces = {car: car_obs for car in self.cars}
        self.observation_spaces[LIGHT] = gym.spaces.Box(0.0, 1.0, (n + 1,), np.float32)
        self.action_spaces = {car: car_act for car in self.cars}
        self.action_spaces[LIGHT] = gym.spaces.Discrete(2)
        per_car = [n, 1, 1] * self.num_cars
        self.state_space = gym.spaces.Box(
            0.0, np.array([*per_car, 1, self.max_steps], np.float32), dtype=np.float32)
        self.render_mode = "ansi"
        self.t = 0
        self.phase = RED
        self.arrivals = np.zeros(self.num_cars, np.int64)
        self.positions: dict[str, int] = {}  # live cars -> cell
        self.next_car = 0  # index of the next car to enter
        self.gone: set[AgentID] = set()  # cars that crossed this episode
        self._actors: list[AgentID] = []
        self._cannot_step: Optional[str] = NOT_RESET

    @property
    def crossed(self) -> int:
        """How many cars crossed in this episode."""
        return len(self.gone)

    # -- the episode ----------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Draw arrival times and the first phase from ``self.np_random``; return the first actors.

        Args:
            seed: seeds ``self.np_random``; the same seed and actions replay the episode.
            options: ignored.
        """
        super().reset(seed=seed)
        gaps = self.np_random.integers(0, 2 * self.arrival_gap + 1, size=self.num_cars)
        self.arrivals = np.cumsum(gaps) - gaps[0]  # the first car arrives at step 0
        self.phase = int(self.np_random.integers(2))
        self.t = 0
        self.positions = {}
        self.next_car = 0
        self.gone = set()
        self._cannot_step = None
        self._schedule()
        return {a: self._obs(a) for a in self._actors}, {}

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Switch the light and move the cars that act; reward every live agent.

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: an actor without an action, an action for an agent that
                does not act now (or does not exist), or an action outside its space.
        """
        require_running(type(self).__name__, self._cannot_step)
        actions = check_action_dict(
            type(self).__name__,
            action_dict,
            actors=self._actors,
            possible_agents=self.possible_agents,
            space_of=self.get_action_space,
            finished=self.gone,
        )
        self.t += 1
        if LIGHT in actions:
            self.phase = actions[LIGHT]
        moved, crossed = self._drive(actions)

        rewards: dict[AgentID, float] = {
            car: EXIT_REWARD if car in crossed else 0.0 if car in moved else WAIT_COST
            for car in self._live_cars()
        }
        rewards[LIGHT] = EXIT_REWARD * len(crossed)
        for car in crossed:
            del self.positions[car]
        self.gone.update(crossed)
        obs: MultiAgentDict = {car: self._obs(car) for car in crossed}
        terminateds: dict[AgentID, bool] = {car: True for car in crossed}
        truncateds: dict[AgentID, bool] = {}

        over = True
        if self.crossed == self.num_cars:
            terminateds[LIGHT] = True
            obs[LIGHT] = self._obs(LIGHT)
        elif self.t >= self.max_steps:
            # Every live agent has acted at some point: each gets its last obs.
            for agent in [*self._live_cars(), LIGHT]:
                obs[agent] = self._obs(agent)
                truncateds[agent] = True
        else:
            over = False
            self._schedule()
            obs.update({a: self._obs(a) for a in self._actors})
        terminateds[ALL] = over and self.crossed == self.num_cars
        truncateds[ALL] = over and not terminateds[ALL]
        if over:
            self._actors = []
            self.agents = []
            self._cannot_step = EPISODE_OVER
        return obs, rewards, terminateds, truncateds, {}

    def state(self) -> np.ndarray:
        """Return the global state: every car's (cell, on the road, crossed), the phase, ``t``.

        Example:
            >>> env = Traffic({"num_cars": 2})
            >>> _ = env.reset(seed=1)
            >>> env.state()
            array([0., 1., 0., 0., 0., 0., 1., 0.], dtype=float32)
        """
        n = self.road_length
        cars = [(self.positions[car], 1, 0) if car in self.positions
                else (n, 0, 1) if car in self.gone else (0, 0, 0)
                for car in self.cars]
        return np.array([*(v for car in cars for v in car), self.phase, self.t], np.float32)

    # -- the simulation -------------------------------------------------------------

    def _live_cars(self) -> list[AgentID]:
        return [car for car in self.cars if car in self.positions]

    def _drive(self, actions: Mapping[AgentID, int]) -> tuple[set[str], list[str]]:
        """Move the acting cars front to back; return (cars that moved, cars that crossed)."""
        moved: set[str] = set()
        crossed: list[str] = []
        occupied = set(self.positions.values())
        for car in sorted(self.positions, key=self.positions.__getitem__, reverse=True):
            pos = start = self.positions[car]
            for _ in range(actions.get(car, 0)):
                if pos + 1 == self.road_length:
                    if self.phase == GREEN:
                        crossed.append(car)
                    break
                if pos + 1 in occupied:
                    break
                pos += 1
            occupied.discard(start)
            if car in crossed:
                moved.add(car)
                continue
            occupied.add(pos)
            self.positions[car] = pos
            if pos != start:
                moved.add(car)
        return moved, sorted(crossed, key=self.cars.index)

    def _schedule(self) -> None:
        """Decide who acts in step ``t + 1``, letting a waiting car in when cars act."""
        n = self.t
        joint = n % self.joint_every == 0
        light_turn = joint or n % self.light_every == 0
        cars_turn = joint or not light_turn
        if cars_turn and self.next_car < self.num_cars and self.arrivals[self.next_car] <= n:
            if 0 not in self.positions.values():
                self.positions[self.cars[self.next_car]] = 0
                self.next_car += 1
        actors: list[AgentID] = self._live_cars() if cars_turn else []
        if light_turn or not actors:
            actors.append(LIGHT)
        self._actors = actors
        self.agents = [*self._live_cars(), LIGHT]

    def _obs(self, agent: AgentID) -> np.ndarray:
        n = self.road_length
        if agent == LIGHT:
            cells = np.zeros(n + 1, np.float32)
            cells[list(self.positions.values())] = 1.0
            cells[n] = self.phase
            return cells
        pos = self.positions.get(str(agent), n)  # a car that crossed sits at n
        ahead = [p for p in self.positions.values() if p > pos]
        gap = (min(ahead) if ahead else n) - pos - 1
        return np.array([pos, max(gap, 0), self.phase], np.int64)

    def render(self) -> str:
        """Return the road as one line of text: cars by index digit, the light R or G.

        Example:
            >>> env = Traffic({"num_cars": 2})
            >>> _ = env.reset(seed=1)
            >>> env.render()
            't=0 to_enter=1 |0 . . . . .|G crossed=0/2'
        """
        cells = ["."] * self.road_length
        for car, pos in self.positions.items():
            cells[pos] = car[-1]
        to_enter = self.num_cars - self.next_car
        light = "G" if self.phase == GREEN else "R"
        return f"t={self.t} to_enter={to_enter} |{' '.join(cells)}|{light} crossed={self.crossed}/{self.num_cars}"
