"""Hub -> PettingZoo: :class:`HubAECEnv` and :class:`HubParallelEnv`.

The AEC view walks the actors of each hub observation dict one at a time,
buffers their actions and steps the hub env when the last one has acted.
``rewards``, ``_cumulative_rewards``, ``terminations``, ``truncations``, the
dead-agent ``step(None)`` and the shrinking ``agents`` list follow PettingZoo's
own conventions (``AECEnv._was_dead_step``, ``_deads_step_first``), so
PettingZoo's ``api_test`` and ``seed_test`` pass.

The parallel view needs every live agent to act in every step; a hub step
where only some do raises :class:`~marlhub.errors.NotParallelizableError`,
unless ``turn_based="pad"``: then idle agents get their last observation (a
zero-like one before their first), ``infos[a]["is_acting"]`` says who acts,
and the actions of every possible agent that does not act now are ignored (learners
with fixed agent slots, skrl's among them, send one for every possible agent).

This module imports PettingZoo (its classes are subclasses of PettingZoo's);
:mod:`marlhub.adapters.pettingzoo` imports it only when asked to convert.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> env = HubAECEnv(TicTacToe())
    >>> env.reset(seed=0)
    >>> env.agents, env.agent_selection in env.agents
    (['player1', 'player2'], True)
    >>> env.step(4)
    >>> env.rewards, env.terminations
    ({'player1': 0.0, 'player2': 0.0}, {'player1': False, 'player2': False})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Optional

import gymnasium as gym
from pettingzoo import AECEnv, ParallelEnv

from marlhub.adapters.pettingzoo.view_rewards import DeclaresRewardSpaces, VectorRewards, nonzero
from marlhub.core import ALL, COMMON, AgentID
from marlhub.display import view_html
from marlhub.episode.actions import check_action, check_keys
from marlhub.episode.status import NOT_RESET, require_running
from marlhub.errors import ActionError, EnvContractError, NotParallelizableError
from marlhub.spaces import masks_are_binding, raw_action_mask, zero_like
from marlhub.wrappers.base import global_state, global_state_space

__all__ = ["HubAECEnv", "HubParallelEnv", "numpy_obs", "zero_like"]

TurnBased = Literal["raise", "pad"]

_EPISODE_OVER = "the episode is over (every agent is done and was stepped with None)"
_PAR_EPISODE_OVER = "the episode is over (no agents are left)"


def _space_lookup(hub: Any, kind: str) -> Any:
    getter = getattr(hub, f"get_{kind}_space", None)
    if callable(getter):
        return getter
    spaces = getattr(hub, f"{kind}_spaces")
    return spaces.__getitem__


def _flags(agent: AgentID, terms: Mapping[Any, Any],
           truncs: Mapping[Any, Any]) -> tuple[bool, bool]:
    """Return (terminated, truncated) of ``agent``, ``__all__`` included; termination wins."""
    term = bool(terms.get(agent, False))
    trunc = bool(truncs.get(agent, False))
    if not (term or trunc):
        term = bool(terms.get(ALL, False))
        trunc = not term and bool(truncs.get(ALL, False))
    elif term:
        trunc = False
    return term, trunc


def _refuse_finished(name: str, finished: set[AgentID], obs: Mapping[AgentID, Any],
                     rewards: Mapping[AgentID, Any]) -> None:
    """Raise :class:`EnvContractError` if an agent done earlier gets an observation or a reward."""
    if not finished:
        return
    for agent in obs:
        if agent in finished:
            raise EnvContractError(
                name, "done.final",
                f"step() returned an observation for {agent!r}, which was done earlier in the "
                "episode",
            )
    for agent, reward in rewards.items():
        if agent in finished and nonzero(reward):
            raise EnvContractError(
                name, "done.final",
                f"step() gave the reward {reward!r} to {agent!r}, which was done earlier in the "
                "episode",
            )


def numpy_obs(space: gym.Space, obs: Any) -> Any:
    """Return ``obs`` with the plain ints of Discrete spaces as numpy scalars of the space's dtype.

    PettingZoo's ``api_test`` compares observation dtypes with the space's,
    which a plain ``int`` (valid in a hub env) does not have.

    Example:
        >>> numpy_obs(gym.spaces.Discrete(3), 2)
        np.int64(2)
    """
    if type(space) is gym.spaces.Discrete:
        return space.dtype.type(obs) if type(obs) in (int, bool) else obs
    if type(space) is gym.spaces.Dict and isinstance(obs, dict):
        subs = space.spaces
        return {k: numpy_obs(subs[k], v) if k in subs else v for k, v in obs.items()}
    return obs


class _HubFacade(DeclaresRewardSpaces):
    """What both PettingZoo views pass straight to the hub env they wrap."""

    #: The API the view speaks, for notebooks.
    speaks = "PettingZoo"

    def _repr_html_(self) -> str:
        """In a notebook: what the view converts, and the hub env's agents."""
        return view_html(self.speaks, self.hub_env)

    hub_env: Any
    metadata: dict[str, Any]
    possible_agents: list[AgentID]
    _obs_spaces: dict[AgentID, gym.Space]
    _act_spaces: dict[AgentID, gym.Space]
    _obs_space_of: Callable[[AgentID], gym.Space]
    _act_space_of: Callable[[AgentID], gym.Space]

    def observation_space(self, agent: AgentID) -> gym.Space:
        """Return the hub env's observation space of ``agent`` (the same object every call)."""
        space = self._obs_spaces.get(agent)
        if space is None:
            space = self._obs_spaces[agent] = self._obs_space_of(agent)
        return space

    def action_space(self, agent: AgentID) -> gym.Space:
        """Return the hub env's action space of ``agent`` (the same object every call)."""
        space = self._act_spaces.get(agent)
        if space is None:
            space = self._act_spaces[agent] = self._act_space_of(agent)
        return space

    @property
    def observation_spaces(self) -> dict[AgentID, gym.Space]:
        """Every possible agent's observation space: the dict PettingZoo's base classes declare."""
        return {agent: self.observation_space(agent) for agent in self.possible_agents}

    @property
    def action_spaces(self) -> dict[AgentID, gym.Space]:
        """Every possible agent's action space: the dict PettingZoo's base classes declare."""
        return {agent: self.action_space(agent) for agent in self.possible_agents}

    @property
    def state_space(self) -> gym.Space:
        """The hub env's ``state_space``, the space of :meth:`state`, where it has one.

        Raises:
            AttributeError: the hub env has none (so ``hasattr`` says False, as learners ask).
        """
        return global_state_space(self.hub_env)

    def _mask_of(self, obs: Any, info: Any) -> Any:
        """The agent's action mask, when the hub env's masks say what it accepts."""
        return raw_action_mask(obs, info) if masks_are_binding(self.hub_env) else None

    def render(self) -> Any:
        """Render the hub env."""
        return self.hub_env.render()

    def close(self) -> None:
        """Close the hub env."""
        self.hub_env.close()

    def state(self) -> Any:
        """Return the hub env's ``state()``, when it has one."""
        return global_state(self.hub_env)

    def __str__(self) -> str:
        return str(self.metadata.get("name"))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.hub_env!r}>"


