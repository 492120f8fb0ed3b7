"""PettingZoo parallel -> hub: :class:`ParallelPettingZooEnv`.

Drop-in for ``ray.rllib.env.wrappers.pettingzoo_env.ParallelPettingZooEnv``
(same constructor, ``par_env`` attribute) with the semantics of DESIGN.md
section 3. Does not import PettingZoo.

Example:
    >>> import pettingzoo
    >>> env = ParallelPettingZooEnv(pettingzoo.make("parallel", "classic/rps-v2", max_cycles=1))
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs)
    ['player_0', 'player_1']
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_0": 1, "player_1": 0})
    >>> rewards, truncateds
    ({'player_0': 1, 'player_1': -1}, {'player_0': True, 'player_1': True, '__all__': True})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from marlhub.adapters.pettingzoo.adapter import _PettingZooBase
from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict, ResetResult, StepResult
from marlhub.episode.actions import check_keys
from marlhub.episode.status import EPISODE_OVER, require_running
from marlhub.spaces import raw_action_mask

__all__ = ["ParallelPettingZooEnv"]


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
        self._actor_obs: Mapping[AgentID, Any] = {}
        self._actor_infos: Mapping[AgentID, Any] = {}
        self._finished: set[AgentID] = set()
        self._any_truncated = False

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the native env (seed and options passed through); return every actor's view."""
        super().reset(seed=seed)
        obs, infos = self.par_env.reset(seed=seed, options=options)
        self._forget_spaces()
        self._finished = set()
        self._any_truncated = False
        obs = dict(obs)
        infos = self._split_infos(obs, infos or {})
        self._cannot_step = None if obs else EPISODE_OVER
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
        self._actor_obs = obs
        self._actor_infos = infos
        if self._growing_agents:
            for a in actors:
                self._learn_agent(a)

    def _live_agents(self) -> list[AgentID]:
        return [a for a in self.par_env.agents if a not in self._finished]

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply every actor's action at once.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: an actor without an action, an action for anyone else, or an
                action outside its space or mask; nothing was applied.
        """
        require_running(type(self).__name__, self._cannot_step)
        actors = self._actors
        if type(action_dict) is not dict or len(action_dict) != len(actors) or any(
            a not in action_dict for a in actors
        ):
            check_keys(self._name, action_dict, actors=actors, possible_agents=self.possible_agents)
        obs_of, infos_of = self._actor_obs, self._actor_infos
        # The actions as the native env takes them (a 0-d array becomes an int).
        action_dict = {agent: self._checker.check(agent, action_dict[agent],
                                                  raw_action_mask(obs_of.get(agent),
                                                                  infos_of.get(agent)))
                       for agent in actors}

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
            self._cannot_step = EPISODE_OVER
            # Agents the env dropped without a flag ended by truncation of the episode.
            if any(a not in finished for a in actors):
                self._any_truncated = True
            terminateds[ALL] = not self._any_truncated
            truncateds[ALL] = self._any_truncated
        self._note_actors(obs, infos, terminateds, truncateds)
        return obs, rewards, terminateds, truncateds, infos
