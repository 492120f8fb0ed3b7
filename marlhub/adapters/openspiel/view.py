"""hub -> OpenSpiel: any hub env registered as a pyspiel Python game.

See :func:`to_openspiel`. The pieces:

* a ``pyspiel.GameType`` and ``GameInfo`` derived from the env, probed with a
  few seeded random episodes for what it does not declare (dynamics, reward
  model, zero-sum);
* a ``pyspiel.Game`` subclass whose ``new_initial_state`` builds and resets a
  fresh env (seeded from the game's ``seed`` parameter);
* a ``pyspiel.State`` subclass holding that env: players are
  ``possible_agents`` in order, legal actions come from the action mask when
  there is one, rewards are accumulated into ``returns()``, and OpenSpiel's
  ``clone()`` deep-copies the env (one ``deepcopy``, so its parts stay shared
  as they were);
* an observer whose tensor is the player's last observation, flattened.

This module imports pyspiel when it is imported; the public
:func:`marlhub.adapters.openspiel.to_openspiel` imports it on first call.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.adapters.openspiel.games import import_pyspiel
from marlhub.core import ALL
from marlhub.episode.play import RandomEpisode, episode_seed
from marlhub.errors import ConfigError, EnvContractError, EnvRegistrationError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask

__all__ = ["to_openspiel"]

# Any, not ModuleType: this module subclasses pyspiel.Game and pyspiel.State, which mypy cannot
# see through a ModuleType (pyspiel is an untyped extension module).
pyspiel: Any = import_pyspiel("to_openspiel")

#: Short names this process registered through to_openspiel (re-registering them is fine).
_OURS: dict[str, Any] = {}


def _creator_of(env_or_creator: Any) -> Callable[[], Any]:
    """A zero-argument callable returning a fresh hub env."""
    from marlhub.adapters import to_hub

    if isinstance(env_or_creator, str):
        import marlhub

        env_id = env_or_creator
        return lambda: marlhub.make(env_id)
    if isinstance(env_or_creator, type) or (
        callable(env_or_creator) and not hasattr(env_or_creator, "step")
    ):
        factory = env_or_creator
        try:
            takes_config = any(
                p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in inspect.signature(factory).parameters.values()
            )
        except (TypeError, ValueError):
            takes_config = False
        if takes_config:
            from marlhub.registry import EnvContext

            return lambda: to_hub(factory(EnvContext()))
        return lambda: to_hub(factory())
    template = to_hub(env_or_creator)
    return lambda: copy.deepcopy(template)


def _inner_space(space: gym.Space) -> gym.Space:
    """The observation part of a ``Dict(observation=..., action_mask=...)`` space."""
    if isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces \
            and "observation" in space.spaces:
        return space["observation"]
    return space


def _inner_obs(space: gym.Space, obs: Any) -> Any:
    if space is not _inner_space(space):
        return obs["observation"]
    return obs


def _flat_size(space: gym.Space) -> Optional[int]:
    try:
        return int(gym.spaces.flatdim(_inner_space(space)))
    except Exception:  # Text and other spaces gymnasium cannot flatten
        return None


class _Probe:
    """What a few seeded random episodes show about an env."""

    def __init__(self, make: Callable[[], Any], episodes: int, seed: int, max_steps: int) -> None:
        self.max_actors = 1
        self.intermediate_rewards = False
        self.zero_sum = True
        self.longest = 0
        env = make()
        for episode in range(episodes):
            totals: dict[Any, float] = {}
            for step in RandomEpisode(env, episode_seed(seed, episode), max_steps=max_steps):
                self.max_actors = max(self.max_actors, len(step.actors))
                for agent, reward in step.rewards.items():
                    totals[agent] = totals.get(agent, 0.0) + float(reward)
                    if reward and not step.over:
                        self.intermediate_rewards = True
                if step.over:
                    self.longest = max(self.longest, step.index)
            if abs(sum(totals.values())) > 1e-9:
                self.zero_sum = False
        close = getattr(env, "close", None)
        if callable(close):
            close()


def to_openspiel(
    env_or_creator: Any,
    short_name: Optional[str] = None,
    *,
    long_name: Optional[str] = None,
    dynamics: str = "auto",
    reward_model: str = "auto",
    zero_sum: Optional[bool] = None,
    utility_range: tuple[float, float] = (-math.inf, math.inf),
    max_game_length: Optional[int] = None,
    probe_episodes: int = 5,
    seed: int = 0,
) -> Any:
    """Register a hub env as a pyspiel Python game and return the game.

    Afterwards ``pyspiel.load_game(short_name)`` (and ``short_name(seed=3)``) works,
    and OpenSpiel's Python algorithms (``open_spiel.python.algorithms.mcts``,
    ``rl_environment``, ...) play the env. pyspiel's C++ ``MCTSBot`` crashes on
    Python games; use the Python one.

    An :class:`~marlhub.adapters.openspiel.OpenSpielEnv` is unwrapped: its own
    game is returned and nothing is registered.

    Args:
        env_or_creator: a hub env (each new state starts from a deep copy of
            it), an env class or factory (called with no argument, or with an
            empty ``EnvContext`` when it needs one), an env of another
            supported API, or a registry id.
        short_name: the OpenSpiel name; default ``marlhub_<class name>``. A name
            OpenSpiel already has for another game is refused.
        long_name: the display name; default the class name.
        dynamics: ``"sequential"`` (one actor per step; the state's
            ``current_player()`` is its player), ``"simultaneous"`` (every
            decision node is simultaneous; players not acting have no legal
            action), or ``"auto"``: simultaneous when a probe episode has a step
            with several actors.
        reward_model: ``"rewards"``, ``"terminal"`` (what ``open_spiel``'s MCTS
            requires; ``returns()`` still sums every reward), or ``"auto"``:
            terminal unless a probe episode rewards before its last step.
        zero_sum: declare the game zero-sum; None: when the probe's returns sum to 0.
        utility_range: ``(min_utility, max_utility)`` of the GameInfo.
        max_game_length: the GameInfo's bound; default the env's ``max_steps``
            attribute when it is an int, else 10000.
        probe_episodes: random episodes played to probe the env (0: none; then
            ``dynamics`` and ``reward_model`` must be given).
        seed: the seed of the probe and the default of the game's ``seed`` parameter.

    Returns:
        The loaded ``pyspiel.Game``.

    Raises:
        ConfigError: an action space that is not Discrete, or a bad option.
        EnvRegistrationError: ``short_name`` belongs to another OpenSpiel game.
    """
    from marlhub.adapters.openspiel.adapter import OpenSpielEnv

    if isinstance(env_or_creator, OpenSpielEnv):
        return env_or_creator.source_game
    make = _creator_of(env_or_creator)
    env = make()
    label = type(env).__name__
    name = short_name or "marlhub_" + re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower()
    _check_name(name)
    for option, value, allowed in (("dynamics", dynamics, ("auto", "sequential", "simultaneous")),
                                   ("reward_model", reward_model, ("auto", "rewards", "terminal"))):
        if value not in allowed:
            raise ConfigError(name, f"{option}={value!r} is not one of {allowed}",
                              fix=f"Pass {option} as one of {', '.join(map(repr, allowed))}.")
    agents = list(env.possible_agents)
    starts, sizes = [], []
    for agent in agents:
        space = env.get_action_space(agent)
        if not isinstance(space, gym.spaces.Discrete):
            raise ConfigError(
                name, f"agent {agent!r} has the action space {space}, but OpenSpiel games have "
                "integer actions",
                fix="Only envs whose every agent acts in a Discrete space can become OpenSpiel "
                "games; wrap the env to discretize its actions first.",
            )
        starts.append(int(space.start))
        sizes.append(int(space.n))
    obs_sizes = [_flat_size(env.get_observation_space(a)) for a in agents]
    tensor_size = (max(cast("list[int]", obs_sizes)) if all(s is not None for s in obs_sizes)
                   else None)
    probe = None
    if probe_episodes > 0 and ("auto" in (dynamics, reward_model) or zero_sum is None):
        probe = _Probe(make, probe_episodes, seed, max_steps=10_000)
    if dynamics == "auto":
        if probe is None:
            raise ConfigError(name, "dynamics='auto' needs probe_episodes > 0",
                              fix="Pass dynamics='sequential' or 'simultaneous'.")
        dynamics = "simultaneous" if probe.max_actors > 1 else "sequential"
    if reward_model == "auto":
        if probe is None:
            raise ConfigError(name, "reward_model='auto' needs probe_episodes > 0",
                              fix="Pass reward_model='rewards' or 'terminal'.")
        reward_model = "rewards" if probe.intermediate_rewards else "terminal"
    if zero_sum is None:
        zero_sum = bool(probe and probe.zero_sum)
    declared_steps = getattr(env, "max_steps", None)
    length = max_game_length or (declared_steps if isinstance(declared_steps, int) else 10_000)
    T = pyspiel.GameType
    game_type = T(
        short_name=name,
        long_name=long_name or label,
        dynamics=T.Dynamics.SIMULTANEOUS if dynamics == "simultaneous" else T.Dynamics.SEQUENTIAL,
        chance_mode=T.ChanceMode.SAMPLED_STOCHASTIC,
        information=T.Information.IMPERFECT_INFORMATION,
        utility=T.Utility.ZERO_SUM if zero_sum else T.Utility.GENERAL_SUM,
        reward_model=(T.RewardModel.TERMINAL if reward_model == "terminal"
                      else T.RewardModel.REWARDS),
        max_num_players=len(agents),
        min_num_players=len(agents),
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=tensor_size is not None,
        provides_factored_observation_string=False,
        parameter_specification={"seed": int(seed)},
    )
    game_info = pyspiel.GameInfo(
        num_distinct_actions=max(sizes),
        max_chance_outcomes=0,
        num_players=len(agents),
        min_utility=float(utility_range[0]),
        max_utility=float(utility_range[1]),
        utility_sum=0.0 if zero_sum else None,
        max_game_length=int(length),
    )
    spec = _Spec(make, agents, starts, sizes, dynamics == "simultaneous",
                 [env.get_observation_space(a) for a in agents], tensor_size, label)

    class HubGame(pyspiel.Game):
        """A marlhub env as an OpenSpiel game (made by marlhub.adapters.openspiel.to_openspiel)."""

        def __init__(self, params: Optional[Mapping[str, Any]] = None) -> None:
            params = dict(params or {})
            super().__init__(game_type, game_info, params)
            self.spec = spec
            self._next_seed = int(params.get("seed", seed))

        def new_initial_state(self) -> "_HubState":
            """Return a state whose env is built and reset on first use."""
            return _HubState(self)

        def draw_seed(self) -> int:
            """The reset seed of the next new episode: the game's seed, then seed + 1, ..."""
            self._next_seed += 1
            return self._next_seed - 1

        def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "_Observer":
            """Return an observer of the players' last observations (no perfect recall)."""
            if iig_obs_type is not None and iig_obs_type.perfect_recall:
                raise ValueError(f"{name} has no information state (perfect recall) observer")
            return _Observer(spec)

    HubGame.__name__ = HubGame.__qualname__ = f"HubGame_{name}"
    pyspiel.register_game(game_type, HubGame)
    _OURS[name] = HubGame
    return pyspiel.load_game(name)


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise EnvRegistrationError(name, "an OpenSpiel short name is letters, digits and "
                                   "underscores, not starting with a digit",
                                   "Pass short_name='my_game'.")
    if name in pyspiel.registered_names() and name not in _OURS:
        raise EnvRegistrationError(
            name, "OpenSpiel already has a game of that name",
            "Pass another short_name (to_openspiel never replaces OpenSpiel's own games).",
        )


