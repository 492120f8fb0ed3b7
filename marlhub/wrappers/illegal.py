"""What happens to a masked-out action: raise, end the episode with a penalty, or substitute.

Hub envs refuse a masked-out action (``ActionError``, nothing applied). Consumers
that assume every action in the space can be sent (Gymnasium's ``check_env``,
RLlib's checker, learners that ignore masks) need another answer, which
:class:`IllegalActionWrapper` gives for any hub env that publishes masks, in
its observations or its infos:

* ``"raise"``: the hub's own answer, ``ActionError``;
* ``"terminate"``: as PettingZoo classic's ``TerminateIllegalWrapper``: the
  offender gets ``penalty`` (default -1), every agent still in the episode is
  terminated with its last observation, and the wrapped env is not stepped;
* ``"substitute"``: a random legal action (seeded by ``reset(seed=...)``) is
  played instead, and the offender gets ``penalty`` (default 0, so returns stay
  the game's).

Each illegal action is reported in the offender's infos
(``infos[agent]["illegal_action"]``) and counted in :attr:`illegal_actions`.
Actions outside the space, or dicts for the wrong agents, are still
``ActionError``: only masks are overridden. Envs whose masks are advice
(:data:`~marlhub.spaces.ADVISORY_MASKS`, Gymnasium's Taxi) are left alone.

Example:
    >>> import marlhub
    >>> env = IllegalActionWrapper(marlhub.make("openspiel/tic_tac_toe"), "terminate")
    >>> obs, infos = env.reset(seed=0)
    >>> _ = env.step({"player_0": 4})
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_1": 4})  # taken square
    >>> rewards, terminateds["__all__"], infos["player_1"]["illegal_action"]
    ({'player_1': -1.0, 'player_0': 0.0}, True, 4)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import check_action, check_keys
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_RESET,
    actors_of,
    episode_over,
    require_running,
)
from marlhub.errors import ConfigError
from marlhub.rewards import zero_reward
from marlhub.spaces import ActionSampler, find_action_mask, masks_are_binding
from marlhub.wrappers.base import HubWrapper

__all__ = ["ILLEGAL_ACTION_POLICIES", "ILLEGAL_ACTION_KEY", "IllegalActionWrapper"]

#: The policies :class:`IllegalActionWrapper` takes.
ILLEGAL_ACTION_POLICIES = ("raise", "terminate", "substitute")
#: Key of the offending action in the offender's infos.
ILLEGAL_ACTION_KEY = "illegal_action"
_DEFAULT_PENALTY = {"raise": 0.0, "terminate": -1.0, "substitute": 0.0}


class IllegalActionWrapper(HubWrapper):
    """A hub env whose masked-out actions follow ``policy`` instead of raising.

    Args:
        env: the hub env (or anything :func:`~marlhub.adapters.to_hub` accepts).
        policy: ``"raise"``, ``"terminate"`` or ``"substitute"`` (see the module).
        penalty: the offender's reward for an illegal action; by default -1 for
            ``"terminate"``, 0 otherwise.

    Attributes:
        env: the wrapped hub env.
        policy: the policy.
        illegal_actions: how many illegal actions were met since the last reset.

    Raises:
        ConfigError: an unknown policy or a penalty that is not a number.
    """

    def __init__(self, env: Any, policy: str = "substitute", *,
                 penalty: Optional[float] = None) -> None:
        self._cannot_step: Optional[str] = NOT_RESET  # read by the agents property
        self._actors: list[AgentID] = []
        super().__init__(env)
        if policy not in ILLEGAL_ACTION_POLICIES:
            raise ConfigError(type(self).__name__, f"policy={policy!r} is not a known policy",
                              fix=f"Use one of {', '.join(map(repr, ILLEGAL_ACTION_POLICIES))}.")
        if penalty is not None and (isinstance(penalty, bool) or not isinstance(
                penalty, (int, float, np.integer, np.floating))):
            raise ConfigError(type(self).__name__, f"penalty={penalty!r} is not a number",
                              fix="Pass a float such as -1.0, or None for the default.")
        self.policy = policy
        self.penalty = float(_DEFAULT_PENALTY[policy] if penalty is None else penalty)
        self.illegal_actions = 0
        self._sampler = ActionSampler()
        self._last_obs: MultiAgentDict = {}
        self._masks: dict[AgentID, Optional[np.ndarray]] = {}

    @property
    def agents(self) -> list[AgentID]:
        """The wrapped env's live agents (none once this wrapper ended the episode)."""
        return [] if self._cannot_step is not None else super().agents

    @agents.setter
    def agents(self, value: list[AgentID]) -> None:
        pass  # the wrapped env is the truth

    @property
    def actors(self) -> list[AgentID]:
        """The agents that act in the next step."""
        return list(self._actors)

    # -- the episode ---------------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the wrapped env; substitutes are drawn from a sampler seeded with ``seed``."""
        super().reset(seed=seed)
        obs, infos = self.env.reset(seed=seed, options=options)
        self._sampler = ActionSampler(seed)
        self._last_obs = {}
        self.illegal_actions = 0
        self._cannot_step = None
        self._note(obs, infos or {}, {}, {})
        return obs, infos

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the wrapped env; masked-out actions follow the policy.

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: a malformed dict or an action outside its space (any
                policy), or a masked-out action with ``policy="raise"``.
        """
        require_running(type(self).__name__, self._cannot_step)
        check_keys(type(self).__name__, action_dict, actors=self._actors,
                   possible_agents=self.possible_agents)
        offenders = {}
        for agent in self._actors:
            space = self.env.get_action_space(agent)
            action = check_action(agent, space, action_dict[agent])
            mask = self._masks.get(agent)
            if mask is not None and isinstance(space, gym.spaces.Discrete):
                if not mask[int(action) - int(space.start)]:
                    offenders[agent] = action
        if offenders and self.policy == "raise":
            agent = next(iter(offenders))
            check_action(agent, self.env.get_action_space(agent), offenders[agent],
                         self._masks[agent])
        if not offenders or self.policy == "raise":
            result = self.env.step(dict(action_dict))
            self._note(result[0], result[4] or {}, result[2], result[3])
            return result
        self.illegal_actions += len(offenders)
        if self.policy == "terminate":
            return self._terminate(offenders)
        return self._substitute(action_dict, offenders)

    def _substitute(self, action_dict: Mapping[AgentID, Any],
                    offenders: dict[AgentID, Any]) -> StepResult:
        actions = dict(action_dict)
        for agent in offenders:
            actions[agent] = self._sampler.sample(agent, self.env.get_action_space(agent),
                                                  self._masks[agent])
        obs, rewards, terminateds, truncateds, infos = self.env.step(actions)
        rewards, infos = dict(rewards), dict(infos or {})
        for agent, action in offenders.items():
            if self.penalty:  # in every objective of a vector reward
                rewards[agent] = rewards.get(agent, 0.0) + self._penalty_of(agent)
            if agent in obs:
                infos[agent] = {**infos.get(agent, {}), ILLEGAL_ACTION_KEY: action,
                                "substituted_action": actions[agent]}
        self._note(obs, infos, terminateds, truncateds)
        return obs, rewards, terminateds, truncateds, infos

    def _terminate(self, offenders: dict[AgentID, Any]) -> StepResult:
        present = [a for a in dict.fromkeys([*self._actors, *self.agents]) if a in self._last_obs]
        obs = {a: copy.deepcopy(self._last_obs[a]) for a in present}  # never the same object twice
        rewards = {a: (self._penalty_of(a) if a in offenders
                       else zero_reward(self.get_reward_space(a))) for a in present}
        terminateds: MultiAgentDict = {**dict.fromkeys(present, True), ALL: True}
        truncateds: MultiAgentDict = {**dict.fromkeys(present, False), ALL: False}
        infos: MultiAgentDict = {a: {} for a in present}
        for agent, action in offenders.items():
            infos[agent] = {ILLEGAL_ACTION_KEY: action}
        infos[COMMON] = {"illegal_actions": dict(offenders)}
        self._actors = []
        self._cannot_step = EPISODE_OVER
        return obs, rewards, terminateds, truncateds, infos

    def _penalty_of(self, agent: AgentID) -> Any:
        """The penalty as the agent's reward: a number, or the same in every objective."""
        space = self.get_reward_space(agent)
        return self.penalty if space is None else np.full(space.shape, self.penalty, space.dtype)

    def _note(self, obs: Mapping[Any, Any], infos: Mapping[Any, Any],
              terminateds: Mapping[Any, Any], truncateds: Mapping[Any, Any]) -> None:
        """Remember the last observations, who acts next and the binding masks."""
        self._last_obs.update(obs)
        self._actors = actors_of(obs, terminateds, truncateds)
        binding = masks_are_binding(self.env)
        self._masks = {}
        for agent in self._actors:
            info = infos.get(agent)
            self._masks[agent] = find_action_mask(
                obs[agent], info if isinstance(info, Mapping) else None) if binding else None
        if terminateds and episode_over(terminateds, truncateds):
            self._cannot_step = EPISODE_OVER

    def __repr__(self) -> str:
        return f"<IllegalActionWrapper {self.policy!r} of {self.env!r}>"
