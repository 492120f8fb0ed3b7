"""Envs that keep every rule in ways real envs do and a strict suite must not mistake for faults:
agents that join late, rewards to idle agents, numpy scalar rewards, integer agent ids,
``Discrete(3, start=1)`` actions, masks in infos, Gymnasium's tuple masks for MultiDiscrete,
RLlib-style float32 masks."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv, ResetNeededError


class _Base(MultiAgentEnv):
    """An episode of ``LENGTH`` steps; subclasses say who acts, what they see and earn.

    Actions are checked with the space's own ``contains`` (and the mask, when there
    is one), so any form the space accepts is taken.
    """

    LENGTH = 6
    AGENTS: list[Any] = ["a", "b"]

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = list(self.AGENTS)
        self.agents = []
        self.observation_spaces = {a: self.observation_space_of(a) for a in self.possible_agents}
        self.action_spaces = {a: self.action_space_of(a) for a in self.possible_agents}
        self.t = 0
        self.over = True
        self.actors: list[Any] = []

    def observation_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Box(0.0, 100.0, (1,), np.float32)

    def action_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Discrete(3)

    def observe(self, agent: Any) -> Any:
        return np.array([self.t], np.float32)

    def info(self, agent: Any) -> dict:
        return {}

    def live(self) -> list[Any]:
        return list(self.possible_agents)

    def acting(self) -> list[Any]:
        return self.live()

    def legal(self, agent: Any, action: Any) -> bool:
        return True

    def reward(self, agent: Any, actions: dict) -> Any:
        return 1.0 if agent in actions else 0.5

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t, self.over = 0, False
        self.agents = self.live()
        self.actors = self.acting()
        return self._observations(self.actors)

    def _observations(self, agents: list[Any]) -> tuple[dict, dict]:
        return ({a: self.observe(a) for a in agents},
                {a: self.info(a) for a in agents if self.info(a)})

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        if sorted(map(str, action_dict)) != sorted(map(str, self.actors)):
            raise ValueError(f"expected actions for {self.actors}, got {list(action_dict)}")
        for agent, action in action_dict.items():
            if not self.action_spaces[agent].contains(action) or not self.legal(agent, action):
                raise ValueError(f"illegal action {action!r} for {agent!r}")
        live = self.agents
        rewards = {a: self.reward(a, action_dict) for a in live}
        self.t += 1
        if self.t >= self.LENGTH:
            self.over, self.agents, self.actors = True, [], []
            obs, infos = self._observations(live)
            return obs, rewards, {"__all__": False}, {"__all__": True}, infos
        self.agents = self.live()
        self.actors = self.acting()
        obs, infos = self._observations(self.actors)
        return obs, rewards, {"__all__": False}, {"__all__": False}, infos


class LateJoiners(_Base):
    """'a' from the reset, 'b' joins at step 2 and 'c' at step 4; everyone there acts."""

    AGENTS = ["a", "b", "c"]

    def live(self) -> list[Any]:
        return ["a"] + (["b"] if self.t >= 2 else []) + (["c"] if self.t >= 4 else [])


class RewardsToIdleAgents(_Base):
    """Turn-based: 'a' and 'b' alternate, and the one waiting is rewarded every step."""

    def acting(self) -> list[Any]:
        return ["a"] if self.t % 2 == 0 else ["b"]

    def reward(self, agent: Any, actions: dict) -> Any:
        return 0.0 if agent in actions else -0.25


class NumpyScalarRewards(_Base):
    """Rewards as numpy scalars of several dtypes."""

    def reward(self, agent: Any, actions: dict) -> Any:
        return np.float32(0.5) if agent == "a" else np.int64(-1)


class IntegerAgentIds(_Base):
    """Agents 0 and 1, as RLlib's make_multi_agent names them."""

    AGENTS = [0, 1]


class ActionsStartAtOne(_Base):
    """Actions in Discrete(3, start=1): 1, 2 and 3."""

    def action_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Discrete(3, start=1)

    def reward(self, agent: Any, actions: dict) -> Any:
        return float(actions.get(agent, 0))


class MasksInInfos(_Base):
    """An int8 action mask in infos, as Gymnasium's Taxi gives it; 'b' may never play 0."""

    def info(self, agent: Any) -> dict:
        return {"action_mask": np.array([0, 1, 1] if agent == "b" else [1, 1, 1], np.int8)}

    def legal(self, agent: Any, action: Any) -> bool:
        return bool(self.info(agent)["action_mask"][int(action)])


