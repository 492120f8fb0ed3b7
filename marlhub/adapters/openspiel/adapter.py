"""OpenSpiel -> hub: any ``pyspiel`` game played as a dict-based multi-agent env.

See :class:`OpenSpielEnv` for the semantics; :func:`marlhub.adapters.openspiel.from_openspiel`
is the usual way in.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np

from marlhub.adapters.openspiel.actions import (
    ILLEGAL_ACTION_MODES,
    ActionChecks,
    check_options,
    make_ids,
)
from marlhub.adapters.openspiel.games import (
    describe_game,
    game_and_start,
    game_string,
    load_game,
    seed_parameter,
)
from marlhub.adapters.openspiel.observation import Observer
from marlhub.core import (
    ALL,
    COMMON,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.errors import EnvContractError

__all__ = ["ILLEGAL_ACTION_MODES", "OpenSpielEnv"]

_DEFAULT_PENALTY = {"substitute": -0.1, "terminate": -1.0}

_CHANCE = -1
_SIMULTANEOUS = -2
_TERMINAL = -4

#: Rebuilt from the game when unpickled or copied (pyspiel observers support neither).
_REBUILT = frozenset({"observer", "_read", "_mask"})
_SHARED = frozenset({"game", "source_game", "_obs_space", "_action_space",  # deep copies share
                     "observation_spaces", "action_spaces"})


class OpenSpielEnv(ActionChecks, MultiAgentEnv):
    """An OpenSpiel game as a hub env (also RLlib's ``OpenSpielEnv``, import-compatible).

    Every player is an agent for the whole episode. Chance nodes are resolved
    with the env's seeded ``np_random``, so ``reset(seed=s)`` and the same actions
    replay the same episode. At a sequential node the player to move is the one
    actor; at a simultaneous node every player with a legal action acts, and the
    joint action is applied with ``apply_actions``. Each step's reward is the
    change in ``state.returns()`` since it was last reported, so each agent's
    rewards sum to the game's returns, whatever the game's reward model. At the
    end every agent gets its final observation and reward.

    Constructed directly, the layout is RLlib's (integer agent ids, the bare
    observation, the mask in ``infos[agent]["action_mask"]``);
    :func:`~marlhub.adapters.openspiel.from_openspiel` gives the hub layout
    (``player_0``..., ``Dict(observation=..., action_mask=...)``). Unlike RLlib's
    wrapper, rewards are per-step (not the cumulative returns every step), the
    seed is honoured and illegal actions raise.

    Args:
        env: a ``pyspiel.Game``, a game name or string (``"leduc_poker"``,
            ``"kuhn_poker(players=3)"``), or a ``pyspiel.State`` to start every
            episode from (a clone of it).
        params: game parameters (with a name or string; they override the string's).
        observation: ``"auto"`` (observation tensor, else information state
            tensor, else a string), ``"observation_tensor"``,
            ``"information_state_tensor"``, ``"string"``, ``"observation_string"``
            or ``"information_state_string"``.
        agent_ids: ``"int"`` (0..n-1, RLlib's), ``"names"`` (``player_0``...; for a
            game made by ``to_openspiel``, the original env's agent ids) or a
            sequence of n ids.
        action_mask: ``"info"`` puts the legal-action mask in the agent's infos;
            ``"obs"`` makes each observation ``{"observation": ..., "action_mask": ...}``.
        max_steps: truncate the episode after this many ``step`` calls (every
            call counts; chance nodes do not). None: play to the game's end.
        illegal_action: what a legal-looking but masked-out action does:
            ``"raise"`` an :class:`~marlhub.errors.ActionError` listing the legal
            actions (state unchanged); ``"substitute"`` a random legal action and
            add ``illegal_reward`` to the agent's reward (RLlib's wrapper); or
            ``"terminate"`` the episode, the offender getting ``illegal_reward``
            (PettingZoo's ``TerminateIllegalWrapper``). With penalties, summed
            rewards no longer equal the game's returns.
        illegal_reward: the penalty; defaults to -0.1 (substitute) or -1.0 (terminate).

    Raises:
        ConfigError: a mean-field game, a terminal start state, or a bad option.
        UnknownEnvError: an unknown game name.

    Example:
        >>> env = OpenSpielEnv("tic_tac_toe")
        >>> obs, infos = env.reset(seed=0)
        >>> list(obs), obs[0].shape, int(infos[0]["action_mask"].sum())
        ([0], (27,), 9)
        >>> obs, rewards, terminateds, truncateds, infos = env.step({0: 4})
        >>> list(obs), rewards, terminateds[ALL]
        ([1], {0: 0.0, 1: 0.0}, False)
    """

    #: ``(player, agent id, mask)`` of the one player to move at a sequential node, which
    #: :meth:`step`'s fast path reads; None elsewhere (and in pickles made before it).
    _turn: Optional[tuple[int, Any, np.ndarray]] = None

    def __init__(
        self,
        env: Any,
        *,
        params: Optional[Mapping[str, Any]] = None,
        observation: str = "auto",
        agent_ids: Union[str, Sequence[Any]] = "int",
        action_mask: str = "info",
        max_steps: Optional[int] = None,
        illegal_action: str = "raise",
        illegal_reward: Optional[float] = None,
    ) -> None:
        super().__init__()
        game, self._start = game_and_start(env, params)
        check_options(game, action_mask, max_steps, illegal_action)
        #: The game as given (``to_openspiel`` hands it back); ``game`` may be a reseeded copy.
        self.source_game = game
        self.game = game
        self._bind_game(observation)
        self.max_steps = max_steps
        self.illegal_action = illegal_action
        self.illegal_reward = (
            float(illegal_reward) if illegal_reward is not None
            else _DEFAULT_PENALTY.get(illegal_action, 0.0)
        )
        self.mask_in_obs = action_mask == "obs"
        self.num_players = game.num_players()
        self.num_actions = game.num_distinct_actions()
        self._ids: list[Any] = make_ids(game, agent_ids, self.num_players)
        self._player_of = {aid: p for p, aid in enumerate(self._ids)}
        self.possible_agents = list(self._ids)
        self.agents = []
        self._build_spaces()
        self._seed_param = seed_parameter(game)
        self._simultaneous_node = False
        self._zero_mask = np.zeros(self.num_actions, np.int8)
        self._zero_rewards = dict.fromkeys(self._ids, 0.0)
        #: The done dicts of an episode's end, copied for each (not rebuilt).
        self._done_flags = {value: {**dict.fromkeys(self._ids, value), ALL: value}
                            for value in (True, False)}
        self._state: Any = None
        self._actors: tuple[int, ...] = ()
        self._masks: dict[int, np.ndarray] = {}
        self._reported = [0.0] * self.num_players
        self._steps = 0
        self._over = True
        self.metadata = {"render_modes": ["ansi", "human"]}

    def _bind_game(self, observation: str) -> None:
        """Set up what reads the game: the observer and the mask functions (never copied)."""
        self.observer = Observer(self.game, observation)
        self._read = self.observer.read
        self.observation_kind = self.observer.kind
        self._observation_option = self.observer.option  # rebuilds the same observer
        # C++ games keep their legal actions within num_distinct_actions(); Python
        # games are checked.
        self._native_masks = not hasattr(self.game, "make_py_observer")
        self._mask = self._native_mask if self._native_masks else self._checked_mask

    def _build_spaces(self) -> None:
        self._action_space = gym.spaces.Discrete(self.num_actions)
        mask_space = gym.spaces.Box(0, 1, (self.num_actions,), np.int8)
        if self.mask_in_obs:
            self._obs_space: gym.Space = gym.spaces.Dict(
                {"observation": self.observer.space, "action_mask": mask_space}
            )
        else:
            self._obs_space = self.observer.space
        self.observation_spaces = {aid: self._obs_space for aid in self._ids}
        self.action_spaces = {aid: self._action_space for aid in self._ids}

    # -- the live game -----------------------------------------------------------

    @property
    def state(self) -> Any:
        """The live ``pyspiel.State`` (None before the first reset); do not mutate it."""
        return self._state

    @property
    def start_state(self) -> Optional[Any]:
        """The state every episode starts from, when the env was made from one (else None)."""
        return self._start

    @property
    def actors(self) -> list[Any]:
        """The agents expected in the next action dict."""
        return [self._ids[p] for p in self._actors]

    def agent_id(self, player: int) -> Any:
        """Return the agent id of OpenSpiel player ``player``."""
        return self._ids[player]

    def player(self, agent_id: Any) -> int:
        """Return the OpenSpiel player number of ``agent_id``."""
        return self._player_of[agent_id]

    # -- the episode -------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Start a new episode; return the observations and infos of the first actors.

        Args:
            seed: seeds ``np_random``, which draws every chance outcome.
            options: unused (accepted for the protocol).
        """
        if seed is not None:
            # The base class only seeds np_random; without a seed it does nothing.
            super().reset(seed=seed, options=options)
            if self._seed_param is not None:
                # The seed itself, so that a game made by to_openspiel resets its env with it.
                self.game = load_game(self.source_game,
                                      {self._seed_param: int(seed) % (2**31 - 1)})
        elif self._np_random is None and self._seed_param is not None:
            # Never seeded: a game that samples from its own generator would start from its
            # default seed in every run; reset(seed=None) draws one from the OS instead.
            self.game = load_game(self.source_game, {
                self._seed_param: int(self.np_random.integers(2**31 - 1))})
        if self._start is not None:
            state = self._state = self._start.clone()
        else:
            state = self._state = self.game.new_initial_state()
        self._reported = [0.0] * self.num_players
        self._steps = 0
        self._over = False
        self._turn = None  # set by _observe_actors below
        if self._np_random is None:
            self.np_random  # made at the first reset, unseeded, so that copies share its draws
        current = state.current_player()
        if current == _CHANCE:
            self._resolve_chance()
            current = state.current_player()
        if current == _TERMINAL:
            self._over = True
            raise EnvContractError(
                game_string(self.game), "turn.actors_exist",
                "the game ended at chance nodes before any player could act, and reset() "
                "cannot report an episode's end",
            )
        self.agents = list(self._ids)
        return self._observe_actors(current)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply one action per actor; return obs, rewards, terminateds, truncateds, infos.

        Raises:
            ResetNeededError: before ``reset`` or after the episode ended.
            ActionError: a missing or foreign agent, an action outside ``Discrete(n)``,
                or (with ``illegal_action="raise"``) a masked-out action; the state
                is left as it was.
        """
        turn = self._turn
        if turn is not None and type(action_dict) is dict and len(action_dict) == 1:
            # The fast path of a turn-based game: a plain legal int for the one player to move.
            action = action_dict.get(turn[1])
            if type(action) is int and 0 <= action < self.num_actions and turn[2][action]:
                self._state.apply_action(action)
                return self._after_actions(None)
        return self._step_checked(action_dict)

    def _after_actions(self, offenders: Optional[dict[int, int]]) -> StepResult:
        """Resolve chance, count the step, and build the step's five dicts."""
        state = self._state
        current = state.current_player()
        if current == _CHANCE:
            self._resolve_chance()
            current = state.current_player()
        self._steps += 1
        truncated = self.max_steps is not None and self._steps >= self.max_steps
        returns = state.returns()
        infos: dict[Any, Any]
        if type(returns) is list and returns == self._reported and not offenders:
            rewards, infos = self._zero_rewards.copy(), {}  # the usual step: no reward
        else:
            rewards, infos = self._rewards(returns, offenders)
        if current == _TERMINAL or truncated:
            obs = self._observe_all(infos)
            terminated = current == _TERMINAL
            return obs, rewards, self._flags(terminated), self._flags(not terminated), infos
        obs, actor_infos = self._observe_actors(current)
        if infos:
            actor_infos.update(infos)
        return obs, rewards, {ALL: False}, {ALL: False}, actor_infos

    def _rewards(self, returns: Any, offenders: Optional[dict[int, int]]
                 ) -> tuple[MultiAgentDict, MultiAgentDict]:
        """The step's rewards (the change in ``returns``, and penalties) and common infos."""
        if type(returns) is not list:  # Python games may return arrays
            returns = [float(r) for r in returns]
        reported = self._reported
        ids = self._ids
        rewards = {}
        for p, value in enumerate(returns):
            # Report what makes the consumer's running sum equal the returns.
            delta = value - reported[p]
            reported[p] += delta
            rewards[ids[p]] = delta
        if not offenders:
            return rewards, {}
        for p in offenders:
            rewards[ids[p]] += self.illegal_reward
        return rewards, {COMMON: {"illegal_actions": {ids[p]: a for p, a in offenders.items()}}}

    def _flags(self, value: bool) -> dict[Any, bool]:
        return self._done_flags[value].copy()

    def _resolve_chance(self) -> None:
        state = self._state
        rng = self._np_random or self.np_random  # the property creates one if unseeded
        while state.is_chance_node():
            outcomes = state.chance_outcomes()
            if len(outcomes) == 1:
                state.apply_action(outcomes[0][0])
                continue
            u = rng.random()
            total = 0.0
            for action, prob in outcomes:
                total += prob
                if u < total:
                    break
            # Falls through to the last outcome when rounding leaves total < 1.
            state.apply_action(action)

    def _observe_actors(self, current: int) -> tuple[MultiAgentDict, MultiAgentDict]:
        state = self._state
        if current >= 0:
            # The usual case, kept short: one player to move. In a C++ game it has a legal
            # action (OpenSpiel's rule): the mask, a writable int8 array over a bytearray, is
            # cheaper than np.array(list, np.int8).
            mask = (np.frombuffer(bytearray(state.legal_actions_mask(current)), np.int8)
                    if self._native_masks else self._checked_mask(current))
            if mask is not None:
                aid = self._ids[current]
                self._actors = (current,)
                self._masks = {current: mask}
                self._turn = (current, aid, mask)
                self._simultaneous_node = False
                if self.mask_in_obs:
                    ob = {"observation": self._read(state, current), "action_mask": mask}
                    return {aid: ob}, {}
                return {aid: self._read(state, current)}, {aid: {"action_mask": mask}}
            players: tuple[int, ...] = ()
            masks: dict[int, np.ndarray] = {}
        elif current == _SIMULTANEOUS:
            masks = {}
            for p in range(self.num_players):
                mask = self._mask(p)
                if mask is not None:
                    masks[p] = mask
            players = tuple(masks)
        else:
            players, masks = (), {}
        if not players:
            raise EnvContractError(
                game_string(self.game), "turn.actors_exist",
                f"no player has a legal action in a non-terminal state (current_player "
                f"{current})",
            )
        self._actors = players
        self._masks = masks
        self._turn = None
        self._simultaneous_node = current == _SIMULTANEOUS
        obs: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        read = self._read
        for p in players:
            aid = self._ids[p]
            if self.mask_in_obs:
                obs[aid] = {"observation": read(state, p), "action_mask": masks[p]}
            else:
                obs[aid] = read(state, p)
                infos[aid] = {"action_mask": masks[p]}
        return obs, infos

    def _observe_all(self, infos: MultiAgentDict) -> MultiAgentDict:
        """Final observations of every player; the episode is over after this."""
        self._over = True
        self._actors = ()
        self._turn = None
        self.agents = []
        state = self._state
        obs: MultiAgentDict = {}
        read, zero = self._read, self._zero_mask
        if state.is_terminal() and self.mask_in_obs:  # the usual end, kept short
            for p, aid in enumerate(self._ids):
                obs[aid] = {"observation": read(state, p), "action_mask": zero.copy()}
            return obs
        terminal = state.is_terminal()
        for p, aid in enumerate(self._ids):
            # The state's legal actions: none at a terminal state, the real ones when
            # truncated (the observation describes the state, not the episode's end).
            mask = None if terminal else self._mask(p)
            if mask is None:
                mask = zero.copy()
            if self.mask_in_obs:
                obs[aid] = {"observation": read(state, p), "action_mask": mask}
            else:
                obs[aid] = read(state, p)
                infos[aid] = {"action_mask": mask}
        return obs

    # -- the rest of the protocol -----------------------------------------------

    def render(self) -> Any:
        """Return the state as text (``str(state)``), or None before reset."""
        return None if self._state is None else str(self._state)

    def close(self) -> None:
        """Drop the state."""
        self._state = None
        self._over = True
        self._turn = None

    def get_observation_space(self, agent_id: Any) -> gym.Space:
        """Return the observation space (the same object for every agent)."""
        self._player_of[agent_id]  # a KeyError for a foreign id, like a dict lookup
        return self._obs_space

    def get_action_space(self, agent_id: Any) -> gym.Space:
        """Return ``Discrete(num_distinct_actions)`` (the same object for every agent)."""
        self._player_of[agent_id]
        return self._action_space

    def describe(self) -> str:
        """Return one line about the game: dynamics, players, chance, information."""
        return describe_game(self.game)

    # -- copies and pickles (pyspiel pickles games as strings, states as their history)

    def __getstate__(self) -> dict[str, Any]:
        """Return what pickles: every attribute but the observer and the mask functions."""
        return {k: v for k, v in self.__dict__.items() if k not in _REBUILT}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled env: its attributes, then an observer of its game."""
        self.__dict__.update(state)
        self._bind_game(self._observation_option)

    def __deepcopy__(self, memo: dict[int, Any]) -> "OpenSpielEnv":
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__getstate__().items():
            if key in ("_state", "_start"):
                value = None if value is None else value.clone()
            elif key not in _SHARED:
                value = copy.deepcopy(value, memo)
            clone.__dict__[key] = value
        clone._bind_game(self._observation_option)
        return clone

    def __repr__(self) -> str:
        return f"<OpenSpielEnv {game_string(self.game)} agents={self.possible_agents!r}>"

    __str__ = __repr__
