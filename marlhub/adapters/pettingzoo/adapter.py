"""PettingZoo AEC -> hub: :class:`PettingZooEnv`, and what the PettingZoo adapters share.

:class:`PettingZooEnv` and its parallel sibling
(:mod:`marlhub.adapters.pettingzoo.adapter_parallel`) are drop-in for the classes of the same name in
``ray.rllib.env.wrappers.pettingzoo_env`` (same constructor, ``env`` /
``par_env`` attributes, ``get_sub_environments``) but keep the
contract: agent order from ``possible_agents``, per-agent spaces, every
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

from marlhub.core import (
    ALL,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import ActionChecker, check_keys
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_CARRIED_OVER,
    NOT_RESET,
    require_running,
    restarts_when_pickled,
)
from marlhub.rewards import declared_reward_space
from marlhub.spaces import raw_action_mask

__all__ = ["PettingZooEnv", "state_holder"]


def own_arrays(rewards: Mapping[AgentID, Any]) -> dict[AgentID, Any]:
    """The rewards with each array copied: a native env may add into its arrays in place
    later (MOMAland's AEC envs accumulate into theirs), and a reward handed out stays."""
    return {a: np.array(r) if isinstance(r, np.ndarray) else r for a, r in rewards.items()}


class _PettingZooBase(MultiAgentEnv):
    """What both adapters share: spaces looked up once per agent, render, close, state."""

    # Always set in __init__ (the base class allows None).
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def __init__(self, native: Any) -> None:
        self._native = native
        self._cannot_step: Optional[str] = NOT_RESET
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
        # Multi-objective envs (MOMAland) declare a reward space per agent: arrays, carried.
        declared = {a: declared_reward_space(native, a) for a in self.possible_agents}
        self.reward_spaces = {a: s for a, s in declared.items() if s is not None} or None
        self.metadata = dict(getattr(native, "metadata", None) or {})
        self.render_mode = getattr(native, "render_mode", None)
        self._checker = ActionChecker(self.get_action_space)

    # The live agents, read from the native env only when asked for: keeping a
    # copy current would cost a wrapper-chain lookup on every step.
    @property
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
            self._checker.forget()

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

    #: Whether a PettingZoo cycle is a hub step per agent (AEC) or one hub step (parallel).
    _step_per_agent = False

    @property
    def max_steps(self) -> Optional[int]:
        """The most hub steps an episode takes, from the native env's ``max_cycles``, or None.

        A parallel step is one cycle; an AEC cycle is one turn per agent. Read by
        :func:`~marlhub.adapters.openspiel.to_openspiel` for the game's declared length.
        """
        cycles = getattr(self.get_sub_environments, "max_cycles", None)
        if type(cycles) is not int:
            return None
        return cycles * len(self.possible_agents) if self._step_per_agent else cycles

    @property
    def state_space(self) -> Any:
        """The native env's ``state_space``, the space of :meth:`state`.

        Raises:
            AttributeError: the native env has none (``hasattr`` says False).
        """
        return self._native.state_space

    @property
    def get_sub_environments(self) -> Any:
        """The innermost native env (RLlib's name; a property there too)."""
        return self._native.unwrapped

    def __getstate__(self) -> dict[str, Any]:
        """Return what pickles (and deep-copies): the attributes, the native env's own way.

        PettingZoo's own envs pickle as a call to their constructor (gymnasium's
        ``EzPickle``), so the copy of one in an episode refuses to step until reset.
        """
        state = self.__dict__.copy()
        if self._cannot_step is None and restarts_when_pickled(self._native):
            state["_cannot_step"] = NOT_CARRIED_OVER
        return state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._native}>"


#: PettingZoo wrappers that only forward the AEC state attributes (``agents``,
#: ``agent_selection``, ``rewards``, ``terminations``, ``truncations``,
#: ``infos``) to the env they wrap and never assign them on themselves
#: (checked against PettingZoo 1.27). Exact classes: a subclass may do more.
_TRANSPARENT_WRAPPERS = frozenset({
    ("pettingzoo.utils.wrappers.base", "BaseWrapper"),
    ("pettingzoo.utils.wrappers.order_enforcing", "OrderEnforcingWrapper"),
    ("pettingzoo.utils.wrappers.assert_out_of_bounds", "AssertOutOfBoundsWrapper"),
    ("pettingzoo.utils.wrappers.clip_out_of_bounds", "ClipOutOfBoundsWrapper"),
    ("pettingzoo.utils.wrappers.terminate_illegal", "TerminateIllegalWrapper"),
    ("pettingzoo.utils.wrappers.capture_stdout", "CaptureStdoutWrapper"),
})


