"""Steps shaped so that RLlib's sampler keeps every reward: :class:`RewardCarrier`.

RLlib's ``MultiAgentEpisode`` (ray 2.60, ``env/multi_agent_episode.py``, EP)
keeps a reward only inside a transition of the agent (observation, action, next
observation). It drops, without an error:

* a reward an agent gets before or with its first observation (EP:530, 613: a
  cache that never reaches the agent's transitions);
* everything of an agent whose first observation comes in the step that ends it
  (EP:514-516: it "never stepped");
* the last transition and reward of an agent that ends without a final
  observation, once a sample boundary fell inside the episode (EP:556, 600
  reuse the last observation, which a cut-off chunk does not hold).

RLlib also turns a truncation into a termination when per-agent truncated flags
name every agent of the episode (EP:413-416), so values are not bootstrapped.

:class:`RewardCarrier` reshapes each step of a hub env (it never changes what
the hub env is sent or returns, only what RLlib is shown):

* a reward for an agent that has not acted yet is held and added to its first
  transition's reward (the step it first acts in);
* an agent that acted and ends without a final observation gets its last one
  again (what RLlib itself does, but robust to sample boundaries);
* an agent that ends with rewards held but never acted is *settled*: its final
  observation comes as a last observation to act on, its action is dropped, and
  the next step closes it with its rewards; when the episode ends for all, the
  end is deferred by that one step for every agent, so the others' final
  transitions are closed in the same step;
* ``truncateds`` of a step that truncates all (``__all__``) holds ``__all__``
  only: RLlib sets every agent truncated from it.

Example:
    >>> carrier = RewardCarrier()
    >>> carrier.on_reset({"a": 0})
    >>> carrier.on_step({"a": 1}, ({"a": 1}, {"a": 0.0, "b": -1.0}, {"__all__": False},
    ...                            {"__all__": False}, {}))[1]        # 'b' has not acted: held
    {'a': 0.0}
    >>> carrier.pending
    {'b': -1.0}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict, StepResult
from marlhub.episode.status import truthy
from marlhub.rewards import zero_reward

__all__ = ["RewardCarrier"]


@dataclass
class _Ending:
    """An agent's end, held back for one step: its final obs, info and done flags."""

    obs: Any
    info: Any
    terminated: bool
    truncated: bool


