"""Multi-player dm_env -> hub: :class:`DmEnvHubEnv`, one ``TimeStep`` of lists as per-agent dicts.

A multi-player dm_env (dm_control's soccer: ``dm_control.locomotion.soccer.load``) has
``observation_spec()`` and ``action_spec()`` lists with one entry per player, takes a
list of actions in ``step`` and returns one ``TimeStep`` whose observation, reward (and
possibly discount) are lists in the same order. The hub env reads player ``i`` as agent
``player_i`` (Shimmy's names in ``DmControlMultiAgentCompatibilityV0``); every player
acts in every step.

Example:
    >>> from dm_control.locomotion import soccer
    >>> env = DmEnvHubEnv(soccer.load(team_size=1, time_limit=0.1))
    >>> env.possible_agents, env.get_action_space("player_0")
    (['player_0', 'player_1'], Box(-1.0, 1.0, (3,), float64))
    >>> obs, infos = env.reset(seed=0)
    >>> still = {agent: np.zeros(3) for agent in obs}
    >>> for _ in range(4):
    ...     obs, rewards, terminateds, truncateds, infos = env.step(still)
    >>> rewards, truncateds["__all__"], infos["player_0"]   # the time limit: discount 1
    ({'player_0': 0.0, 'player_1': 0.0}, True, {'discount': 1.0})
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from typing import Any, Callable, Optional, Union

import numpy as np

from marlhub.adapters.dm_env.seeding import Reseed, reseeder
from marlhub.adapters.dm_env.specs import SOURCE, convert_spec
from marlhub.backends import derives_from
from marlhub.contract.rules import DONE_ALL_PRESENT, ENV_COPYABLE, REWARD_SCALAR
from marlhub.core import ALL, AgentID, MultiAgentDict, MultiAgentEnv, ResetResult, StepResult
from marlhub.episode.actions import ActionChecker
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import ConfigError, EnvContractError

__all__ = ["DmEnvHubEnv"]

#: dm_control's composer envs (soccer), which neither deep-copy (MJCF elements with
#: attachments) nor pickle (weak references to the physics).
_UNCOPYABLE = {("dm_control.composer.environment", "_CommonEnvironment")}
#: Attributes rebuilt from the specs when unpickled or copied (closures do not pickle).
_REBUILT = frozenset({"_observations", "_actions", "observation_spaces", "action_spaces",
                      "_checker"})


class DmEnvHubEnv(MultiAgentEnv):
    """A multi-player dm_env ``Environment`` as a hub env; every player acts in every step.

    * **Agents**: ``player_0`` .. ``player_{n-1}`` in the order of the spec lists (or
      the ``agent_ids`` given); all of them act in every step and end together.
    * **Spaces**: from each player's specs (:mod:`marlhub.adapters.dm_env.specs`):
      ``BoundedArray`` -> ``Box``, ``DiscreteArray`` -> ``Discrete``, ``Array`` ->
      ``Box`` over the dtype's range, a dict of specs -> ``Dict`` (dm_control's
      observations).
    * **Rewards**: the ``TimeStep``'s list, one float per player; one number (a reward
      the players share) is every player's; ``None`` (dm_env's reward of a ``FIRST``
      step) is 0.0.
    * **Ends**: a ``LAST`` step ends the episode. Following dm_env, a player whose
      discount is 0 is terminated, one whose discount is above 0 (a time limit) is
      truncated; the discount is one number or one per player. ``__all__``
      terminated when every player is, else truncated. Each step's ``infos[agent]``
      holds the player's ``discount``.
    * **Seeds**: ``reset(seed=s)`` re-seeds the env's own random state in place
      before dm_env's ``reset()`` (see :mod:`marlhub.adapters.dm_env.seeding`);
      ``reset()`` without a seed draws on from where the env is.
    * **Copies**: dm_control's composer envs (soccer) can be neither deep-copied nor
      pickled; copying the hub env over one raises
      :class:`~marlhub.errors.EnvContractError` saying so.

    Args:
        env: a ``dm_env.Environment`` whose ``observation_spec()`` and
            ``action_spec()`` are lists (or tuples) with one entry per player.
        agent_ids: one id per player (default ``player_0`` ...).
        reseed: ``"auto"`` (the env's ``random_state``, or ``task.random``),
            ``None`` (the env takes no seed: a seed passed to reset is ignored), or
            ``reseed(env, seed)``.

    Raises:
        ConfigError: the env is not multi-player, its specs have no gymnasium space,
            or a bad option.
    """

    def __init__(self, env: Any, *, agent_ids: Optional[Sequence[AgentID]] = None,
                 reseed: Union[str, Callable[[Any, int], None], None] = "auto") -> None:
        super().__init__()
        self.dm_env = env
        action_specs, observation_specs = _player_specs(env)
        self.possible_agents = _agent_ids(agent_ids, len(action_specs))
        self.agents = []
        self._bind()
        self._reseed: Reseed = reseeder(env, reseed)
        self._name = f"{type(self).__name__}({type(env).__name__})"
        self._cannot_step: Optional[str] = NOT_RESET
        self._closed = False

    def _bind(self) -> None:
        """Convert the specs: spaces, and the conversions of values (rebuilt, never pickled)."""
        action_specs, observation_specs = _player_specs(self.dm_env)
        self._observations = [convert_spec(s, f"observation_spec()[{i}]")
                              for i, s in enumerate(observation_specs)]
        self._actions = [convert_spec(s, f"action_spec()[{i}]") for i, s in enumerate(action_specs)]
        self.observation_spaces = {a: c.space for a, c in zip(self.possible_agents,
                                                              self._observations)}
        self.action_spaces = {a: c.space for a, c in zip(self.possible_agents, self._actions)}
        self._checker = ActionChecker(self.action_spaces.__getitem__)

    @property
    def num_players(self) -> int:
        """The number of players (the length of the spec lists)."""
        return len(self.possible_agents)

    def reseed(self, env: Any, seed: int) -> None:
        """Seed ``env`` (this env's native one, or a twin of it) as ``reset(seed=seed)`` does."""
        self._reseed(env, seed)

    # -- the episode ---------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Re-seed the env's random state with ``seed`` (if given), then dm_env's ``reset()``.

        Args:
            seed: seeds the native env's own random state (and ``np_random``).
            options: unused (accepted for the protocol).

        Raises:
            EnvContractError: the env's ``reset()`` returned no ``FIRST`` step.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._reseed(self.dm_env, seed)
        timestep = self.dm_env.reset()
        if not timestep.first():
            raise EnvContractError(self._name, "reset.returns_dicts", "its reset() returned a "
                                   f"{timestep.step_type} step, where dm_env returns FIRST")
        self._closed = False
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return self._read(timestep.observation), {}

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply every player's action in one dm_env ``step``.

        Raises:
            ResetNeededError: before ``reset()``, after the episode's ``LAST`` step, or
                after ``close()``.
            ActionError: a missing or foreign agent, or an action outside its space;
                nothing was applied.
        """
        require_running(self._name, self._cannot_step)
        agents = self.possible_agents
        checked = self._checker.check_dict(self._name, action_dict, actors=agents,
                                           possible_agents=agents)
        timestep = self.dm_env.step([c.write(checked[a]) for a, c in zip(agents, self._actions)])
        if timestep.first():
            raise EnvContractError(self._name, DONE_ALL_PRESENT, "its step() started a new "
                                   "episode (a FIRST step) where the episode had not ended")
        rewards = dict(zip(agents, self._rewards(timestep.reward)))
        discounts = self._discounts(timestep.discount, timestep.last())
        infos = {a: {"discount": d} for a, d in zip(agents, discounts)}
        obs = self._read(timestep.observation)
        if not timestep.last():
            flags = dict.fromkeys(agents, False)
            return obs, rewards, {**flags, ALL: False}, {**flags, ALL: False}, infos
        self.agents = []
        self._cannot_step = EPISODE_OVER
        terminateds: dict[Any, bool] = {a: d == 0.0 for a, d in zip(agents, discounts)}
        truncateds: dict[Any, bool] = {a: not ended for a, ended in terminateds.items()}
        terminateds[ALL] = all(terminateds.values())
        truncateds[ALL] = not terminateds[ALL]
        return obs, rewards, terminateds, truncateds, infos

    def render(self) -> Any:
        """Render nothing (dm_control draws with ``env.physics.render()``, given OpenGL)."""
        return None

    def close(self) -> None:
        """Close the native env once; ``step`` then asks for a reset."""
        if not self._closed:
            self._closed = True
            self.agents = []
            self._cannot_step = EPISODE_OVER
            self.dm_env.close()

    # -- the TimeStep's values ------------------------------------------------------

    def _read(self, observation: Any) -> MultiAgentDict:
        values = self._per_player(observation, "observation")
        return {a: c.read(v) for a, c, v in zip(self.possible_agents, self._observations, values)}

    def _per_player(self, values: Any, what: str) -> Sequence[Any]:
        if not isinstance(values, (list, tuple)) or len(values) != self.num_players:
            raise EnvContractError(self._name, "obs.in_space", f"its TimeStep's {what} is "
                                   f"{_short(values)}, where a list of {self.num_players} (one "
                                   "per player, as its specs say) was expected")
        return values

    def _rewards(self, reward: Any) -> list[float]:
        if reward is None:
            return [0.0] * self.num_players
        if isinstance(reward, (list, tuple)) or np.ndim(reward) == 1:
            return [self._scalar(r, "reward", REWARD_SCALAR)
                    for r in self._per_player(list(reward), "reward")]
        return [self._scalar(reward, "reward", REWARD_SCALAR)] * self.num_players

    def _discounts(self, discount: Any, last: bool) -> list[float]:
        if discount is None:
            if not last:
                return [1.0] * self.num_players
            raise EnvContractError(self._name, DONE_ALL_PRESENT, "its LAST step has no discount, "
                                   "which says whether the episode terminated (0) or was cut (>0)")
        if isinstance(discount, (list, tuple)) or np.ndim(discount) == 1:
            return [self._scalar(d, "discount", DONE_ALL_PRESENT)
                    for d in self._per_player(list(discount), "discount")]
        return [self._scalar(discount, "discount", DONE_ALL_PRESENT)] * self.num_players

    def _scalar(self, value: Any, what: str, rule: str) -> float:
        if value is None and what == "reward":
            return 0.0
        if np.size(value) != 1 or isinstance(value, (str, bytes)):
            raise EnvContractError(self._name, rule, f"its {what} {_short(value)} is not one "
                                   "number per player")
        return float(np.asarray(value).reshape(()))

    # -- copies ------------------------------------------------------------------------

    def __deepcopy__(self, memo: dict[int, Any]) -> "DmEnvHubEnv":
        self._refuse_copy("copy.deepcopy")
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        clone.__setstate__(copy.deepcopy(self.__getstate__(), memo))
        return clone

    def __getstate__(self) -> dict[str, Any]:
        """Return the attributes to pickle; refused for dm_control's envs, which cannot be."""
        self._refuse_copy("pickle")
        return {k: v for k, v in self.__dict__.items() if k not in _REBUILT}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled env: its attributes, then the conversions of its specs."""
        self.__dict__.update(state)
        self._bind()

    def _refuse_copy(self, how: str) -> None:
        if derives_from(self.dm_env, _UNCOPYABLE):
            raise EnvContractError(
                self._name, ENV_COPYABLE,
                f"{how} of a dm_control env is not possible: dm_control's own env neither "
                "deep-copies (NotImplementedError: Cannot copy from elements with attachments) "
                "nor pickles (a weak reference to its physics); make a new env instead "
                "(marlhub.make(id, config)) and reset it with the seed")

    def __repr__(self) -> str:
        return f"<DmEnvHubEnv {type(self.dm_env).__name__} agents={self.possible_agents!r}>"


def _player_specs(env: Any) -> tuple[Sequence[Any], Sequence[Any]]:
    """``(action specs, observation specs)``, one per player, or a clear refusal."""
    missing = [m for m in ("action_spec", "observation_spec", "reset", "step")
               if not callable(getattr(env, m, None))]
    if missing:
        raise ConfigError(
            SOURCE, f"{type(env).__name__} is no dm_env.Environment (it lacks {missing})",
            fix="Pass a dm_env (dm_control's soccer.load(...)); a PettingZoo env, Shimmy's "
            "wrappers included, goes through marlhub.convert or from_pettingzoo.")
    actions, observations = env.action_spec(), env.observation_spec()
    if not isinstance(actions, (list, tuple)):
        raise ConfigError(
            SOURCE, f"{type(env).__name__}'s action_spec() is {_short(actions)}, not a list "
            "with one spec per player: this is a single-agent dm_env",
            fix="from_dm_env takes multi-player dm_envs (dm_control's soccer). For a single "
            "agent, wrap the env with Shimmy (shimmy.DmControlCompatibilityV0, a Gymnasium "
            "env) and use marlhub.adapters.gymnasium.from_gymnasium.")
    if not actions:
        raise ConfigError(SOURCE, f"{type(env).__name__}'s action_spec() is an empty list",
                          fix="Give an env with at least one player.")
    if not isinstance(observations, (list, tuple)) or len(observations) != len(actions):
        raise ConfigError(
            SOURCE, f"{type(env).__name__}'s action_spec() lists {len(actions)} players but its "
            f"observation_spec() is {_short(observations)}",
            fix="Both specs must be lists with one entry per player, in the same order.")
    return actions, observations


def _agent_ids(agent_ids: Optional[Sequence[AgentID]], players: int) -> list[AgentID]:
    if agent_ids is None:
        return [f"player_{i}" for i in range(players)]
    if isinstance(agent_ids, (str, bytes)) or not isinstance(agent_ids, Sequence):
        raise ConfigError(SOURCE, f"agent_ids must be a sequence of {players} ids, got "
                          f"{agent_ids!r}", fix="Pass a list such as ['home_0', 'away_0'].")
    ids = list(agent_ids)
    if len(ids) != players or len(set(map(_hashable, ids))) != players:
        raise ConfigError(SOURCE, f"agent_ids must name each of the {players} players once, got "
                          f"{ids!r}", fix=f"Pass {players} distinct ids, in the players' order.")
    return ids


def _hashable(agent: Any) -> Any:
    if not isinstance(agent, Hashable) or agent == ALL:
        raise ConfigError(SOURCE, f"agent id {agent!r} is unhashable or reserved",
                          fix="Use strings or ints other than '__all__'.")
    return agent


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."

