"""PettingZoo -> hub: :class:`PettingZooEnv` (AEC) and :class:`ParallelPettingZooEnv` (parallel).

Both are drop-in for the classes of the same name in
``ray.rllib.env.wrappers.pettingzoo_env`` (same constructor, ``env`` /
``par_env`` attributes, ``get_sub_environments``) but follow DESIGN.md
section 3: agent order from ``possible_agents``, per-agent spaces, every
reward reported exactly once, truncation reported as truncation, the whole
action dict validated before anything is applied.

This module does not import PettingZoo: the adapters only call the env's own
methods, so any object that quacks like a PettingZoo env works.

Example:
    >>> import pettingzoo
    >>> env = PettingZooEnv(pettingzoo.make("aec", "classic/tictactoe-v3"))
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs), obs["player_1"]["action_mask"].tolist()
    (['player_1'], [1, 1, 1, 1, 1, 1, 1, 1, 1])
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_1": 4})
    >>> list(obs), rewards, terminateds
    (['player_2'], {'player_1': 0, 'player_2': 0}, {'player_2': False, '__all__': False})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict, MultiAgentEnv, ResetResult, StepResult
from marlhub.errors import ActionError, ResetNeededError
from marlhub.spaces import ACTION_MASK_KEY, why_illegal

__all__ = ["ParallelPettingZooEnv", "PettingZooEnv"]

_NOT_RESET = "reset() has not been called yet"
_EPISODE_OVER = "the episode is over (__all__ was True in the last step)"
# Integer types whose values a Discrete space takes as they are (the fast path).
_INT_TYPES = frozenset({int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                        np.uint32, np.uint64})


def _discrete_ok(space: gym.Space, action: Any, mask: Any) -> bool:
    """Tell quickly whether ``action`` is legal in a Discrete ``space``; False means "look closer"."""
    if type(action) not in _INT_TYPES or type(space) is not gym.spaces.Discrete:
        return False
    index = int(action) - int(space.start)
    if not 0 <= index < space.n:
        return False
    if mask is None:
        return True
    try:
        return bool(mask[index])
    except (IndexError, TypeError):
        return False


def _mask_of(obs: Any, info: Any) -> Any:
    if type(obs) is dict:
        mask = obs.get(ACTION_MASK_KEY)
        if mask is not None:
            return mask
    if info:
        return info.get(ACTION_MASK_KEY)
    return None


def _check_keys(env_name: str, action_dict: Any, actors: list[AgentID],
                possible: list[AgentID]) -> None:
    """Raise :class:`ActionError` unless ``action_dict`` is a dict with exactly ``actors`` as keys."""
    if not isinstance(action_dict, Mapping):
        raise ActionError(
            None, action_dict,
            expected=f"a dict mapping each actor of {actors} to its action",
        )
    for agent in action_dict:
        if agent in actors:
            continue
        if agent in possible:
            fix = (f"{agent!r} did not receive an observation in the last step (the actors are "
                   f"{actors}); send actions only for the agents in the last observation dict.")
        else:
            fix = f"{agent!r} is not an agent of {env_name}; its agents are {possible}."
        raise ActionError(agent, action_dict[agent], expected=f"actions only for {actors}", fix=fix)
    missing = [a for a in actors if a not in action_dict]
    if missing:
        raise ActionError(
            missing[0], dict(action_dict),
            expected=f"an action for every actor of the last observation dict {actors}",
            fix=f"Add an action for {', '.join(repr(a) for a in missing)}.",
        )


def _check_action(agent: AgentID, space: gym.Space, action: Any, mask: Any) -> None:
    if _discrete_ok(space, action, mask):
        return
    why = why_illegal(space, action, None if mask is None else np.asarray(mask).astype(np.int8))
    if why is not None:
        raise ActionError(agent, action, expected=f"an action in {space} ({why})")


class _PettingZooBase(MultiAgentEnv):
    """What both adapters share: spaces looked up once per agent, render, close, state."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._cannot_step: Optional[str] = _NOT_RESET
        possible = getattr(native, "possible_agents", None)
        if possible is None:
            # Envs with procedurally generated agents may lack possible_agents;
            # RLlib resets them to read the agents, and so do we.
            native.reset()
            possible = list(native.agents)
            self._growing_agents = True
        else:
            self._growing_agents = False
        super().__init__()
        self.possible_agents = list(possible)
        self.observation_spaces = {a: native.observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: native.action_space(a) for a in self.possible_agents}
        self.metadata = dict(getattr(native, "metadata", None) or {})
        self.render_mode = getattr(native, "render_mode", None)

    # The live agents, read from the native env only when asked for: keeping a
    # copy current would cost a wrapper-chain lookup on every step.
    @property  # type: ignore[override]
    def agents(self) -> list[AgentID]:
        """The agents still in the episode (the native env's ``agents``)."""
        if self._cannot_step is not None:
            return []
        return self._live_agents()

    @agents.setter
    def agents(self, value: list[AgentID]) -> None:
        pass  # set by MultiAgentEnv.__init__; the native env is the truth

    def _live_agents(self) -> list[AgentID]:
        return list(self._native.agents)

    def _learn_agent(self, agent: AgentID) -> None:
        """Add an agent the env generated mid-episode (envs without ``possible_agents``)."""
        if agent not in self.observation_spaces:
            if agent not in self.possible_agents:
                self.possible_agents.append(agent)
            self.observation_spaces[agent] = self._native.observation_space(agent)
            self.action_spaces[agent] = self._native.action_space(agent)

    def _forget_spaces(self) -> None:
        """At reset, drop the spaces of envs without ``possible_agents``: they may draw new ones."""
        if self._growing_agents:
            self.observation_spaces = {}
            self.action_spaces = {}

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """Return the native env's ``observation_space(agent_id)``, looked up once."""
        space = self.observation_spaces.get(agent_id)
        if space is None:
            self._learn_agent(agent_id)
            space = self.observation_spaces[agent_id]
        return space

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """Return the native env's ``action_space(agent_id)``, looked up once."""
        space = self.action_spaces.get(agent_id)
        if space is None:
            self._learn_agent(agent_id)
            space = self.action_spaces[agent_id]
        return space

    def render(self) -> Any:
        """Render the native env (in the ``render_mode`` it was created with)."""
        return self._native.render()

    def close(self) -> None:
        """Close the native env."""
        self._native.close()

    def state(self) -> Any:
        """Return the native env's global ``state()`` (for centralised critics)."""
        return self._native.state()

    @property
    def get_sub_environments(self) -> Any:
        """The innermost native env (RLlib's name; a property there too)."""
        return self._native.unwrapped

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._native}>"