class HubAECEnv(_HubFacade, AECEnv):
    """A hub env as a PettingZoo AEC env.

    Args:
        hub_env: any hub env (``MultiAgentEnv`` or an object following its protocol).
    """

    # from_pettingzoo() hands back ``hub_env`` instead of wrapping this view again.
    _marlhub_view_of_hub = True
    speaks = "PettingZoo AECEnv"

    def __init__(self, hub_env: Any) -> None:
        super().__init__()
        self.hub_env = hub_env
        self.possible_agents = list(hub_env.possible_agents)
        meta = dict(getattr(hub_env, "metadata", None) or {})
        meta.setdefault("name", type(hub_env).__name__)
        meta["is_parallelizable"] = False
        self.metadata = meta
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._obs_space_of = _space_lookup(hub_env, "observation")
        self._act_space_of = _space_lookup(hub_env, "action")
        self._obs_spaces: dict[AgentID, gym.Space] = {}
        self._act_spaces: dict[AgentID, gym.Space] = {}
        self._rewards = VectorRewards(hub_env)
        self._cannot_step: Optional[str] = NOT_RESET
        self._reset_state()

    def _reset_state(self) -> None:
        self.agents: list[AgentID] = []
        self.rewards: dict[AgentID, float] = {}
        self._cumulative_rewards: dict[AgentID, float] = {}
        self.terminations: dict[AgentID, bool] = {}
        self.truncations: dict[AgentID, bool] = {}
        self.infos: dict[AgentID, dict] = {}
        self.common_info: dict[str, Any] = {}
        self.agent_selection: AgentID = None
        self._last_obs: dict[AgentID, Any] = {}
        self._finished: set[AgentID] = set()
        self._cycle: list[AgentID] = []
        self._cycle_pos = 0
        self._actions: dict[AgentID, Any] = {}


    # -- the episode ---------------------------------------------------------------

    def reset(self, seed: Optional[int] = None, options: Optional[dict] = None) -> None:
        """Reset the hub env with ``seed`` and ``options``; select its first actor."""
        obs, infos = self.hub_env.reset(seed=seed, options=options)
        self._reset_state()
        infos = infos or {}
        self.common_info = dict(infos.get(COMMON, {}))
        for agent in [*getattr(self.hub_env, "agents", ()), *obs]:
            self._add_agent(agent)
        for agent in obs:
            self.infos[agent] = infos.get(agent, {})
        self._last_obs.update(obs)
        self._cannot_step = None
        self._start_cycle(obs)

    def _add_agent(self, agent: AgentID) -> None:
        if agent in self.terminations:
            return
        self.agents.append(agent)
        self.rewards[agent] = self._rewards.zero(agent)
        self._cumulative_rewards[agent] = self._rewards.zero(agent)
        self.terminations[agent] = False
        self.truncations[agent] = False
        self.infos[agent] = {}

    def _start_cycle(self, obs: Mapping[AgentID, Any]) -> None:
        self._cycle = [a for a in obs if not (self.terminations[a] or self.truncations[a])]
        self._cycle_pos = 0
        self._actions = {}
        self._select_next()

    def _select_next(self) -> None:
        """Select the first dead agent (PettingZoo's _deads_step_first), else the next actor."""
        for agent in self.agents:
            if self.terminations[agent] or self.truncations[agent]:
                self.agent_selection = agent
                return
        if self._cycle_pos < len(self._cycle):
            self.agent_selection = self._cycle[self._cycle_pos]
            return
        if self.agents:
            raise EnvContractError(
                type(self.hub_env).__name__, "turn.actors_exist",
                f"the episode is not over (agents {self.agents} are live) but no agent "
                "received an observation to act on",
            )
        self._cannot_step = _EPISODE_OVER

    def observe(self, agent: AgentID) -> Any:
        """Return the last observation the hub env gave ``agent``.

        An agent that is live (or done) without ever having been given one sees
        :func:`zero_like` of its space, as idle agents do in the padded parallel view.
        """
        obs = self._last_obs.get(agent)
        space = self.observation_space(agent)
        return zero_like(space) if obs is None else numpy_obs(space, obs)

    def step(self, action: Any) -> None:
        """Take the selected agent's action; step the hub env once every actor has acted.

        Raises:
            ResetNeededError: before ``reset()`` or once no agent is left.
            ActionError: an action outside the agent's space or mask, or not None for a
                dead agent; nothing was changed.
        """
        require_running(type(self).__name__, self._cannot_step)
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._dead_step(agent, action)
            return
        check_action(agent, self.action_space(agent), action,
                     self._mask_of(self._last_obs.get(agent), self.infos.get(agent)))
        if self._cycle_pos + 1 < len(self._cycle):
            self._actions[agent] = action
            self._cumulative_rewards[agent] = self._rewards.zero(agent)
            self._clear_rewards()
            self._cycle_pos += 1
            self.agent_selection = self._cycle[self._cycle_pos]
            return
        result = self.hub_env.step({**self._actions, agent: action})
        self._cumulative_rewards[agent] = self._rewards.zero(agent)
        self._apply(*result)

    def _clear_rewards(self) -> None:
        """Every agent's reward back to nothing: ``0``, or zeros of its reward space."""
        for agent in self.rewards:
            self.rewards[agent] = self._rewards.zero(agent)

    def _dead_step(self, agent: AgentID, action: Any) -> None:
        if action is not None:
            raise ActionError(
                agent, action, expected="None",
                fix=f"{agent!r} is done; PettingZoo steps done agents with None to remove them.",
            )
        del self.terminations[agent]
        del self.truncations[agent]
        del self.rewards[agent]
        del self._cumulative_rewards[agent]
        del self.infos[agent]
        self.agents.remove(agent)
        self._finished.add(agent)
        self._clear_rewards()
        self._select_next()

    def _apply(self, obs: Mapping[AgentID, Any], rewards: Mapping[AgentID, Any],
               terms: Mapping[Any, Any], truncs: Mapping[Any, Any],
               infos: Mapping[Any, Any]) -> None:
        _refuse_finished(type(self.hub_env).__name__, self._finished, obs, rewards)
        for agent in [*getattr(self.hub_env, "agents", ()), *obs, *rewards]:
            if agent not in self._finished:  # a sloppy `agents` may still list done agents
                self._add_agent(agent)
        infos = infos or {}
        self.common_info = dict(infos.get(COMMON, {}))
        vectors = self._rewards.spaces
        for agent in self.agents:
            reward = rewards.get(agent, 0.0)
            if vectors:  # arrays for the agents that declare a reward space
                reward = self._rewards.paid(agent, rewards.get(agent))
            elif type(reward) not in (int, float):
                reward = float(reward)
            self.rewards[agent] = reward
            # Not +=: an array handed out by last() must not change under its holder.
            self._cumulative_rewards[agent] = self._cumulative_rewards[agent] + reward
            term, trunc = _flags(agent, terms, truncs)
            self.terminations[agent] = term
            self.truncations[agent] = trunc
            self.infos[agent] = infos.get(agent, {})
        self._last_obs.update(obs)
        self._start_cycle(obs)



