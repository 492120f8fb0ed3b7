"""PettingZoo parallel -> hub: :class:`ParallelPettingZooEnv`.

Drop-in for ``ray.rllib.env.wrappers.pettingzoo_env.ParallelPettingZooEnv``
(same constructor, ``par_env`` attribute) with the semantics of
docs/guides/pettingzoo.rst. Does not import PettingZoo.

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
from collections.abc import Set as AbstractSet
from typing import Any, Optional

from marlhub.adapters.pettingzoo.adapter import _PettingZooBase, own_arrays
from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict, ResetResult, StepResult
from marlhub.episode.actions import action_masks, spaces_hold_masks
from marlhub.episode.status import EPISODE_OVER, require_running
from marlhub.rewards import zero_reward

__all__ = ["ParallelPettingZooEnv"]

_NOBODY: frozenset[AgentID] = frozenset()


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
        self._masks: Optional[dict[AgentID, Any]] = None
        self._finished: set[AgentID] = set()
        # {agent: False} for the agents of the last done dicts that go on: a step whose
        # done dicts equal it (in C) has the same agents and none done.
        self._quiet: dict[AgentID, bool] = {}
        self._any_truncated = False
        # Whether an observation may be a mapping that holds a mask (from the spaces;
        # agents generated mid-episode may bring any space).
        self._obs_hold_masks = self._growing_agents or spaces_hold_masks(
            self.observation_spaces.values())

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the native env (seed and options passed through); return every actor's view."""
        super().reset(seed=seed)
        obs, infos = self.par_env.reset(seed=seed, options=options)
        self._forget_spaces()
        self._finished = set()
        self._quiet = {}
        self._any_truncated = False
        obs = dict(obs)
        infos = self._split_infos(obs, infos or {})
        self._cannot_step = None if obs else EPISODE_OVER
        self._note_actors(obs, infos, list(obs))
        return obs, infos

    def _split_infos(self, obs: Mapping[AgentID, Any], infos: Mapping[Any, Any]) -> dict[Any, Any]:
        """Keep the infos of agents in ``obs``; put keys that name no agent under ``__common__``."""
        if infos.keys() == obs.keys():  # the common case, in C
            return dict(infos)
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
                     actors: list[AgentID]) -> None:
        """Remember who acts next, and their masks (None when nobody has one)."""
        self._actors = actors
        self._masks = action_masks(actors, obs, infos, self._obs_hold_masks)
        if self._growing_agents:
            for a in actors:
                self._learn_agent(a)

    def _live_agents(self) -> list[AgentID]:
        return [a for a in self.par_env.agents if a not in self._finished]

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply every actor's action at once.

        The usual step (the native dicts keyed by exactly the actors, in their
        order, nobody done) is found by comparing lists of the same key objects,
        which C does without hashing, and costs a few passes of C code over the
        agents; any other step takes the general path, which mends the entries.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: an actor without an action, an action for anyone else, or an
                action outside its space or mask; nothing was applied.
        """
        if self._cannot_step is not None:
            require_running(type(self).__name__, self._cannot_step)
        actors = self._actors
        # The actions as the native env takes them (a 0-d array becomes an int).
        actions = self._checker.check_dict(self._name, action_dict, actors=actors,
                                           possible_agents=self.possible_agents, masks=self._masks)
        n_obs, n_rewards, n_terms, n_truncs, n_infos = self.par_env.step(actions)
        keys = list(n_obs)
        if keys == actors and n_terms == self._quiet and n_truncs == self._quiet \
                and list(n_rewards) == keys and n_infos and list(n_infos) == keys \
                and self._someone_live():
            obs, infos = dict(n_obs), dict(n_infos)
            terminateds = self._quiet.copy()
            truncateds = terminateds.copy()
            terminateds[ALL] = truncateds[ALL] = False
            self._note_actors(obs, infos, actors)
            rewards = dict(n_rewards) if self.reward_spaces is None else own_arrays(n_rewards)
            return obs, rewards, terminateds, truncateds, infos
        return self._mended_step(actors, n_obs, n_rewards, n_terms, n_truncs, n_infos)

    def _someone_live(self) -> bool:
        """Whether an agent of the native env's ``agents`` has not finished."""
        agents, finished = self.par_env.agents, self._finished
        return len(agents) > len(finished) or not finished.issuperset(agents)

    def _mended_step(self, actors: list[AgentID], n_obs: Mapping[AgentID, Any],
                     n_rewards: Mapping[AgentID, Any], n_terms: Mapping[AgentID, Any],
                     n_truncs: Mapping[AgentID, Any], n_infos: Any) -> StepResult:
        """The general step: entries of finished agents dropped, missing ones filled in."""
        finished = self._finished
        if finished and not (finished.isdisjoint(n_obs) and finished.isdisjoint(n_rewards)):
            n_obs = {a: o for a, o in n_obs.items() if a not in finished}
            n_rewards = {a: r for a, r in n_rewards.items() if a not in finished}
        obs = dict(n_obs)
        rewards = dict(n_rewards) if self.reward_spaces is None else own_arrays(n_rewards)
        terminateds, truncateds, ended = self._done_flags(n_terms, n_truncs)
        if not obs.keys() <= rewards.keys():
            for agent in actors:  # an agent that acted and still observes has a reward entry
                if agent in obs and agent not in rewards:
                    rewards[agent] = zero_reward(self.get_reward_space(agent)) \
                        if self.reward_spaces is not None else 0
        n_infos = n_infos or {}
        infos = dict(n_infos) if n_infos.keys() == obs.keys() else self._split_infos(obs, n_infos)
        if self._someone_live():
            terminateds[ALL] = False
            truncateds[ALL] = False
        else:
            self._cannot_step = EPISODE_OVER
            # Agents the env dropped without a flag ended by truncation of the episode.
            if not finished.issuperset(actors):
                self._any_truncated = True
            terminateds[ALL] = not self._any_truncated
            truncateds[ALL] = self._any_truncated
        next_actors = [a for a in obs if a not in ended] if ended else list(obs)
        self._note_actors(obs, infos, next_actors)
        return obs, rewards, terminateds, truncateds, infos

    def _done_flags(self, n_terms: Mapping[AgentID, Any], n_truncs: Mapping[AgentID, Any]
                    ) -> tuple[dict[Any, Any], dict[Any, Any], AbstractSet[AgentID]]:
        """Return the done dicts of the agents not finished before, and the agents that ended.

        Every reported agent gets ``bool`` flags; agents already finished are left out.
        """
        quiet = self._quiet
        if n_terms == quiet and n_truncs == quiet:  # the agents of the last step, none done
            return quiet.copy(), quiet.copy(), _NOBODY
        finished = self._finished
        terminateds: dict[Any, Any] = dict.fromkeys(n_terms, False)
        if n_truncs.keys() != terminateds.keys():
            terminateds.update(dict.fromkeys(n_truncs, False))
        if finished and not finished.isdisjoint(terminateds):
            for agent in finished.intersection(terminateds):
                del terminateds[agent]
        truncateds = terminateds.copy()
        ended_term = ([a for a, v in n_terms.items() if v and a not in finished]
                      if any(n_terms.values()) else [])
        ended_trunc = ([a for a, v in n_truncs.items() if v and a not in finished]
                       if any(n_truncs.values()) else [])
        for agent in ended_term:
            terminateds[agent] = True
        for agent in ended_trunc:
            truncateds[agent] = True
        ended = {*ended_term, *ended_trunc}
        if not ended.issubset(ended_term):
            self._any_truncated = True
        finished |= ended
        self._quiet = dict.fromkeys([a for a in terminateds if a not in ended], False)
        return terminateds, truncateds, ended