class RewardCarrier:
    """Follow one episode at a time and reshape its steps so RLlib's episodes keep every reward.

    Args:
        reward_spaces: the declared reward spaces of the agents paid arrays (multi-objective
            envs): an agent paid nothing gets zeros of its space there, ``0.0`` elsewhere.

    Attributes:
        pending: rewards held for agents that have not acted yet, by agent.
        settling: agents shown a last observation to act on; closed at the next step.
        acted: agents that acted in the current episode.
    """

    def __init__(self, reward_spaces: Optional[Mapping[AgentID, Any]] = None) -> None:
        self._reward_spaces = dict(reward_spaces or {})
        self.pending: dict[AgentID, Any] = {}
        self.settling: dict[AgentID, _Ending] = {}
        self.acted: set[AgentID] = set()
        self._last_obs: dict[AgentID, Any] = {}
        self._done: set[AgentID] = set()
        # The episode's end, deferred by one step for its settling agents:
        # (terminated __all__, truncated __all__, the other agents' endings).
        self._deferred: Optional[tuple[bool, bool, dict[AgentID, _Ending]]] = None

    @property
    def deferred_end(self) -> bool:
        """Whether the hub env's episode is over and only the settling step is left."""
        return self._deferred is not None

    def on_reset(self, obs: Mapping[AgentID, Any]) -> None:
        """Start a new episode from the observations ``reset`` returned."""
        self.pending = {}
        self.settling = {}
        self.acted = set()
        self._last_obs = dict(obs)
        self._done = set()
        self._deferred = None

    def actions_for_env(self, action_dict: Mapping[AgentID, Any]) -> MultiAgentDict:
        """Return ``action_dict`` without the settling agents' actions (the hub env is done
        with them)."""
        if not self.settling:
            return dict(action_dict)
        return {a: v for a, v in action_dict.items() if a not in self.settling}

    def finish(self, action_dict: Mapping[AgentID, Any]) -> StepResult:
        """Return the deferred last step: every ending agent's final obs, the held rewards."""
        if self._deferred is None:
            raise RuntimeError("finish() without a deferred end")
        terminated_all, truncated_all, others = self._deferred
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        self._close_settling(obs, rewards, terminateds, truncateds, infos)
        for agent, ending in others.items():
            obs[agent] = ending.obs
            rewards[agent] = self._zero(agent)  # its reward came in the step the hub env ended
            if ending.info is not None:
                infos[agent] = ending.info
        terminateds[ALL] = terminated_all
        truncateds[ALL] = truncated_all
        self._deferred = None
        return self._shown(obs, rewards, terminateds, truncateds, infos)

    def on_step(self, action_dict: Mapping[AgentID, Any], result: StepResult) -> StepResult:
        """Reshape one step of the hub env (``action_dict`` as RLlib sent it)."""
        obs, rewards, terminateds, truncateds, infos = (dict(table) for table in result)
        terminateds.setdefault(ALL, False)
        truncateds.setdefault(ALL, False)
        self.acted.update(action_dict)
        self._close_settling(obs, rewards, terminateds, truncateds, infos)
        for agent in list(rewards):
            if agent not in self.acted:
                self.pending[agent] = self.pending.get(agent, 0.0) + rewards.pop(agent)
        for agent in [a for a in self.pending if a in self.acted]:
            rewards[agent] = rewards.get(agent, 0.0) + self.pending.pop(agent)

        over = truthy(terminateds[ALL]) or truthy(truncateds[ALL])
        ending = [a for a in dict.fromkeys([*obs, *terminateds, *truncateds, *self.acted,
                                            *self.pending, *self._last_obs])
                  if a not in (ALL, COMMON) and a not in self._done
                  and (over or _flagged(terminateds, a) or _flagged(truncateds, a))]
        for agent in ending:
            if agent in self.acted:
                if agent not in obs and agent in self._last_obs:
                    obs[agent] = self._last_obs[agent]  # RLlib's own stand-in, kept across cuts
                    rewards.setdefault(agent, self._zero(agent))
            elif agent in obs and _nonzero(self.pending.get(agent, 0.0)):
                self.settling[agent] = _Ending(
                    obs[agent], infos.get(agent),
                    _flagged(terminateds, agent) or truthy(terminateds[ALL]),
                    _flagged(truncateds, agent) or truthy(truncateds[ALL]),
                )
                terminateds.pop(agent, None)
                truncateds.pop(agent, None)
        if over and self.settling:
            others = {}
            for agent in ending:
                if agent in self.settling or agent not in obs:
                    continue
                others[agent] = _Ending(obs.pop(agent), infos.pop(agent, None),
                                        _flagged(terminateds, agent), _flagged(truncateds, agent))
            self._deferred = (truthy(terminateds[ALL]), truthy(truncateds[ALL]), others)
            terminateds = {ALL: False}
            truncateds = {ALL: False}
        else:
            self._done.update(ending)
        return self._shown(obs, rewards, terminateds, truncateds, infos)

    def _close_settling(self, obs: MultiAgentDict, rewards: MultiAgentDict,
                        terminateds: MultiAgentDict, truncateds: MultiAgentDict,
                        infos: MultiAgentDict) -> None:
        for agent, ending in self.settling.items():
            obs[agent] = ending.obs
            rewards[agent] = self.pending.pop(agent) if agent in self.pending \
                else self._zero(agent)
            if ending.info is not None:
                infos[agent] = ending.info
            if ending.terminated:
                terminateds[agent] = True
            if ending.truncated:
                truncateds[agent] = True
            self._done.add(agent)
        self.settling = {}

    def _shown(self, obs: MultiAgentDict, rewards: MultiAgentDict, terminateds: MultiAgentDict,
               truncateds: MultiAgentDict, infos: MultiAgentDict) -> StepResult:
        if truthy(truncateds.get(ALL, False)):
            # __all__ truncates every agent; per-agent flags naming all of them make RLlib
            # call the episode terminated (EP:413-416).
            truncateds = {a: v for a, v in truncateds.items()
                          if a == ALL or not truthy(v) or _flagged(terminateds, a)}
        self._last_obs.update(obs)
        return obs, rewards, terminateds, truncateds, infos

    def _zero(self, agent: AgentID) -> Any:
        """What an agent paid nothing gets: ``0.0``, or zeros of its reward space."""
        return zero_reward(self._reward_spaces.get(agent))


def _nonzero(reward: Any) -> bool:
    return bool(np.any(np.asarray(reward) != 0))


def _flagged(table: Mapping[Any, Any], agent: AgentID) -> bool:
    return truthy(table.get(agent, False))
