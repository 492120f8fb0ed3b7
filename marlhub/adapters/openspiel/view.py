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
  ``clone()`` copies the env (:func:`~marlhub.adapters.openspiel.view_copy.snapshot`:
  a deep copy that keeps PettingZoo's and Gymnasium's envs live, in C where it can);
* an observer whose tensor is the player's last observation, flattened (none for
  text observations), and whose string is that observation; no information
  state (perfect recall) observer: algorithms that need one (CFR) are refused.

This module imports pyspiel when it is imported; the public
:func:`marlhub.adapters.openspiel.to_openspiel` imports it on first call.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Optional, cast

import gymnasium as gym

from marlhub.adapters.apis import to_hub
from marlhub.adapters.openspiel.games import import_pyspiel
from marlhub.adapters.openspiel.view_copy import require_copies, snapshot
from marlhub.adapters.openspiel.view_state import (
    GameSpec,
    HubEpisode,
    HubObserver,
    HubState,
    flat_size,
)
from marlhub.context import EnvContext, make_from_id
from marlhub.episode.play import RandomEpisode, episode_seed
from marlhub.errors import ConfigError, EnvRegistrationError
from marlhub.rewards import require_scalar_rewards

__all__ = ["to_openspiel"]

# Any, not ModuleType: this module subclasses pyspiel.Game and pyspiel.State, which mypy cannot
# see through a ModuleType (pyspiel is an untyped extension module).
pyspiel: Any = import_pyspiel("to_openspiel")

#: Short names this process registered through to_openspiel (re-registering them is fine).
_OURS: dict[str, Any] = {}

_NO_INFORMATION_STATE = (
    "an information state (perfect recall) was asked for, but a hub env made into an OpenSpiel "
    "game has none: the env keeps its chance and hidden state inside, and OpenSpiel sees only "
    "each player's last observation, so CFR and other algorithms over information states "
    "cannot run on it"
)
_NO_INFORMATION_STATE_FIX = (
    "Run them on a native OpenSpiel game (to_openspiel of an OpenSpielEnv, or of a factory or "
    "registry id that makes one, hands its game back); on other hub envs use algorithms that "
    "need observations only, such as open_spiel.python.algorithms.mcts."
)


def _creator_of(env_or_creator: Any) -> Callable[[], Any]:
    """A zero-argument callable returning a fresh hub env."""
    if isinstance(env_or_creator, str):
        env_id = env_or_creator
        return lambda: make_from_id(env_id)
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
            return lambda: to_hub(factory(EnvContext()))
        return lambda: to_hub(factory())
    template = to_hub(env_or_creator)
    return lambda: snapshot(template)


