"""The pyspiel State and observer of a hub env's game (see :mod:`~marlhub.adapters.openspiel.view`).

* :class:`GameSpec`: what every state of one game shares (the env factory, the
  players, their action ranges, the observation layout);
* :class:`HubEpisode`: one hub env and its episode, as a state sees it;
  a deep copy of it is a :func:`~marlhub.adapters.openspiel.view_copy.snapshot`;
* :class:`EpisodeSlot`: a state's episode, built on first use;
* :class:`HubState`: the ``pyspiel.State`` over a slot; ``clone()`` copies the episode;
* :class:`HubObserver`: the player's last observation: flattened as a tensor
  (numeric spaces only), and as text.

A state's identity is its history: ``str(state)`` is every player's last
observation and the actions so far, so states reached by the same actions
print alike and states reached by different ones do not.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.openspiel.games import import_pyspiel
from marlhub.adapters.openspiel.view_copy import snapshot
from marlhub.core import ALL
from marlhub.errors import EnvContractError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask

__all__ = ["EpisodeSlot", "GameSpec", "HubEpisode", "HubObserver", "HubState", "PASS", "describe",
           "flat_size"]

# Any, not ModuleType: this module subclasses pyspiel.State (an untyped extension module).
pyspiel: Any = import_pyspiel("to_openspiel")

#: Spaces gymnasium flattens into numbers (Text flattens into character indices, which
#: OpenSpiel's tensors are not for, and fails on characters outside its charset).
_NUMERIC = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def inner_space(space: gym.Space) -> gym.Space:
    """The observation part of a ``Dict(observation=..., action_mask=...)`` space."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces \
            and "observation" in space.spaces:
        return space["observation"]
    return space


def inner_obs(space: gym.Space, obs: Any) -> Any:
    """The observation part of ``obs`` (see :func:`inner_space`)."""
    if space is not inner_space(space):
        return obs["observation"]
    return obs


def _numeric(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Dict):
        return all(_numeric(s) for s in space.spaces.values())
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.OneOf)):
        return all(_numeric(s) for s in space.spaces)
    return isinstance(space, _NUMERIC)


def flat_size(space: gym.Space) -> Optional[int]:
    """The observation tensor's size, or None when the observation is not numbers (text).

    Example:
        >>> flat_size(gym.spaces.Dict({"observation": gym.spaces.Discrete(3),
        ...                            "action_mask": gym.spaces.MultiBinary(3)}))
        3
        >>> flat_size(gym.spaces.Text(20)) is None
        True
    """
    space = inner_space(space)
    if not _numeric(space):
        return None
    return int(gym.spaces.flatdim(space))


#: The one legal action, ignored, of a player that does not act at a simultaneous node.
PASS = 0

#: Arrays longer than this are described by a digest of their bytes, not their values.
_LISTED = 256


def describe(value: Any) -> str:
    """Return ``value`` as text that tells any two values apart (no numpy summarising).

    Arrays are listed in full up to 256 values; longer ones (a chess board's
    planes) are named by shape, dtype and a digest of their bytes.

    Example:
        >>> describe({"observation": np.zeros(3, np.float32), "turn": "x"})
        "{'observation': [0.0, 0.0, 0.0], 'turn': 'x'}"
        >>> describe(np.zeros((8, 8, 111), np.float32))[:40]
        'array(shape=(8, 8, 111), dtype=float32, '
        >>> describe("a board\\nx.o")
        'a board\\nx.o'
    """
    if isinstance(value, str):
        return value
    return _nested(value)


