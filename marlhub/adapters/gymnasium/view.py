"""hub -> Gymnasium: one agent's view (:class:`AgentView`) and the joint view (:class:`JointView`).

Both are plain ``gymnasium.Env`` subclasses that drive a hub env, so
Gymnasium's ``check_env``, wrappers and vector envs take them. Made by
:func:`marlhub.adapters.gymnasium.to_gymnasium`; semantics there.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> view = AgentView(TicTacToe(), "player1")
    >>> obs, info = view.reset(seed=0)
    >>> obs.shape, view.action_space
    ((9,), Discrete(9))
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, Optional, SupportsFloat, Union, cast

import gymnasium as gym

from marlhub.adapters.apis import to_hub
from marlhub.adapters.gymnasium.adapter import GymnasiumMultiEnv, is_gymnasium_env
from marlhub.contract.rules import TURN_ACTORS_EXIST
from marlhub.core import ALL, AgentID, MultiAgentDict
from marlhub.episode.actions import check_action, check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, flag, require_running
from marlhub.errors import (
    ActionError,
    AgentIdError,
    EnvContractError,
    NotParallelizableError,
)
from marlhub.spaces import ActionSampler, find_action_mask

__all__ = ["AgentView", "JointView", "Policies", "Policy", "to_gymnasium"]

#: A policy for the other agents: ``policy(observation, agent_id) -> action``.
Policy = Callable[[Any, AgentID], Any]
#: What ``others=`` takes: None (random legal actions), one policy, or agent id -> policy.
Policies = Union[None, Policy, Mapping[AgentID, Policy]]

_AGENT_DONE = "the agent's episode is over (it terminated or was truncated)"


class _HubDriver:
    """Reads hub outputs: last observations and infos, done agents, whether the episode is over."""

    def __init__(self, hub_env: Any) -> None:
        self.hub_env = hub_env
        self.last_obs: MultiAgentDict = {}
        self.last_infos: MultiAgentDict = {}
        self.done: set[AgentID] = set()
        self.over = False
        self.actors: list[AgentID] = []

    def begin(self, obs: MultiAgentDict, infos: MultiAgentDict) -> None:
        self.last_obs = dict(obs)
        self.last_infos = {a: infos.get(a, {}) for a in obs}
        self.done = set()
        self.over = False
        self.actors = list(obs)

    def record(self, result: tuple[Any, ...]) -> None:
        obs, _, terminateds, truncateds, infos = result
        for agent, value in obs.items():
            self.last_obs[agent] = value
            self.last_infos[agent] = infos.get(agent, {})
        for table in (terminateds, truncateds):
            self.done.update(a for a, v in table.items() if a != ALL and v)
        self.over = flag(terminateds, ALL) or flag(truncateds, ALL)
        self.actors = [] if self.over else [a for a in obs if a not in self.done]

    def mask(self, agent: AgentID) -> Any:
        return find_action_mask(self.last_obs.get(agent), self.last_infos.get(agent))


class _RendersHub:
    """What both views pass straight to the hub env they show."""

    hub_env: Any

    def render(self) -> Any:
        """Render the hub env."""
        return self.hub_env.render()

    def close(self) -> None:
        """Close the hub env."""
        close = getattr(self.hub_env, "close", None)
        if callable(close):
            close()


class AgentView(_RendersHub, gym.Env):
    """One agent's view of a hub env; the other agents act through policies.

    Args:
        hub_env: the hub env.
        agent_id: the agent whose observations, actions and rewards the view has.
        others: None (seeded random legal actions), a policy
            ``policy(observation, agent_id) -> action`` for every other agent, or
            a mapping of agent id to policy (agents left out act at random).

    Attributes:
        hub_env: the hub env.
        agent_id: the agent.

    Raises:
        AgentIdError: ``others`` names an unknown agent or ``agent_id`` itself.
        TypeError: ``others`` or one of its values is not callable.
    """

    def __init__(self, hub_env: Any, agent_id: AgentID, *, others: Policies = None) -> None:
        self.hub_env = hub_env
        self.agent_id = agent_id
        self.observation_space = hub_env.get_observation_space(agent_id)
        self.action_space = hub_env.get_action_space(agent_id)
        self.metadata = dict(getattr(hub_env, "metadata", None) or {})
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._policy, self._policies = _policy_table(others, list(hub_env.possible_agents), agent_id)
        self._spaces: dict[AgentID, gym.Space] = {}
        self._sampler: Optional[ActionSampler] = None
        self._hub = _HubDriver(hub_env)
        self._pending = 0.0
        self._terminated = False
        self._truncated = False
        self._fresh_obs = False
        self._cannot_step: Optional[str] = NOT_RESET

    # -- the episode --------------------------------------------------------------

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> tuple[Any, dict]:
        """Reset the hub env, let the others act until the agent's first turn, return its observation.

        Rewards the agent gets before its first turn are added to its first step's reward.

        Raises:
            AgentIdError: the hub episode ended before the agent got an observation.
        """
        super().reset(seed=seed)
        if seed is not None:
            self._sampler = ActionSampler(seed)
        elif self._sampler is None:
            self._sampler = ActionSampler(int(self.np_random.integers(2**63 - 1)))
        obs, infos = self.hub_env.reset(seed=seed, options=options)
        self._hub.begin(obs, infos)
        self._pending = 0.0
        self._terminated = self._truncated = False
        self._fresh_obs = self.agent_id in obs
        self._cannot_step = None
        steps = self._advance()
        if self._terminated or self._truncated:
            self._cannot_step = NOT_RESET
            raise AgentIdError(
                self.agent_id,
                f"{self.agent_id!r} got no observation in the episode begun by reset(seed={seed!r}): "
                f"it ended after {steps} steps of the other agents before {self.agent_id!r} could act",
                fix="Pick an agent that takes part in every episode, or reset with another seed.",
            )
        return self._agent_obs(), dict(self._hub.last_infos.get(self.agent_id, {}))

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict]:
        """Apply the agent's action, let the others act until its next turn or its end.

        Returns:
            ``(obs, reward, terminated, truncated, info)`` of the agent; ``reward``
            sums every reward it got since its last step.

        Raises:
            ResetNeededError: before ``reset()`` or after the agent's episode ended.
            ActionError: the action (or one an ``others`` policy chose) is outside
                its space, nothing is stepped then; or the hub env rejects it
                (a masked-out action, say).
        """
        require_running(type(self).__name__, self._cannot_step)
        # Space only: whether a masked-out action is illegal is the hub env's call
        # (Gymnasium's Taxi, say, publishes a mask but accepts every action).
        check_action(self.agent_id, self.action_space, action)
        actions = {a: self._other_action(a) for a in self._hub.actors if a != self.agent_id}
        actions[self.agent_id] = action
        self._step_hub(actions)
        self._advance()
        reward, self._pending = self._pending, 0.0
        if self._terminated or self._truncated:
            self._cannot_step = _AGENT_DONE
        info = dict(self._hub.last_infos.get(self.agent_id, {})) if self._fresh_obs else {}
        return self._agent_obs(), float(reward), self._terminated, self._truncated, info

    def _advance(self) -> int:
        """Step the other agents until the agent acts or its episode ends; return how many steps."""
        steps = 0
        while not (self._terminated or self._truncated) and self.agent_id not in self._hub.actors:
            actors = self._hub.actors
            if not actors:
                raise EnvContractError(
                    type(self.hub_env).__name__, TURN_ACTORS_EXIST,
                    "it returned no agent that acts next while the episode is not over",
                )
            self._step_hub({a: self._other_action(a) for a in actors})
            steps += 1
        return steps

    def _step_hub(self, actions: MultiAgentDict) -> None:
        result = self.hub_env.step(actions)
        self._hub.record(result)
        obs, rewards, terminateds, truncateds, _ = result
        me = self.agent_id
        self._pending += float(rewards.get(me, 0.0))
        if me in obs:
            self._fresh_obs = True
        self._terminated = flag(terminateds, me) or flag(terminateds, ALL)
        self._truncated = flag(truncateds, me) or flag(truncateds, ALL)

    def _agent_obs(self) -> Any:
        obs = self._hub.last_obs[self.agent_id]
        if self._fresh_obs:
            self._fresh_obs = False
            return obs
        return copy.deepcopy(obs)  # never hand out the same object twice

    def _other_action(self, agent: AgentID) -> Any:
        space = self._spaces.get(agent)
        if space is None:
            space = self._spaces[agent] = self.hub_env.get_action_space(agent)
        mask = self._hub.mask(agent)
        policy = self._policies.get(agent, self._policy)
        if policy is None:
            sampler = cast(ActionSampler, self._sampler)  # set by reset()
            return sampler.sample(agent, space, mask)
        action = policy(self._hub.last_obs[agent], agent)
        check_action(agent, space, action,
                     fix=f"The others= policy for {agent!r} chose it; make it return legal actions.")
        return action

    def lossless_hub_env(self) -> Any:
        """The hub env, when the view shows all of it (its only agent), else None."""
        only = list(self.hub_env.possible_agents) == [self.agent_id]
        return self.hub_env if only else None

    def __repr__(self) -> str:
        return f"<AgentView of {self.agent_id!r} in {self.hub_env!r}>"


def _policy_table(
    others: Policies, possible: list[AgentID], agent_id: AgentID
) -> tuple[Optional[Policy], dict[AgentID, Policy]]:
    if others is None:
        return None, {}
    if isinstance(others, Mapping):
        table = dict(others)
        for agent, policy in table.items():
            if agent == agent_id:
                raise AgentIdError(
                    agent, f"others= has a policy for {agent!r}, the agent of the view itself",
                    fix="The view's own actions come from step(); drop that entry.",
                )
            if agent not in possible:
                raise AgentIdError(agent, f"others= names {agent!r}, which is not a possible agent",
                                   known=[a for a in possible if a != agent_id])
            if not callable(policy):
                raise TypeError(
                    f"others[{agent!r}] must be a policy policy(observation, agent_id) -> action, "
                    f"got {type(policy).__name__} {policy!r:.60}."
                )
        return None, table
    if callable(others):
        return others, {}
    raise TypeError(
        "others= takes None (random legal actions), a policy policy(observation, agent_id) -> "
        f"action, or a dict of agent id to policy; got {type(others).__name__} {others!r:.60}."
    )


class JointView(_RendersHub, gym.Env):
    """All agents of a simultaneous hub env as one Gymnasium env with ``Dict`` spaces.

    Args:
        hub_env: the hub env; every live agent must act in every step.

    Attributes:
        hub_env: the hub env.
        possible_agents: the hub env's possible agents, the keys of the spaces.
    """

    observation_space: gym.spaces.Dict
    action_space: gym.spaces.Dict

    def __init__(self, hub_env: Any) -> None:
        self.hub_env = hub_env
        self.possible_agents = list(hub_env.possible_agents)
        self.observation_space = gym.spaces.Dict(
            {a: hub_env.get_observation_space(a) for a in self.possible_agents}
        )
        self.action_space = gym.spaces.Dict(
            {a: hub_env.get_action_space(a) for a in self.possible_agents}
        )
        self.metadata = dict(getattr(hub_env, "metadata", None) or {})
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._keys: list[AgentID] = list(self.observation_space.spaces)
        self._hub = _HubDriver(hub_env)
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> tuple[dict, dict]:
        """Reset the hub env; return every agent's observation and ``{"agent_infos": infos}``.

        Raises:
            NotParallelizableError: not every possible agent got an observation.
        """
        super().reset(seed=seed)
        obs, infos = self.hub_env.reset(seed=seed, options=options)
        self._hub.begin(obs, infos)
        self._cannot_step = None
        self._require_all_acting(list(obs), self.possible_agents)
        return {a: obs[a] for a in self._keys}, {"agent_infos": dict(infos)}

    def step(self, action: Any) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        """Step every live agent with its entry of ``action``; done agents' entries are ignored.

        Returns:
            ``(obs, reward, terminated, truncated, info)``: every agent's
            observation (done agents keep their last), the sum of the rewards,
            ``__all__`` of both done dicts, and the per-agent data in ``info``.

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: ``action`` lacks a live agent, names an unknown one, or
                holds an action outside its space (nothing is stepped then); or the
                hub env rejects an action (a masked-out one, say).
            NotParallelizableError: after the step, some live agent does not act.
        """
        require_running(type(self).__name__, self._cannot_step)
        live = [a for a in self._keys if a not in self._hub.done]
        actions = self._check_actions(action, live)
        result = self.hub_env.step(actions)
        self._hub.record(result)
        obs, rewards, terminateds, truncateds, infos = result
        if self._hub.over:
            self._cannot_step = EPISODE_OVER
        else:
            self._require_all_acting(
                self._hub.actors, [a for a in self._keys if a not in self._hub.done]
            )
        joint_obs = {a: obs[a] if a in obs else copy.deepcopy(self._hub.last_obs[a]) for a in self._keys}
        individual = {a: float(r) for a, r in rewards.items()}
        info = {
            "individual_rewards": individual,
            "terminateds": dict(terminateds),
            "truncateds": dict(truncateds),
            "agent_infos": dict(infos),
        }
        return (joint_obs, float(sum(individual.values())), flag(terminateds, ALL),
                flag(truncateds, ALL), info)

    def _check_actions(self, action: Any, live: list[AgentID]) -> MultiAgentDict:
        if not isinstance(action, Mapping):
            raise ActionError(
                None, action, expected=f"a dict with an action for each of {self._keys}",
                fix="The joint view's action space is a Dict over all agents; sample it or build "
                "such a dict.",
            )
        # Done agents' entries are ignored (the Dict space still has them).
        live_only = {a: v for a, v in action.items() if a not in self._hub.done}
        # Keyed by agent id (any hashable); gymnasium annotates Dict's keys as str.
        spaces: Mapping[Any, gym.Space] = self.action_space.spaces
        check_action_dict("JointView", live_only, actors=live, possible_agents=self._keys,
                          space_of=spaces.__getitem__)
        return {a: action[a] for a in live}

    def _require_all_acting(self, actors: list[AgentID], expected: list[AgentID]) -> None:
        if set(actors) == set(expected):
            return
        self._cannot_step = "the env stopped being simultaneous (see the error raised then)"
        raise NotParallelizableError(
            actors, expected, needs="to_gymnasium(env, joint=True)",
            fix="The joint view is for simultaneous envs; use to_gymnasium(env, agent_id) for one "
            "agent's view of a turn-based env, or marlhub.adapters.pettingzoo.to_pettingzoo(env) "
            "for the AEC API.",
        )

    def lossless_hub_env(self) -> Any:
        """The hub env: the joint view shows all of it."""
        return self.hub_env

    def __repr__(self) -> str:
        return f"<JointView of {self.hub_env!r}>"


def to_gymnasium(
    env: Any,
    agent_id: Optional[AgentID] = None,
    *,
    others: Policies = None,
    joint: bool = False,
) -> gym.Env:
    """Return a hub env (or any env :func:`~marlhub.adapters.to_hub` accepts) as a Gymnasium env.

    One agent's view (the default): observations, actions and spaces are
    ``agent_id``'s; the other agents are driven by ``others`` between its turns;
    its rewards that arrive meanwhile add up into its next step's reward;
    ``terminated`` / ``truncated`` are its own flags or ``__all__``.

    The joint view (``joint=True``): ``Dict`` observation and action spaces
    over all possible agents, for envs where every live agent acts in every
    step. The reward is the sum of the agents' rewards, which are also in
    ``info["individual_rewards"]``; ``info["agent_infos"]``,
    ``info["terminateds"]`` and ``info["truncateds"]`` hold the per-agent
    rest. An agent that is done keeps its last observation and its actions
    are ignored. The first step (or reset) where some live agent does not act
    raises :class:`~marlhub.errors.NotParallelizableError`.

    An env made by :func:`from_gymnasium` (a one-agent
    :class:`GymnasiumMultiEnv`) unwraps to its Gymnasium env; a single-agent
    Gymnasium env is returned as it is.

    Args:
        env: the env.
        agent_id: whose view; may be omitted for an env with one possible agent.
        others: how the other agents act: None for seeded random legal
            actions (seeded by ``reset(seed=...)``), a policy
            ``policy(observation, agent_id) -> action`` for all of them, or a
            mapping of agent id to such a policy (agents it leaves out act at random).
        joint: return the joint view instead of one agent's.

    Raises:
        AgentIdError: ``agent_id`` is missing for a several-agent env or unknown,
            or ``others`` names unknown agents or ``agent_id`` itself.
        ValueError: ``joint=True`` together with ``agent_id`` or ``others``.
        ProtocolError: ``env`` cannot be made a hub env.

    Example:
        >>> from marlhub.envs import RockPaperScissors
        >>> view = to_gymnasium(RockPaperScissors(), "player1", others=lambda obs, agent: 0)
        >>> view.reset(seed=0)
        (0, {})
        >>> view.step(1)  # paper beats the others' rock
        (0, 1.0, False, False, {})
        >>> joint = to_gymnasium(RockPaperScissors(), joint=True)
        >>> joint.action_space
        Dict('player1': Discrete(3), 'player2': Discrete(3))
    """
    if joint and (agent_id is not None or others is not None):
        raise ValueError(
            "to_gymnasium(joint=True) acts for every agent, so it takes no agent_id and no "
            f"others (got agent_id={agent_id!r}, others={others!r}); drop them, or drop joint=True "
            "for one agent's view."
        )
    if is_gymnasium_env(env):
        return env  # already a single-agent Gymnasium env
    hub = to_hub(env)
    possible = list(hub.possible_agents)
    if joint:
        return JointView(hub)
    if agent_id is None:
        if len(possible) != 1:
            raise AgentIdError(
                None, f"to_gymnasium() needs agent_id for an env with {len(possible)} agents",
                known=possible,
                fix=f"Pass agent_id= one of {possible!r} for that agent's view, or joint=True "
                "for all agents at once.",
            )
        agent_id = possible[0]
    if agent_id not in possible:
        raise AgentIdError(
            agent_id, f"to_gymnasium() got agent_id {agent_id!r}, which is not a possible agent of "
            f"{type(hub).__name__}", known=possible,
        )
    if isinstance(hub, GymnasiumMultiEnv) and len(hub.envs) == 1 and others is None:
        return hub.envs[0]
    return AgentView(hub, agent_id, others=others)