class _Probe:
    """What a few seeded random episodes show about an env."""

    def __init__(self, make: Callable[[], Any], episodes: int, seed: int, max_steps: int) -> None:
        self.max_actors = 1
        self.intermediate_rewards = False
        self.zero_sum = True
        paid = False  # evidence: an episode where some agent's return was not 0
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
            paid = paid or any(abs(total) > 1e-9 for total in totals.values())
        # Episodes where nobody was paid (sparse rewards) say nothing about the sum: a game
        # is zero-sum only where returns were paid and summed to 0 every time.
        self.zero_sum = self.zero_sum and paid
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
    game is returned and nothing is registered; so is one that a factory or a
    registry id makes (``to_openspiel("openspiel/kuhn_poker")`` is ``kuhn_poker``,
    with its information states, so CFR runs on it).

    Args:
        env_or_creator: a hub env (each new state starts from a deep copy of
            it), an env class or factory (called with no argument, or with an
            empty ``EnvContext`` when it needs one), an env of another
            supported API, or a registry id.
        short_name: the OpenSpiel name; default ``marlhub_<class name>``. A name
            OpenSpiel already has for another game is refused. Unused (like the
            other options) when an OpenSpiel game is handed back.
        long_name: the display name; default the class name.
        dynamics: ``"sequential"`` (one actor per step; the state's
            ``current_player()`` is its player), ``"simultaneous"`` (every
            decision node is simultaneous; a player that does not act in the env
            there has one legal action, ``PASS`` (0), which the env never sees),
            or ``"auto"``: simultaneous when a probe episode has a step with
            several actors.
        reward_model: ``"rewards"``, ``"terminal"`` (what ``open_spiel``'s MCTS
            requires; ``returns()`` still sums every reward), or ``"auto"``:
            terminal unless a probe episode rewards before its last step.
        zero_sum: declare the game zero-sum; None: when the probe's returns sum to 0
            (and some agent's return was not 0: episodes that pay nobody say nothing).
        utility_range: ``(min_utility, max_utility)`` of the GameInfo.
        max_game_length: the GameInfo's bound; default the env's ``max_steps``
            when it is an int (the length the source declares: a built-in env's
            ``max_steps``, PettingZoo's ``max_cycles`` in hub steps, a Gymnasium
            spec's ``max_episode_steps``, VMAS's ``max_steps``), else 10000. An
            episode still running then ends there (as truncated: the returns stand
            as they are), so the game keeps the bound it declares.
        probe_episodes: random episodes played to probe the env (0: none; then
            ``dynamics`` and ``reward_model`` must be given).
        seed: the seed of the probe and the default of the game's ``seed`` parameter.

    Returns:
        The loaded ``pyspiel.Game``.

    Raises:
        ConfigError: an action space that is not Discrete, or a bad option.
        UncopyableEnvError: (a ConfigError) an env whose copies in an episode start
            over (OpenSpiel clones states): state kept outside Python.
        EnvRegistrationError: ``short_name`` belongs to another OpenSpiel game.
        VectorRewardError: the env pays vector rewards (OpenSpiel's returns are one
            number per player); scalarize them first (``ScalarizeRewards``).
    """
    from marlhub.adapters.openspiel.adapter import OpenSpielEnv

    if isinstance(env_or_creator, OpenSpielEnv):
        return env_or_creator.source_game
    make = _creator_of(env_or_creator)
    env = make()
    if isinstance(env, OpenSpielEnv):  # a factory or an id of an OpenSpiel game
        return env.source_game
    require_scalar_rewards(env, "to_openspiel", needs="OpenSpiel's returns and rewards are one "
                           "number per player")
    label = type(env).__name__
    name = short_name or "marlhub_" + re.sub(r"(?<!^)(?=[A-Z])", "_", label).lower()
    _check_name(name)
    for option, value, allowed in (("dynamics", dynamics, ("auto", "sequential", "simultaneous")),
                                   ("reward_model", reward_model, ("auto", "rewards", "terminal"))):
        if value not in allowed:
            raise ConfigError(name, f"{option}={value!r} is not one of {allowed}",
                              fix=f"Pass {option} as one of {', '.join(map(repr, allowed))}.")
    agents = list(env.possible_agents)
    starts, sizes = _discrete_actions(name, env, agents)
    obs_sizes = [flat_size(env.get_observation_space(a)) for a in agents]
    tensor_size = (max(cast("list[int]", obs_sizes)) if all(s is not None for s in obs_sizes)
                   else None)
    require_copies(name, env, seed)
    probe = None
    if probe_episodes > 0 and ("auto" in (dynamics, reward_model) or zero_sum is None):
        probe = _Probe(make, probe_episodes, seed, max_steps=10_000)
    dynamics, reward_model, zero_sum = _decide(name, probe, dynamics, reward_model, zero_sum)
    declared_steps = getattr(env, "max_steps", None)
    length = max_game_length or (declared_steps if isinstance(declared_steps, int) else 10_000)
    game_type = _game_type(name, long_name or label, dynamics, reward_model, zero_sum,
                           len(agents), tensor_size is not None, seed)
    game_info = pyspiel.GameInfo(
        num_distinct_actions=max(sizes),
        max_chance_outcomes=0,
        num_players=len(agents),
        min_utility=float(utility_range[0]),
        max_utility=float(utility_range[1]),
        utility_sum=0.0 if zero_sum else None,
        max_game_length=int(length),
    )
    spec = GameSpec(make, agents, starts, sizes, dynamics == "simultaneous",
                    [env.get_observation_space(a) for a in agents], tensor_size, label,
                    max_length=int(length))
    pyspiel.register_game(game_type, _game_class(name, game_type, game_info, spec, seed))
    return pyspiel.load_game(name)


def _discrete_actions(name: str, env: Any, agents: list[Any]) -> tuple[list[int], list[int]]:
    """Return each agent's Discrete ``start`` and ``n``; other spaces raise ConfigError."""
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
    return starts, sizes


def _decide(name: str, probe: Optional[_Probe], dynamics: str, reward_model: str,
            zero_sum: Optional[bool]) -> tuple[str, str, bool]:
    """Resolve the ``"auto"`` options (and ``zero_sum=None``) from what the probe saw."""
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
    return dynamics, reward_model, zero_sum


def _game_type(name: str, long_name: str, dynamics: str, reward_model: str, zero_sum: bool,
               players: int, has_tensor: bool, seed: int) -> Any:
    T = pyspiel.GameType
    return T(
        short_name=name,
        long_name=long_name,
        dynamics=T.Dynamics.SIMULTANEOUS if dynamics == "simultaneous" else T.Dynamics.SEQUENTIAL,
        chance_mode=T.ChanceMode.SAMPLED_STOCHASTIC,
        information=T.Information.IMPERFECT_INFORMATION,
        utility=T.Utility.ZERO_SUM if zero_sum else T.Utility.GENERAL_SUM,
        reward_model=(T.RewardModel.TERMINAL if reward_model == "terminal"
                      else T.RewardModel.REWARDS),
        max_num_players=players,
        min_num_players=players,
        provides_information_state_string=False,
        provides_information_state_tensor=False,
        provides_observation_string=True,
        provides_observation_tensor=has_tensor,
        provides_factored_observation_string=False,
        parameter_specification={"seed": int(seed)},
    )


def _game_class(name: str, game_type: Any, game_info: Any, spec: "GameSpec", seed: int) -> type:
    """Return the ``pyspiel.Game`` subclass registered under ``name``."""

    class HubGame(pyspiel.Game):
        """A marlhub env as an OpenSpiel game (made by marlhub.adapters.openspiel.to_openspiel)."""

        def __init__(self, params: Optional[Mapping[str, Any]] = None) -> None:
            params = dict(params or {})
            super().__init__(game_type, game_info, params)
            self.spec = spec
            self._next_seed = int(params.get("seed", seed))
            self._upcoming: Optional[HubEpisode] = None

        def new_initial_state(self) -> "HubState":
            """Return a state whose env is built and reset on first use."""
            return HubState(self)

        @property
        def next_seed(self) -> int:
            """The reset seed of the next new episode: the game's seed, then seed + 1, ..."""
            return self._next_seed

        def draw_seed(self) -> int:
            """Take the next reset seed."""
            self._next_seed += 1
            self._upcoming = None
            return self._next_seed - 1

        def upcoming(self) -> "HubEpisode":
            """The next new episode, built once and kept until a state claims it (read only)."""
            if self._upcoming is None:
                self._upcoming = HubEpisode(spec, self._next_seed)
            return self._upcoming

        def claim(self, seed: Optional[int] = None) -> "HubEpisode":
            """A new episode for a state to own: the upcoming one, or one reset with ``seed``."""
            if seed is None or seed == self._next_seed:
                episode = self._upcoming or HubEpisode(spec, self._next_seed)
                self.draw_seed()
                return episode
            return HubEpisode(spec, seed)

        def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> "HubObserver":
            """Return an observer of the players' last observations (no perfect recall)."""
            if iig_obs_type is not None and iig_obs_type.perfect_recall:
                raise ConfigError(name, _NO_INFORMATION_STATE, fix=_NO_INFORMATION_STATE_FIX)
            return HubObserver(spec)

    HubGame.__name__ = HubGame.__qualname__ = f"HubGame_{name}"
    _OURS[name] = HubGame
    return HubGame


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
