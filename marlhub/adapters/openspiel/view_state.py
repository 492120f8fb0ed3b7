"""The pyspiel State and observer of a hub env's game (see :mod:`~marlhub.adapters.openspiel.view`).

* :class:`GameSpec`: what every state of one game shares (the env factory, the
  players, their action ranges, the observation layout);
* :class:`HubEpisode`: one hub env and its episode, as a state sees it;
* :class:`HubState`: the ``pyspiel.State`` over a :class:`HubEpisode`;
  ``clone()`` deep-copies it;
* :class:`HubObserver`: the player's last observation, flattened, as a tensor.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.openspiel.games import import_pyspiel
from marlhub.core import ALL
from marlhub.errors import EnvContractError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask

__all__ = ["GameSpec", "HubEpisode", "HubObserver", "HubState", "flat_size"]

# Any, not ModuleType: this module subclasses pyspiel.State (an untyped extension module).
pyspiel: Any = import_pyspiel("to_openspiel")


def inner_space(space: gym.Space) -> gym.Space:
    """The observation part of a ``Dict(observation=..., action_mask=...)`` space."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces \
            and "observation" in space.spaces:
        return space["observation"]
    return space


def inner_obs(space: gym.Space, obs: Any) -> Any:
    if space is not inner_space(space):
        return obs["observation"]
    return obs


def flat_size(space: gym.Space) -> Optional[int]:
    try:
        return int(gym.spaces.flatdim(inner_space(space)))
    except Exception:  # Text and other spaces gymnasium cannot flatten
        return None


class GameSpec:
    """What every state and observer of one registered game shares (never copied)."""

    def __init__(self, make: Callable[[], Any], agents: list[Any], starts: list[int],
                 sizes: list[int], simultaneous: bool, obs_spaces: list[gym.Space],
                 tensor_size: Optional[int], label: str) -> None:
        self.make = make
        self.agents = agents
        self.index = {a: p for p, a in enumerate(agents)}
        self.starts = starts
        self.sizes = sizes
        self.simultaneous = simultaneous
        self.obs_spaces = obs_spaces
        self.tensor_size = tensor_size
        self.label = label

    def __deepcopy__(self, memo: dict[int, Any]) -> "GameSpec":
        return self


class HubEpisode:
    """The mutable part of a state, in one object so that one deepcopy clones it consistently."""

    def __init__(self, spec: GameSpec, seed: int) -> None:
        self.spec = spec
        self.seed = seed
        self.env = spec.make()
        n = len(spec.agents)
        obs, infos = self.env.reset(seed=seed)
        self.last_obs: dict[Any, Any] = {}
        self.rewards = [0.0] * n
        self.returns = [0.0] * n
        self.over = False
        self._take(obs, infos, {}, {})

    def _take(self, obs: Mapping[Any, Any], infos: Mapping[Any, Any],
              terminateds: Mapping[Any, Any], truncateds: Mapping[Any, Any]) -> None:
        spec = self.spec
        self.last_obs.update(obs)
        self.obs, self.infos = dict(obs), dict(infos)
        self.actors = [spec.index[a] for a in obs
                       if not (terminateds.get(a, False) or truncateds.get(a, False))]
        if self.over:
            self.actors = []
            return
        if not self.actors:
            raise EnvContractError(spec.label, "turn.actors_exist",
                                   "no agent is left to act but the episode is not over")
        if len(self.actors) > 1 and not spec.simultaneous:
            raise EnvContractError(
                spec.label, "turn.actors_exist",
                f"{len(self.actors)} agents act in one step, but the OpenSpiel game was "
                "registered as sequential; register it with dynamics='simultaneous'",
            )

    def legal(self, player: int) -> list[int]:
        if player not in self.actors:
            return []
        agent = self.spec.agents[player]
        mask = find_action_mask(self.obs[agent], self.infos.get(agent))
        size = self.spec.sizes[player]
        if mask is None or mask.shape != (size,):
            return list(range(size))
        return [int(a) for a in np.flatnonzero(mask)]

    def step(self, actions: Mapping[int, int]) -> None:
        spec = self.spec
        action_dict = {spec.agents[p]: spec.starts[p] + int(a) for p, a in actions.items()}
        obs, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        self.rewards = [0.0] * len(spec.agents)
        for agent, reward in rewards.items():
            self.rewards[spec.index[agent]] += float(reward)
        self.returns = [r + d for r, d in zip(self.returns, self.rewards)]
        self.over = bool(terminateds.get(ALL, False) or truncateds.get(ALL, False))
        self._take(obs, infos, terminateds, truncateds)

    def __deepcopy__(self, memo: dict[int, Any]) -> "HubEpisode":
        # Spaces never change: share them instead of copying them on every clone().
        env = self.env
        spaces = list(self.spec.obs_spaces)
        for attr in ("action_spaces", "observation_spaces"):
            spaces += list((getattr(env, attr, None) or {}).values())
        for space in spaces:
            memo[id(space)] = space
        clone = HubEpisode.__new__(HubEpisode)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            setattr(clone, key, copy.deepcopy(value, memo))
        return clone