def _nested(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.size <= _LISTED or value.dtype.hasobject:
            return repr(value.tolist())
        digest = hashlib.blake2b(np.ascontiguousarray(value).data, digest_size=16).hexdigest()
        return f"array(shape={value.shape}, dtype={value.dtype}, blake2b={digest})"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_nested(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inside = ", ".join(_nested(v) for v in value)
        return f"[{inside}]" if isinstance(value, list) else f"({inside})"
    return repr(value)


class GameSpec:
    """What every state and observer of one registered game shares (never copied)."""

    def __init__(self, make: Callable[[], Any], agents: list[Any], starts: list[int],
                 sizes: list[int], simultaneous: bool, obs_spaces: list[gym.Space],
                 tensor_size: Optional[int], label: str, max_length: int = 10_000) -> None:
        self.make = make
        #: The game's declared MaxGameLength: an episode still running then is cut there.
        self.max_length = max_length
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
    """The mutable part of a state, in one object so that one copy clones it consistently."""

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
        self.moves = 0
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
            # At a simultaneous node every player moves in OpenSpiel, and its agents
            # (RandomAgent, the rl_agent most tutorials start with) need an action to
            # pick: a player that does not act in the env gets PASS, which is ignored.
            return [PASS] if self.spec.simultaneous and not self.over else []
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
        self.moves += 1
        # An env whose episodes have no bound ends at the game's declared length, as
        # OpenSpiel requires of its games (truncated: the returns are as they stand).
        self.over = (bool(terminateds.get(ALL, False) or truncateds.get(ALL, False))
                     or self.moves >= spec.max_length)
        self._take(obs, infos, terminateds, truncateds)

    def render_text(self) -> Optional[str]:
        """The env's text rendering, when it renders text (``render_mode="ansi"``), else None."""
        if getattr(self.env, "render_mode", None) != "ansi":
            return None  # other modes draw windows or arrays: not for a state's string
        text = self.env.render()
        return text if isinstance(text, str) else None

    def __deepcopy__(self, memo: dict[int, Any]) -> "HubEpisode":
        # Spaces never change: share them instead of copying them on every clone().
        env = self.env
        spaces = list(self.spec.obs_spaces)
        for attr in ("action_spaces", "observation_spaces"):
            spaces += list((getattr(env, attr, None) or {}).values())
        clone = HubEpisode.__new__(HubEpisode)
        memo[id(self)] = clone
        clone.__dict__.update(snapshot(self.__dict__, shared=spaces))
        return clone


class EpisodeSlot:
    """A state's episode, built on first use, so that new states cost nothing until played.

    OpenSpiel builds a throwaway new state whenever it needs the size of an
    observation tensor (every ``observation_tensor()`` call); the observer only
    *peeks* at a new state, which reads the game's upcoming first episode
    without taking a seed. Anything else *owns* it: the state takes the seed
    (the game's seed, then seed + 1, ...) and the env. A state's seed is fixed
    by the first look, and a clone of a new state gets the same seed.
    """

    def __init__(self, game: Any) -> None:
        self.game = game
        self.seed: Optional[int] = None
        self.episode: Optional[HubEpisode] = None

    def own(self) -> HubEpisode:
        """The state's episode, claimed from the game on first use."""
        if self.episode is None:
            self.episode = self.game.claim(self.seed)
            self.seed = self.episode.seed
        return self.episode

    def peek(self) -> HubEpisode:
        """The state's episode, or the game's upcoming one when it is that (read only)."""
        if self.episode is not None:
            return self.episode
        if self.seed is None or self.seed == self.game.next_seed:
            upcoming: HubEpisode = self.game.upcoming()
            self.seed = upcoming.seed
            return upcoming
        return self.own()

    def __deepcopy__(self, memo: dict[int, Any]) -> "EpisodeSlot":
        clone = EpisodeSlot(self.game)
        if self.episode is None:
            if self.seed is None:
                self.seed = self.game.next_seed
        else:
            clone.episode = copy.deepcopy(self.episode, memo)
        clone.seed = self.seed
        return clone


class HubState(pyspiel.State):
    """An OpenSpiel state holding a hub env; the env is built on first use.

    OpenSpiel's ``clone()`` makes a new initial state and deep-copies the
    attributes into it: the one attribute is the :class:`EpisodeSlot`.
    """

    def __init__(self, game: Any) -> None:
        super().__init__(game)
        # Only the slot is an attribute: clone() deep-copies every attribute.
        self._slot = EpisodeSlot(game)

    @property
    def episode(self) -> HubEpisode:
        """The env and what it returned last."""
        return self._slot.own()

    def peek(self) -> HubEpisode:
        """The episode as it reads, without claiming a new state's seed (see :class:`EpisodeSlot`)."""
        return self._slot.peek()

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
        """The env's text rendering (if any), every player's last observation, the actions so far."""
        episode = self.episode
        lines = []
        text = episode.render_text()
        if text:
            lines.append(text.rstrip("\n"))
        for agent in episode.spec.agents:
            if agent in episode.last_obs:
                lines.append(f"{agent}: {describe(episode.last_obs[agent])}")
        lines.append("history: " + " ".join(map(str, self.history())))
        return "\n".join(lines)


class HubObserver:
    """The player's last observation: flattened as ``tensor``, and as text (PyObserver interface).

    Observations that are not numbers (text) give no tensor, only strings.
    """

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
        obs = state.peek().last_obs.get(agent)
        if obs is None:
            return
        space = self.spec.obs_spaces[player]
        flat = np.asarray(gym.spaces.flatten(inner_space(space), inner_obs(space, obs)),
                          np.float32)
        self.tensor[: flat.size] = flat

    def string_from(self, state: HubState, player: int) -> str:
        """``player``'s last observation as text (the text itself for text observations)."""
        obs = state.peek().last_obs.get(self.spec.agents[player])
        if obs is None:
            return ""
        return describe(inner_obs(self.spec.obs_spaces[player], obs))