class TupleMasks(_Base):
    """MultiDiscrete([3, 2]) actions with Gymnasium's tuple of per-dimension masks in a
    Dict observation: the first dimension may not be 1, the second must be 1."""

    MASK = (np.array([1, 0, 1], np.int8), np.array([0, 1], np.int8))

    def observation_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Dict({
            "observation": gym.spaces.Box(0.0, 100.0, (1,), np.float32),
            "action_mask": gym.spaces.Tuple((gym.spaces.MultiBinary(3), gym.spaces.MultiBinary(2))),
        })

    def action_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.MultiDiscrete([3, 2])

    def observe(self, agent: Any) -> Any:
        return {"observation": super().observe(agent), "action_mask": self.MASK}

    def legal(self, agent: Any, action: Any) -> bool:
        return bool(self.MASK[0][action[0]] and self.MASK[1][action[1]])


class FloatMasks(_Base):
    """RLlib's action-masking layout: a float32 Box mask in a Dict observation."""

    def observation_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Dict({
            "observations": gym.spaces.Box(0.0, 100.0, (1,), np.float32),
            "action_mask": gym.spaces.Box(0.0, 1.0, (3,), np.float32),
        })

    def observe(self, agent: Any) -> Any:
        return {"observations": super().observe(agent),
                "action_mask": np.array([1.0, 0.0, 1.0], np.float32)}

    def legal(self, agent: Any, action: Any) -> bool:
        return int(action) != 1


class UnboundedFiniteObs(_Base):
    """An unbounded Box whose values are large but finite."""

    def observation_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def observe(self, agent: Any) -> Any:
        return np.array([self.t, -3e38], np.float32)


class SharedReadOnlyObs(_Base):
    """Hands out one read-only array to every agent at every step, and never writes it."""

    CONSTANT = np.array([7.0], np.float32)
    CONSTANT.setflags(write=False)

    def observe(self, agent: Any) -> Any:
        return self.CONSTANT


class TruncatesAtItsLimit(_Base):
    """Declares max_steps and truncates there (the base's episode end)."""

    max_steps = _Base.LENGTH


class BothDoneAtTheEnd(_Base):
    """The last step terminates and truncates every agent at once."""

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        if self.over:
            terminateds = {a: True for a in obs} | {"__all__": True}
            truncateds = {a: True for a in obs} | {"__all__": True}
        return obs, rewards, terminateds, truncateds, infos


class OneStepEpisodes(_Base):
    """Every episode is one step long."""

    LENGTH = 1


class SmallRewardTypes(_Base):
    """Rewards as float16, int32 and plain int."""

    def reward(self, agent: Any, actions: dict) -> Any:
        return np.float16(0.25) if agent == "a" else (np.int32(-1) if self.t % 2 else 2)


class TextTupleAndGridSpaces(_Base):
    """Text and Tuple observations, and a 2-D MultiDiscrete action space."""

    def observation_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.Tuple((gym.spaces.Text(8), gym.spaces.Discrete(10)))

    def action_space_of(self, agent: Any) -> gym.Space:
        return gym.spaces.MultiDiscrete(np.array([[2, 3], [3, 2]]))

    def observe(self, agent: Any) -> Any:
        return (f"t{self.t}", self.t)

    def reward(self, agent: Any, actions: dict) -> Any:
        return float(np.sum(actions[agent])) if agent in actions else 0.0


class RendersAndCloses(_Base):
    """Renders rgb_array frames, and releases a resource in close() (then refuses to step)."""

    metadata = {"render_modes": ["rgb_array"]}
    render_mode = "rgb_array"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.screen: Any = object()

    def render(self) -> Any:
        return np.zeros((4, 6, 3), np.uint8)

    def close(self) -> None:
        self.screen = None

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.screen is None:
            raise ResetNeededError("RendersAndCloses was closed")
        return super().step(action_dict)


#: Every valid env above.
VALID_ENVS = [LateJoiners, RewardsToIdleAgents, NumpyScalarRewards, IntegerAgentIds,
              ActionsStartAtOne, MasksInInfos, TupleMasks, FloatMasks, UnboundedFiniteObs,
              SharedReadOnlyObs, TruncatesAtItsLimit, BothDoneAtTheEnd, OneStepEpisodes,
              SmallRewardTypes, TextTupleAndGridSpaces, RendersAndCloses]