class PettingZooEnv(_PettingZooBase):
    """A PettingZoo AEC env as a hub env: one hub step per AEC turn.

    The observation dict holds the agent to act next (``agent_selection``) and
    the final observations of the agents that left the episode in this step.
    Dead agents are stepped with ``None`` inside the adapter. Every native
    step's ``env.rewards`` are reported for every agent present, summed over
    the native steps one hub step covers, so each agent's sum of hub rewards
    equals its PettingZoo return. ``__all__`` is terminated when every agent
    that finished terminated, truncated otherwise. Action masks pass through
    where the env keeps them (observation or infos).

    Args:
        env: a PettingZoo ``AECEnv`` (wrapped or not).
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.env = env
        self._name = str(env)
        self._actor: AgentID = None
        self._actor_obs: Any = None
        self._actor_info: Any = None
        self._any_truncated = False

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> ResetResult:
        """Reset the native env (``seed`` and ``options`` passed through); return the first actor's view."""
        super().reset(seed=seed)
        env = self.env
        env.reset(seed=seed, options=options)
        self._forget_spaces()
        self._any_truncated = False
        self._cannot_step = None
        self._skip_dead(env)  # envs where an agent starts done (none in PettingZoo itself)
        if not env.agents:
            self._cannot_step = _EPISODE_OVER
            return {}, {}
        actor = env.agent_selection
        obs = env.observe(actor)
        info = env.infos[actor]
        self._remember(actor, obs, info)
        return {actor: obs}, {actor: info}

    def _remember(self, actor: AgentID, obs: Any, info: Any) -> None:
        self._actor, self._actor_obs, self._actor_info = actor, obs, info
        if self._growing_agents:
            self._learn_agent(actor)

    def _skip_dead(self, env: Any) -> dict[AgentID, Any]:
        """Step every dead selected agent with None; return their rewards summed (none at reset)."""
        rewards: dict[AgentID, Any] = {}
        while env.agents:
            agent = env.agent_selection
            if not (env.terminations[agent] or env.truncations[agent]):
                break
            env.step(None)
            for a, r in env.rewards.items():
                rewards[a] = rewards.get(a, 0) + r
        return rewards

    def step(self, action_dict: MultiAgentDict) -> StepResult:
        """Apply the actor's action, step dead agents with None, return the next actor's view.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: the dict is not exactly ``{actor: legal action}``; nothing was applied.
        """
        if self._cannot_step is not None:
            raise ResetNeededError(type(self).__name__, self._cannot_step)
        actor = self._actor
        if type(action_dict) is not dict or len(action_dict) != 1 or actor not in action_dict:
            _check_keys(self._name, action_dict, [actor], self.possible_agents)
        action = action_dict[actor]
        space = self.action_spaces.get(actor)
        if space is None:
            space = self.get_action_space(actor)
        mask = _mask_of(self._actor_obs, self._actor_info)
        if not _discrete_ok(space, action, mask):
            _check_action(actor, space, action, mask)

        env = self.env
        env.step(action)
        rewards = dict(env.rewards)
        obs: dict[AgentID, Any] = {}
        terminateds: dict[AgentID, Any] = {}
        truncateds: dict[AgentID, Any] = {}
        infos: dict[AgentID, Any] = {}
        agents = env.agents
        if agents:
            nxt = env.agent_selection
            terms = env.terminations
            truncs = env.truncations
            term = terms[nxt]
            trunc = truncs[nxt]
            while term or trunc:
                # The agent's last turn: what the native loop's last() shows it.
                obs[nxt] = env.observe(nxt)
                terminateds[nxt] = bool(term)
                truncateds[nxt] = bool(trunc)
                infos[nxt] = env.infos[nxt]
                if not term:
                    self._any_truncated = True
                env.step(None)
                for a, r in env.rewards.items():
                    rewards[a] = rewards.get(a, 0) + r
                agents = env.agents
                if not agents:
                    break
                nxt = env.agent_selection
                terms = env.terminations
                truncs = env.truncations
                term = terms[nxt]
                trunc = truncs[nxt]
        if agents:
            next_obs = env.observe(nxt)
            next_info = env.infos[nxt]
            obs[nxt] = next_obs
            infos[nxt] = next_info
            terminateds[nxt] = False
            truncateds[nxt] = False
            terminateds[ALL] = False
            truncateds[ALL] = False
            self._actor, self._actor_obs, self._actor_info = nxt, next_obs, next_info
            if self._growing_agents:
                self._learn_agent(nxt)
        else:
            self._cannot_step = _EPISODE_OVER
            self._actor = None
            terminateds[ALL] = not self._any_truncated
            truncateds[ALL] = self._any_truncated
        return obs, rewards, terminateds, truncateds, infos