def state_holder(env: Any) -> Any:
    """Return the object whose AEC state attributes ``env``'s attributes read through to.

    Reading ``env.rewards`` on a wrapped env walks a ``__getattr__`` chain, one
    Python call per wrapper; reading it on the holder gives the same object at
    once. Methods (``step``, ``observe``) are still called on ``env``: wrappers
    change what they do.

    Example:
        >>> import pettingzoo
        >>> env = pettingzoo.make("aec", "classic/tictactoe-v3")
        >>> state_holder(env) is env.unwrapped
        True
    """
    obj = env
    while (type(obj).__module__, type(obj).__qualname__) in _TRANSPARENT_WRAPPERS:
        inner = obj.__dict__.get("env")
        if inner is None:
            break
        obj = inner
    return obj


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

    _step_per_agent = True

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.env = env
        self._holder = state_holder(env)
        self._name = str(env)
        self._actor: AgentID = None
        self._actor_obs: Any = None
        self._actor_info: Any = None
        self._any_truncated = False

    def _live_agents(self) -> list[AgentID]:
        return list(self._holder.agents)

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the native env (seed and options passed through); return the first actor's view."""
        super().reset(seed=seed)
        env = self.env
        env.reset(seed=seed, options=options)
        self._forget_spaces()
        self._any_truncated = False
        self._cannot_step = None
        holder = self._holder
        # An agent done from the start (none in PettingZoo itself) leaves unseen.
        while holder.agents and (holder.terminations[holder.agent_selection]
                                 or holder.truncations[holder.agent_selection]):
            env.step(None)
        if not holder.agents:
            self._cannot_step = EPISODE_OVER
            return {}, {}
        actor = holder.agent_selection
        obs = env.observe(actor)
        info = holder.infos[actor]
        self._actor, self._actor_obs, self._actor_info = actor, obs, info
        if self._growing_agents:
            self._learn_agent(actor)
        return {actor: obs}, {actor: info}

    def _check(self, action_dict: Any) -> Any:
        """Validate ``action_dict`` completely; return the actor's action."""
        actor = self._actor
        if type(action_dict) is not dict or len(action_dict) != 1 or actor not in action_dict:
            # Agents leave PettingZoo's ``agents`` when done; where agents also join late,
            # one that is not there may not have come yet, and the message says both.
            finished = None if self._growing_agents else [
                a for a in self.possible_agents if a not in self._holder.agents]
            check_keys(self._name, action_dict, actors=[actor], possible_agents=self.possible_agents,
                       finished=finished)
        action = action_dict[actor]
        return self._checker.check(actor, action, raw_action_mask(self._actor_obs, self._actor_info))

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply the actor's action, step dead agents with None, return the next actor's view.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: the dict is not exactly ``{actor: legal action}``; nothing was applied.
        """
        require_running(type(self).__name__, self._cannot_step)
        action = self._check(action_dict)
        env = self.env
        holder = self._holder
        env.step(action)
        rewards = holder.rewards.copy() if self.reward_spaces is None \
            else own_arrays(holder.rewards)
        if holder.agents:
            nxt = holder.agent_selection
            if not (holder.terminations[nxt] or holder.truncations[nxt]):
                # The common case: nobody left the episode.
                obs = env.observe(nxt)
                info = holder.infos[nxt]
                self._actor, self._actor_obs, self._actor_info = nxt, obs, info
                if self._growing_agents:
                    self._learn_agent(nxt)
                return ({nxt: obs}, rewards, {nxt: False, ALL: False}, {nxt: False, ALL: False},
                        {nxt: info})
        return self._finish_step(rewards)

    def _finish_step(self, rewards: dict[AgentID, Any]) -> StepResult:
        """Step dead agents with None, each after recording its last turn; select the next actor."""
        env = self.env
        holder = self._holder
        obs: dict[AgentID, Any] = {}
        terminateds: dict[AgentID, Any] = {}
        truncateds: dict[AgentID, Any] = {}
        infos: dict[AgentID, Any] = {}
        while holder.agents:
            agent = holder.agent_selection
            term = holder.terminations[agent]
            trunc = holder.truncations[agent]
            if not (term or trunc):
                obs[agent] = self._actor_obs = env.observe(agent)
                infos[agent] = self._actor_info = holder.infos[agent]
                terminateds[agent] = truncateds[agent] = False
                terminateds[ALL] = truncateds[ALL] = False
                self._actor = agent
                if self._growing_agents:
                    self._learn_agent(agent)
                return obs, rewards, terminateds, truncateds, infos
            # The agent's last turn: what the native loop's last() shows it.
            obs[agent] = env.observe(agent)
            terminateds[agent] = bool(term)
            truncateds[agent] = bool(trunc)
            infos[agent] = holder.infos[agent]
            if not term:
                self._any_truncated = True
            env.step(None)
            for a, r in holder.rewards.items():
                rewards[a] = rewards.get(a, 0) + r
        self._cannot_step = EPISODE_OVER
        self._actor = None
        terminateds[ALL] = not self._any_truncated
        truncateds[ALL] = self._any_truncated
        return obs, rewards, terminateds, truncateds, infos
