"""hub -> Gymnasium: :func:`to_gymnasium`, one agent's view (:class:`AgentView`) or the joint one.

Both views are plain ``gymnasium.Env`` subclasses that drive a hub env, so
Gymnasium's ``check_env``, wrappers and vector envs take them; the joint view
is :class:`~marlhub.adapters.gymnasium.joint_view.JointView`.

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
import numpy as np

from marlhub.adapters.apis import to_hub
from marlhub.adapters.gymnasium.adapter import GymnasiumMultiEnv, is_gymnasium_env
from marlhub.adapters.gymnasium.driving import (
    DEFAULT_ILLEGAL_ACTION,
    DrivenView,
    HubDriver,
)
from marlhub.adapters.gymnasium.joint_view import JointView
from marlhub.contract.rules import TURN_ACTORS_EXIST
from marlhub.core import ALL, AgentID, MultiAgentDict
from marlhub.episode.actions import check_action
from marlhub.episode.status import NOT_RESET, flag, require_running
from marlhub.errors import (
    AgentIdError,
    EnvContractError,
)
from marlhub.rewards import require_scalar_rewards
from marlhub.spaces import ACTION_MASK_KEY, ActionSampler, zero_like

__all__ = ["AgentView", "JointView", "Policies", "Policy", "to_gymnasium"]

#: A policy for the other agents: ``policy(observation, agent_id) -> action``.
Policy = Callable[[Any, AgentID], Any]
#: What ``others=`` takes: None (random legal actions), one policy, or agent id -> policy.
Policies = Union[None, Policy, Mapping[AgentID, Policy]]

_AGENT_DONE = "the agent's episode is over (it terminated or was truncated)"
#: Info key set at reset when the episode ended before the agent's first turn.
NO_TURN = "episode_over_before_turn"


class AgentView(DrivenView, gym.Env):
    """One agent's view of a hub env; the other agents act through policies.

    Args:
        hub_env: the hub env.
        agent_id: the agent whose observations, actions and rewards the view has.
        others: None (seeded random legal actions), a policy
            ``policy(observation, agent_id) -> action`` for every other agent, or
            a mapping of agent id to policy (agents left out act at random).
        illegal_action: what a masked-out action does (see :func:`to_gymnasium`).

    When the hub episode ends before the agent's first turn (the others folded,
    or it never entered), ``reset`` returns the agent's last observation (zeros
    if it had none) with ``info["episode_over_before_turn"] = True``, and the
    next ``step`` ends the agent's episode with the rewards it got meanwhile.

    Attributes:
        hub_env: the hub env.
        agent_id: the agent.

    Raises:
        AgentIdError: ``others`` names an unknown agent or ``agent_id`` itself.
        TypeError: ``others`` or one of its values is not callable.
    """

    def __init__(self, hub_env: Any, agent_id: AgentID, *, others: Policies = None,
                 illegal_action: str = DEFAULT_ILLEGAL_ACTION) -> None:
        self._drive(hub_env, illegal_action)
        self.agent_id = agent_id
        self.observation_space = hub_env.get_observation_space(agent_id)
        self.action_space = hub_env.get_action_space(agent_id)
        self.metadata = dict(getattr(hub_env, "metadata", None) or {})
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._policy, self._policies = _policy_table(others, list(hub_env.possible_agents), agent_id)
        self._spaces: dict[AgentID, gym.Space] = {}
        self._sampler: Optional[ActionSampler] = None
        self._hub = HubDriver(self._env)
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
        obs, infos = self._env.reset(seed=seed, options=options)
        self._hub.begin(obs, infos)
        self._pending = 0.0
        self._terminated = self._truncated = False
        self._fresh_obs = self.agent_id in obs
        self._cannot_step = None
        self._advance()
        info = self._agent_info()
        if self._terminated or self._truncated:
            # The episode ended before the agent's turn (others folded, it never entered):
            # the agent sees its last observation, and its first step ends its episode
            # with the rewards it got meanwhile.
            info[NO_TURN] = True
        return self._agent_obs(), info

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
        # Space only: a masked-out action is the illegal-action policy's or the hub
        # env's call (Gymnasium's Taxi, say, publishes a mask but accepts every action).
        action = check_action(self.agent_id, self.action_space, action)
        if not (self._terminated or self._truncated):  # else: no turn in this episode
            actions = {a: self._other_action(a) for a in self._hub.actors if a != self.agent_id}
            actions[self.agent_id] = action
            self._step_hub(actions)
            self._advance()
        reward, self._pending = self._pending, 0.0
        if self._terminated or self._truncated:
            self._cannot_step = _AGENT_DONE
        info = self._agent_info() if self._fresh_obs else {}
        return self._agent_obs(), float(reward), self._terminated, self._truncated, info

    def _agent_info(self) -> dict[str, Any]:
        info = dict(self._hub.last_infos.get(self.agent_id, {}))
        mask = self._hub.mask(self.agent_id)
        if mask is not None:
            info.setdefault(ACTION_MASK_KEY, mask)
        return info

    def action_masks(self) -> np.ndarray:
        """The agent's legal actions as a bool array (what sb3-contrib's ``MaskablePPO`` reads).

        All True when the hub env publishes no mask for the agent.
        """
        mask = self._hub.mask(self.agent_id)
        if mask is None:
            size = int(getattr(self.action_space, "n", 0)) or int(
                np.sum(getattr(self.action_space, "nvec", [1])))
            return np.ones(size, dtype=bool)
        return mask.astype(bool)

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
        result = self._env.step(actions)
        self._hub.record(result)
        obs, rewards, terminateds, truncateds, _ = result
        me = self.agent_id
        self._pending += float(rewards.get(me, 0.0))
        if me in obs:
            self._fresh_obs = True
        self._terminated = flag(terminateds, me) or flag(terminateds, ALL)
        self._truncated = flag(truncateds, me) or flag(truncateds, ALL)

    def _agent_obs(self) -> Any:
        if self.agent_id not in self._hub.last_obs:  # never observed in this episode
            return zero_like(self.observation_space)
        obs = self._hub.last_obs[self.agent_id]
        if self._fresh_obs:
            self._fresh_obs = False
            return obs
        return copy.deepcopy(obs)  # never hand out the same object twice

    def _other_action(self, agent: AgentID) -> Any:
        space = self._spaces.get(agent)
        if space is None:
            space = self._spaces[agent] = self._env.get_action_space(agent)
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


def to_gymnasium(
    env: Any,
    agent_id: Optional[AgentID] = None,
    *,
    others: Policies = None,
    joint: bool = False,
    illegal_action: str = DEFAULT_ILLEGAL_ACTION,
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
        illegal_action: what a masked-out action does (Gymnasium's consumers send any
            action of the space): ``"terminate"`` (the default, as PettingZoo classic:
            the agent gets -1 and the episode ends), ``"substitute"`` (a random legal
            action is played) or ``"raise"`` (``ActionError``, the hub's own answer);
            see :class:`~marlhub.wrappers.illegal.IllegalActionWrapper`. The view's
            ``action_masks()`` and ``info["action_mask"]`` give the mask to learners
            that use it (sb3-contrib's ``MaskablePPO``).

    Raises:
        AgentIdError: ``agent_id`` is missing for a several-agent env or unknown,
            or ``others`` names unknown agents or ``agent_id`` itself.
        ValueError: ``joint=True`` together with ``agent_id`` or ``others``.
        ProtocolError: ``env`` cannot be made a hub env.
        VectorRewardError: the env pays vector rewards; scalarize them first
            (:class:`~marlhub.wrappers.ScalarizeRewards`).

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
    require_scalar_rewards(hub, "to_gymnasium", needs="a Gymnasium env's reward is one number")
    possible = list(hub.possible_agents)
    if joint:
        return JointView(hub, illegal_action=illegal_action)
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
    return AgentView(hub, agent_id, others=others, illegal_action=illegal_action)
