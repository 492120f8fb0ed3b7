"""hub -> Gymnasium, all agents at once: :class:`JointView`, for simultaneous hub envs.

Made by :func:`marlhub.adapters.gymnasium.to_gymnasium` with ``joint=True``.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> view = JointView(RockPaperScissors())
    >>> obs, info = view.reset(seed=0)
    >>> sorted(obs), view.action_space
    (['player1', 'player2'], Dict('player1': Discrete(3), 'player2': Discrete(3)))
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Optional, SupportsFloat

import gymnasium as gym

from marlhub.adapters.gymnasium.driving import (
    DEFAULT_ILLEGAL_ACTION,
    DrivenView,
    HubDriver,
)
from marlhub.core import ALL, AgentID, MultiAgentDict
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, flag, require_running
from marlhub.errors import ActionError, NotParallelizableError

__all__ = ["JointView"]


class JointView(DrivenView, gym.Env):
    """All agents of a simultaneous hub env as one Gymnasium env with ``Dict`` spaces.

    Args:
        hub_env: the hub env; every live agent must act in every step.

    Attributes:
        hub_env: the hub env.
        possible_agents: the hub env's possible agents, the keys of the spaces.
    """

    observation_space: gym.spaces.Dict
    action_space: gym.spaces.Dict

    def __init__(self, hub_env: Any, *, illegal_action: str = DEFAULT_ILLEGAL_ACTION) -> None:
        self._drive(hub_env, illegal_action)
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
        self._hub = HubDriver(self._env)
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> tuple[dict, dict]:
        """Reset the hub env; return every agent's observation and ``{"agent_infos": infos}``.

        Raises:
            NotParallelizableError: not every possible agent got an observation.
        """
        super().reset(seed=seed)
        obs, infos = self._env.reset(seed=seed, options=options)
        self._hub.begin(obs, infos)
        self._cannot_step = None
        self._require_all_acting(list(obs), self.possible_agents)
        # Copies: an env may keep updating the dicts it returned (PettingZoo's infos).
        return {a: obs[a] for a in self._keys}, {"agent_infos": copy.deepcopy(dict(infos))}

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
        result = self._env.step(actions)
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
            "agent_infos": copy.deepcopy(dict(infos)),
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
        return check_action_dict("JointView", live_only, actors=live, possible_agents=self._keys,
                                 space_of=spaces.__getitem__)

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