class HubParallelEnv(_HubFacade, ParallelEnv):
    """A hub env whose agents all act in every step, as a PettingZoo parallel env.

    Args:
        hub_env: any hub env.
        turn_based: ``"raise"`` (a step where only some live agents act raises
            :class:`NotParallelizableError`) or ``"pad"`` (idle agents get their
            last observation, ``infos[a]["is_acting"]`` False; the actions of agents
            that do not act now, idle, not come yet or done, are ignored).
    """

    _marlhub_view_of_hub = True
    speaks = "PettingZoo ParallelEnv"

    def __init__(self, hub_env: Any, turn_based: TurnBased = "raise") -> None:
        if turn_based not in ("raise", "pad"):
            raise ValueError(f"turn_based must be 'raise' or 'pad', got {turn_based!r}.")
        self.hub_env = hub_env
        self.turn_based = turn_based
        self.possible_agents = list(hub_env.possible_agents)
        meta = dict(getattr(hub_env, "metadata", None) or {})
        meta.setdefault("name", type(hub_env).__name__)
        self.metadata = meta
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._obs_space_of = _space_lookup(hub_env, "observation")
        self._act_space_of = _space_lookup(hub_env, "action")
        self._obs_spaces: dict[AgentID, gym.Space] = {}
        self._act_spaces: dict[AgentID, gym.Space] = {}
        self._rewards = VectorRewards(hub_env)
        self.agents: list[AgentID] = []
        self.common_info: dict[str, Any] = {}
        self._cannot_step: Optional[str] = NOT_RESET
        self._actors: list[AgentID] = []
        self._last_obs: dict[AgentID, Any] = {}
        self._last_infos: dict[AgentID, Any] = {}
        self._finished: set[AgentID] = set()

    def reset(self, seed: Optional[int] = None,
              options: Optional[dict] = None) -> tuple[dict[AgentID, Any], dict[AgentID, dict]]:
        """Reset the hub env with ``seed`` and ``options``; return every live agent's view.

        Raises:
            NotParallelizableError: only some live agents act first (``turn_based="raise"``).
        """
        obs, infos = self.hub_env.reset(seed=seed, options=options)
        self._last_obs = {}
        self._last_infos = {}
        self._finished = set()
        self.agents = []
        self._cannot_step = None
        live = list(dict.fromkeys([*getattr(self.hub_env, "agents", ()), *obs]))
        return self._view(obs, infos or {}, live)

    def _view(self, obs: Mapping[AgentID, Any], infos: Mapping[Any, Any],
              live: list[AgentID]) -> tuple[dict[AgentID, Any], dict[AgentID, dict]]:
        """Return the parallel obs and infos; pad idle agents or raise for a turn-based step."""
        self.common_info = dict(infos.get(COMMON, {}))
        actors = [a for a in obs if a not in self._finished]
        out_obs = {a: numpy_obs(self.observation_space(a), o) for a, o in obs.items()}
        out_infos = {a: infos.get(a, {}) for a in obs}
        self._last_obs.update(obs)
        self._last_infos = {a: infos.get(a, {}) for a in obs}
        self._actors = actors
        self.agents = live
        if not live:
            self._cannot_step = _PAR_EPISODE_OVER
        if len(actors) != len(live) or set(actors) != set(live):
            if self.turn_based == "raise":
                self._cannot_step = "a step was turn-based, which raised NotParallelizableError"
                raise NotParallelizableError(actors, live)
            for agent in live:
                acting = agent in obs
                if not acting:
                    last = self._last_obs.get(agent)
                    space = self.observation_space(agent)
                    out_obs[agent] = zero_like(space) if last is None else numpy_obs(space, last)
                out_infos[agent] = {**infos.get(agent, {}), "is_acting": acting}
        return out_obs, out_infos

    def step(self, actions: Mapping[AgentID, Any]) -> tuple[dict, dict, dict, dict, dict]:
        """Step the hub env with the actors' actions.

        Raises:
            ResetNeededError: before ``reset()``, once no agent is left, or after a
                turn-based step raised.
            ActionError: an actor without an action, an action for an agent that is not
                live (taken and ignored with ``turn_based="pad"``), or an action outside its
                space or mask; nothing was applied.
            NotParallelizableError: the hub env's next step is turn-based
                (``turn_based="raise"``); the hub step itself was applied.
        """
        require_running(type(self).__name__, self._cannot_step)
        actors = self._actors
        name = type(self.hub_env).__name__
        if not isinstance(actions, Mapping):
            check_keys(name, actions, actors=actors, possible_agents=self.possible_agents)
        # With turn_based="pad", the actions of every possible agent that does not act now
        # (idle, not come yet, or done) are ignored, as learners with fixed agent slots send
        # them (skrl); without it, only the actors' actions are taken.
        ignored = (set(self.agents) - set(actors) if self.turn_based == "raise"
                   else set(self.possible_agents) - set(actors))
        relevant = {a: v for a, v in actions.items() if a not in ignored}
        if len(relevant) != len(actors) or any(a not in relevant for a in actors):
            check_keys(name, relevant, actors=actors, possible_agents=self.possible_agents,
                       finished=self._finished)
        for agent in actors:
            check_action(agent, self.action_space(agent), actions[agent],
                         self._mask_of(self._last_obs.get(agent), self._last_infos.get(agent)))
        obs, rewards, terms, truncs, infos = self.hub_env.step(relevant)
        _refuse_finished(name, self._finished, obs, rewards)
        candidates = [
            a for a in dict.fromkeys(
                [*self.agents, *getattr(self.hub_env, "agents", ()), *obs, *rewards])
            if a not in self._finished
        ]
        out_terms: dict[AgentID, bool] = {}
        out_truncs: dict[AgentID, bool] = {}
        live = []
        for agent in candidates:
            term, trunc = _flags(agent, terms, truncs)
            out_terms[agent] = term
            out_truncs[agent] = trunc
            if term or trunc:
                self._finished.add(agent)
            else:
                live.append(agent)
        out_rewards = {a: rewards[a] if a in rewards else self._rewards.zero(a)
                       for a in candidates}
        out_obs, out_infos = self._view(obs, infos or {}, live)
        return out_obs, out_rewards, out_terms, out_truncs, out_infos