class HubState(pyspiel.State):
    """An OpenSpiel state holding a hub env; the env is built on first use.

    OpenSpiel's ``clone()`` makes a new initial state and deep-copies the
    attributes into it, so building the env lazily keeps clones cheap and
    keeps the game's seed sequence for real new episodes.
    """

    def __init__(self, game: Any) -> None:
        super().__init__(game)
        # Only the episode is an attribute: clone() deep-copies every attribute.
        self._episode: Optional[HubEpisode] = None

    @property
    def episode(self) -> HubEpisode:
        """The env and what it returned last."""
        if self._episode is None:
            game = self.get_game()
            self._episode = HubEpisode(game.spec, game.draw_seed())
        return self._episode

    @property
    def env(self) -> Any:
        """The hub env inside this state (do not step it directly)."""
        return self.episode.env

    @property
    def seed(self) -> int:
        """The seed the env was reset with."""
        return self.episode.seed

    def current_player(self) -> int:
        """The acting player, SIMULTANEOUS, or TERMINAL."""
        episode = self.episode
        if episode.over:
            return pyspiel.PlayerId.TERMINAL
        if episode.spec.simultaneous:
            return pyspiel.PlayerId.SIMULTANEOUS
        return episode.actors[0]

    def _legal_actions(self, player: int) -> list[int]:
        return self.episode.legal(player)

    def _apply_action(self, action: int) -> None:
        episode = self.episode
        episode.step({episode.actors[0]: action})

    def _apply_actions(self, actions: list[int]) -> None:
        episode = self.episode
        episode.step({p: actions[p] for p in episode.actors})

    def _action_to_string(self, player: int, action: int) -> str:
        spec = self.episode.spec
        return f"{spec.agents[player]}:{spec.starts[player] + action}"

    def is_terminal(self) -> bool:
        """Whether the env's episode is over (terminated or truncated)."""
        return self.episode.over

    def rewards(self) -> list[float]:
        """Each player's reward in the last step."""
        return list(self.episode.rewards)

    def returns(self) -> list[float]:
        """Each player's rewards summed since the start."""
        return list(self.episode.returns)

    def __str__(self) -> str:
        env = self.episode.env
        try:
            text = env.render()
        except Exception:  # render is optional; fall back to the observations
            text = None
        return text if isinstance(text, str) else repr(self.episode.obs)


class HubObserver:
    """The player's last observation, flattened (PyObserver interface)."""

    def __init__(self, spec: GameSpec) -> None:
        self.spec = spec
        if spec.tensor_size is None:
            self.tensor = None
            self.dict: dict[str, np.ndarray] = {}
        else:
            self.tensor = np.zeros(spec.tensor_size, np.float32)
            self.dict = {"observation": self.tensor}

    def set_from(self, state: HubState, player: int) -> None:
        """Write ``player``'s last observation into ``tensor`` (zeros before its first)."""
        if self.tensor is None:
            return
        self.tensor.fill(0)
        agent = self.spec.agents[player]
        obs = state.episode.last_obs.get(agent)
        if obs is None:
            return
        space = self.spec.obs_spaces[player]
        flat = np.asarray(gym.spaces.flatten(inner_space(space), inner_obs(space, obs)),
                          np.float32)
        self.tensor[: flat.size] = flat

    def string_from(self, state: HubState, player: int) -> str:
        """``player``'s last observation as text."""
        obs = state.episode.last_obs.get(self.spec.agents[player])
        return "" if obs is None else str(obs)