class _Spec:
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

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Spec":
        return self


class _Episode:
    """The mutable part of a state, in one object so that one deepcopy clones it consistently."""

    def __init__(self, spec: _Spec, seed: int) -> None:
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

    def __deepcopy__(self, memo: dict[int, Any]) -> "_Episode":
        # Spaces never change: share them instead of copying them on every clone().
        env = self.env
        spaces = list(self.spec.obs_spaces)
        for attr in ("action_spaces", "observation_spaces"):
            spaces += list((getattr(env, attr, None) or {}).values())
        for space in spaces:
            memo[id(space)] = space
        clone = _Episode.__new__(_Episode)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            setattr(clone, key, copy.deepcopy(value, memo))
        return clone


class _HubState(pyspiel.State):
    """An OpenSpiel state holding a hub env; the env is built on first use.

    OpenSpiel's ``clone()`` makes a new initial state and deep-copies the
    attributes into it, so building the env lazily keeps clones cheap and
    keeps the game's seed sequence for real new episodes.
    """

    def __init__(self, game: Any) -> None:
        super().__init__(game)
        # Only the episode is an attribute: clone() deep-copies every attribute.
        self._episode: Optional[_Episode] = None

    @property
    def episode(self) -> _Episode:
        """The env and what it returned last."""
        if self._episode is None:
            game = self.get_game()
            self._episode = _Episode(game.spec, game.draw_seed())
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


class _Observer:
    """The player's last observation, flattened (PyObserver interface)."""

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec
        if spec.tensor_size is None:
            self.tensor = None
            self.dict: dict[str, np.ndarray] = {}
        else:
            self.tensor = np.zeros(spec.tensor_size, np.float32)
            self.dict = {"observation": self.tensor}

    def set_from(self, state: _HubState, player: int) -> None:
        """Write ``player``'s last observation into ``tensor`` (zeros before its first)."""
        if self.tensor is None:
            return
        self.tensor.fill(0)
        agent = self.spec.agents[player]
        obs = state.episode.last_obs.get(agent)
        if obs is None:
            return
        space = self.spec.obs_spaces[player]
        flat = np.asarray(gym.spaces.flatten(_inner_space(space), _inner_obs(space, obs)),
                          np.float32)
        self.tensor[: flat.size] = flat

    def string_from(self, state: _HubState, player: int) -> str:
        """``player``'s last observation as text."""
        obs = state.episode.last_obs.get(self.spec.agents[player])
        return "" if obs is None else str(obs)