class ParallelPettingZooEnv(_PettingZooBase):
    """A PettingZoo parallel env as a hub env: one hub step per parallel step.

    Entries for agents that finished in an earlier step are dropped (an agent
    never reappears once done), an actor without a reward gets 0, infos keys
    that name no agent go under ``"__common__"``, and ``__all__`` is terminated
    when every agent that finished terminated, truncated otherwise.

    Args:
        env: a PettingZoo ``ParallelEnv`` (wrapped or not).

    Example:
        >>> import pettingzoo
        >>> native = pettingzoo.make("parallel", "butterfly/pistonball-v6", max_cycles=2)
        >>> env = ParallelPettingZooEnv(native)
        >>> obs, infos = env.reset(seed=0)
        >>> len(obs), list(obs)[:2]
        (20, ['piston_0', 'piston_1'])
        >>> acts = {a: env.get_action_space(a).sample() * 0 for a in obs}
        >>> _ = env.step(acts)
        >>> obs, rewards, terminateds, truncateds, infos = env.step(acts)
        >>> terminateds["__all__"], truncateds["__all__"], env.agents
        (False, True, [])
    """

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.par_env = env
        self._name = str(env)
        self._actors: list[AgentID] = []
        self._actor_obs: dict[AgentID, Any] = {}
        self._actor_infos: dict[AgentID, Any] = {}
        self._finished: set[AgentID] = set()
        self._any_truncated = False

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> ResetResult:
        """Reset the native env (``seed`` and ``options`` passed through); return every actor's view."""
        super().reset(seed=seed)
        obs, infos = self.par_env.reset(seed=seed, options=options)
        self._forget_spaces()
        self._finished = set()
        self._any_truncated = False
        obs = dict(obs)
        infos = self._split_infos(obs, infos or {})
        self._cannot_step = None if obs else _EPISODE_OVER
        self._note_actors(obs, infos, {}, {})
        return obs, infos

    def _split_infos(self, obs: Mapping[AgentID, Any], infos: Mapping[Any, Any]) -> dict[Any, Any]:
        """Keep the infos of agents in ``obs``; put keys that name no agent under ``__common__``."""
        kept: dict[Any, Any] = {}
        common: dict[Any, Any] = {}
        for key, value in infos.items():
            if key in obs:
                kept[key] = value
            elif key not in self.observation_spaces and not self._growing_agents:
                common[key] = value
        if common:
            kept[COMMON] = common
        return kept

    def _note_actors(self, obs: Mapping[AgentID, Any], infos: Mapping[AgentID, Any],
                     terms: Mapping[AgentID, Any], truncs: Mapping[AgentID, Any]) -> None:
        actors = [a for a in obs if not (terms.get(a) or truncs.get(a))]
        self._actors = actors
        self._actor_obs = obs  # type: ignore[assignment]
        self._actor_infos = infos  # type: ignore[assignment]
        if self._growing_agents:
            for a in actors:
                self._learn_agent(a)

    def _live_agents(self) -> list[AgentID]:
        return [a for a in self.par_env.agents if a not in self._finished]

    def step(self, action_dict: MultiAgentDict) -> StepResult:
        """Apply every actor's action at once.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: an actor without an action, an action for anyone else, or an
                action outside its space or mask; nothing was applied.
        """
        if self._cannot_step is not None:
            raise ResetNeededError(type(self).__name__, self._cannot_step)
        actors = self._actors
        if type(action_dict) is not dict or len(action_dict) != len(actors) or any(
            a not in action_dict for a in actors
        ):
            _check_keys(self._name, action_dict, actors, self.possible_agents)
        spaces = self.action_spaces
        for agent in actors:
            action = action_dict[agent]
            space = spaces.get(agent)
            if space is None:
                space = self.get_action_space(agent)
            mask = _mask_of(self._actor_obs.get(agent), self._actor_infos.get(agent))
            if not _discrete_ok(space, action, mask):
                _check_action(agent, space, action, mask)

        n_obs, n_rewards, n_terms, n_truncs, n_infos = self.par_env.step(action_dict)
        finished = self._finished
        obs = {a: o for a, o in n_obs.items() if a not in finished}
        rewards = {a: r for a, r in n_rewards.items() if a not in finished}
        terminateds: dict[Any, Any] = {}
        truncateds: dict[Any, Any] = {}
        for agent in dict.fromkeys([*n_terms, *n_truncs]):
            if agent in finished:
                continue
            term = bool(n_terms.get(agent, False))
            trunc = bool(n_truncs.get(agent, False))
            terminateds[agent] = term
            truncateds[agent] = trunc
            if term or trunc:
                finished.add(agent)
                if not term:
                    self._any_truncated = True
        for agent in actors:  # an agent that acted and still observes has a reward entry
            if agent in obs and agent not in rewards:
                rewards[agent] = 0
        infos = self._split_infos(obs, n_infos or {})
        live = [a for a in self.par_env.agents if a not in finished]
        if live:
            terminateds[ALL] = False
            truncateds[ALL] = False
        else:
            self._cannot_step = _EPISODE_OVER
            # Agents the env dropped without a flag ended by truncation of the episode.
            if any(a not in finished for a in actors):
                self._any_truncated = True
            terminateds[ALL] = not self._any_truncated
            truncateds[ALL] = self._any_truncated
        self._note_actors(obs, infos, terminateds, truncateds)
        return obs, rewards, terminateds, truncateds, infos
