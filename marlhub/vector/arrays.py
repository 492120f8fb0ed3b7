"""The array face of a vector env: per group of agents, arrays of ``(num_envs, num_agents, ...)``.

A vector env's copies share ``possible_agents``; agents with the same
observation and action spaces form a group (:func:`~marlhub.adapters.batched.group_agents`: one group
``"agents"`` when all agents agree, else TorchRL's ``"<name>_<int>"`` rule),
and each group's values are arrays with one row per copy and one column per
agent of the group, in ``possible_agents`` order. One reset or step of every
copy is an :class:`ArrayBatch`.

A natively batched source (:mod:`marlhub.vector.batched`) fills the arrays
straight from its simulator. For copies stepped one by one (sync and async
vector envs), :class:`DictArrays` builds them from the lists of per-copy
dicts: who acts (``acting``), who has been seen and is not done (``alive``),
zeros for slots without an observation in this call.

Example:
    >>> import gymnasium as gym
    >>> box, coin = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(2)
    >>> face = DictArrays(2, "next_step", {"car": ["car_0", "car_1"]}, lambda a: box,
    ...                   lambda a: coin)
    >>> batch = face.reset([{"car_0": np.ones(2)}, {}], [{}, {}], [["car_0"], []])
    >>> batch.obs["car"].shape, batch.acting["car"].tolist()
    ((2, 2, 2), [[True, False], [False, False]])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import concatenate, create_empty_array

from marlhub.core import ALL, AgentID
from marlhub.episode.status import done_agents, episode_over, flag
from marlhub.spaces import find_action_mask, zero_like
from marlhub.vector.base import DISABLED, NEXT_STEP, SAME_STEP
from marlhub.vector.copies import FINAL_OBS
from marlhub.vector.group_actions import GroupActions
from marlhub.vector.shared import obs_leaves

__all__ = ["ArrayBatch", "DictArrays", "reshape_rows"]


@dataclass
class ArrayBatch:
    """One ``reset`` or ``step`` of every copy, as arrays per group.

    Attributes:
        obs: group -> observations ``(num_envs, n, ...)`` (a dict of such arrays for
            ``Dict`` spaces); a slot with no observation in this call holds zeros.
        rewards: group -> rewards ``(num_envs, n)`` (zeros after a reset).
        terminated, truncated: group -> ``(num_envs, n)`` bools: the agent is done in
            this call (or the episode ended while it was alive).
        episode_terminated, episode_truncated: ``(num_envs,)`` bools, the ``"__all__"`` flags.
        acting: group -> ``(num_envs, n)`` bools: the slot acts in the next step (the
            others' actions are ignored).
        alive: group -> ``(num_envs, n)`` bools: the agent has been seen this episode and
            is not done.
        action_mask: group -> ``(num_envs, n, size)`` int8 masks, for groups whose
            agents have shown one (all ones for slots that do not act).
        infos: each copy's infos dict, as its dict face returns it (built when read,
            for a batched source).
        final_obs: under ``same_step``, group -> the observations of the step that
            ended the episode, for the rows of copies that ended and were reset (``obs``
            holds their reset observations); else None.
    """

    obs: dict[str, Any]
    rewards: dict[str, Any]
    terminated: dict[str, Any]
    truncated: dict[str, Any]
    episode_terminated: Any
    episode_truncated: Any
    acting: dict[str, Any]
    alive: dict[str, Any]
    action_mask: dict[str, Any] = field(default_factory=dict)
    infos: Sequence[Any] = ()
    final_obs: Optional[dict[str, Any]] = None


def reshape_rows(flat: Any, lead: tuple[int, ...]) -> Any:
    """Give ``flat`` (or each array of a nested dict or tuple) the leading shape ``lead``."""
    if isinstance(flat, dict):
        return {key: reshape_rows(value, lead) for key, value in flat.items()}
    if isinstance(flat, tuple):
        return tuple(reshape_rows(value, lead) for value in flat)
    return flat.reshape(lead + tuple(flat.shape[1:]))


class DictArrays:
    """Builds :class:`ArrayBatch` es from the lists of dicts of copies stepped one by one.

    Args:
        num_envs: how many copies.
        autoreset_mode: the vector env's autoreset mode.
        groups: group name -> agents.
        observation_space, action_space: each agent's spaces.
        env_name: the vector env's name, for messages.

    Attributes:
        checker: the checks of action arrays (:class:`~marlhub.vector.group_actions.GroupActions`).

    It keeps, per copy, who is alive and whether the episode ended, as seen in
    the calls it converts; feed it every ``reset`` and ``step`` of the vector env.
    """

    def __init__(self, num_envs: int, autoreset_mode: str, groups: Mapping[str, Sequence[AgentID]],
                 observation_space: Callable[[AgentID], gym.Space],
                 action_space: Callable[[AgentID], gym.Space], env_name: str = "vector env") -> None:
        self.num_envs = num_envs
        self.mode = autoreset_mode
        self.groups = {name: list(agents) for name, agents in groups.items()}
        self.spaces = {name: observation_space(agents[0]) for name, agents in self.groups.items()}
        self.action_spaces = {name: action_space(agents[0])
                              for name, agents in self.groups.items()}
        self.slot = {agent: (name, j) for name, agents in self.groups.items()
                     for j, agent in enumerate(agents)}
        self.blank = {name: zero_like(space) for name, space in self.spaces.items()}
        # Groups whose observations are fixed-size arrays are written slot by slot into
        # zeroed arrays; the others go through gymnasium's concatenate.
        self.leaves = {name: obs_leaves(space) for name, space in self.spaces.items()}
        self.mask_size: dict[str, int] = {}
        self.checker = GroupActions(env_name, num_envs, self.groups,
                                    {a: action_space(a) for a in self.slot})
        self.alive: list[set[AgentID]] = [set() for _ in range(num_envs)]
        self.ended = [False] * num_envs

    def reset(self, obs: Sequence[Mapping[Any, Any]], infos: Sequence[Any],
              actors: Sequence[Sequence[AgentID]], mask: Any = None) -> ArrayBatch:
        """Convert a ``reset`` (of the copies ``mask`` selects, or of all)."""
        for i, ob in enumerate(obs):
            if mask is None or mask[i]:
                self.alive[i] = set(ob)
                self.ended[i] = False
        zeros = self._zeros(np.float64)
        none = self._zeros(np.bool_)
        flags = np.zeros(self.num_envs, np.bool_)
        return self._batch(obs, infos, actors, zeros, none, self._zeros(np.bool_), flags,
                           flags.copy())

    def step(self, results: tuple[Sequence[Any], ...],
             actors: Sequence[Sequence[AgentID]]) -> ArrayBatch:
        """Convert a ``step``: the five lists of the dict face, and who acts next."""
        obs, rewards, terminateds, truncateds, infos = results
        reward_array = self._zeros(np.float64)
        terminated, truncated = self._zeros(np.bool_), self._zeros(np.bool_)
        episode_t = np.zeros(self.num_envs, np.bool_)
        episode_u = np.zeros(self.num_envs, np.bool_)
        final: Optional[dict[str, Any]] = None
        for i in range(self.num_envs):
            for agent, reward in rewards[i].items():
                name, j = self.slot[agent]
                reward_array[name][i, j] += float(reward)
            ended_now = self._record_ends(i, obs[i], terminateds[i], truncateds[i],
                                          terminated, truncated)
            if ended_now:
                episode_t[i] = flag(terminateds[i], ALL)
                episode_u[i] = flag(truncateds[i], ALL)
                if self.mode == SAME_STEP:
                    final = final if final is not None else self._final_rows()
                    self._fill_final(final, i, infos[i])
        batch = self._batch(obs, infos, actors, reward_array, terminated, truncated,
                            episode_t, episode_u)
        batch.final_obs = final
        return batch

    # -- helpers ------------------------------------------------------------------

    def _zeros(self, dtype: Any) -> dict[str, np.ndarray]:
        return {name: np.zeros((self.num_envs, len(agents)), dtype)
                for name, agents in self.groups.items()}

    def _record_ends(self, i: int, obs: Any, terminateds: Any, truncateds: Any,
                     terminated: dict[str, np.ndarray], truncated: dict[str, np.ndarray]) -> bool:
        """Set copy ``i``'s done flags per slot, update who is alive; tell whether it ended."""
        if self.ended[i]:  # this call reset the copy (next_step), or it stays ended
            self.ended[i] = self.mode == DISABLED
            self.alive[i] = set() if self.ended[i] else set(obs)
            return False
        alive = self.alive[i] | set(obs)
        for agent in done_agents(terminateds):
            name, j = self.slot[agent]
            terminated[name][i, j] = True
        for agent in done_agents(truncateds):
            name, j = self.slot[agent]
            truncated[name][i, j] = True
        over = episode_over(terminateds, truncateds)
        if over:
            for agent in alive:
                name, j = self.slot[agent]
                terminated[name][i, j] |= flag(terminateds, ALL)
                truncated[name][i, j] |= flag(truncateds, ALL)
            self.ended[i] = self.mode in (NEXT_STEP, DISABLED)
            alive = set() if self.ended[i] else set(obs)  # same_step: obs is the reset's
        else:
            alive -= done_agents(terminateds, truncateds)
        self.alive[i] = alive
        return over

    def _final_rows(self) -> dict[str, Any]:
        return {name: self._obs_rows([{}] * self.num_envs, name) for name in self.groups}

    def _fill_final(self, final: dict[str, Any], i: int, infos: Any) -> None:
        common = infos.get("__common__", {}) if isinstance(infos, Mapping) else {}
        final_obs = common.get(FINAL_OBS, {}) if isinstance(common, Mapping) else {}
        for name in self.groups:
            row = self._obs_rows([final_obs], name)
            _set_row(final[name], i, row)

    def _obs_rows(self, obs: Sequence[Mapping[Any, Any]], name: str) -> Any:
        leaves = self.leaves[name]
        if leaves is not None:
            return self._written_rows(obs, name, leaves)
        agents, blank, space = self.groups[name], self.blank[name], self.spaces[name]
        items = [ob.get(agent, blank) for ob in obs for agent in agents]
        out: Any = create_empty_array(space, n=len(items), fn=np.zeros)
        return reshape_rows(concatenate(space, items, out), (len(obs), len(agents)))

    def _written_rows(self, obs: Sequence[Mapping[Any, Any]], name: str,
                      leaves: list[Any]) -> Any:
        """:meth:`_obs_rows` of an array space: zeros, then each slot's observation written."""
        lead = (len(obs), len(self.groups[name]))
        slot = self.slot
        if leaves[0][0] is None:  # one array
            _, shape, dtype = leaves[0]
            out = np.zeros(lead + shape, dtype)
            for i, ob in enumerate(obs):
                for agent, value in ob.items():
                    group, j = slot[agent]
                    if group == name:
                        out[i, j] = value
            return out
        arrays = {key: np.zeros(lead + shape, dtype) for key, shape, dtype in leaves}
        for i, ob in enumerate(obs):
            for agent, value in ob.items():
                group, j = slot[agent]
                if group == name:
                    for key, array in arrays.items():
                        array[i, j] = value[key]
        return arrays

    def _batch(self, obs: Sequence[Any], infos: Sequence[Any], actors: Sequence[Sequence[AgentID]],
               rewards: dict[str, np.ndarray], terminated: dict[str, np.ndarray],
               truncated: dict[str, np.ndarray], episode_t: np.ndarray,
               episode_u: np.ndarray) -> ArrayBatch:
        acting, alive = self._zeros(np.bool_), self._zeros(np.bool_)
        masks: dict[str, np.ndarray] = {}
        for name, size in self.mask_size.items():
            masks[name] = np.ones((self.num_envs, len(self.groups[name]), size), np.int8)
        for i, copy_actors in enumerate(actors):
            for agent in copy_actors:
                name, j = self.slot[agent]
                acting[name][i, j] = True
                info = infos[i].get(agent) if isinstance(infos[i], Mapping) else None
                mask = find_action_mask(obs[i].get(agent), info)
                if mask is not None:
                    if name not in masks:  # the first mask seen: from now on, always an array
                        self.mask_size[name] = mask.size
                        masks[name] = np.ones((self.num_envs, len(self.groups[name]), mask.size),
                                              np.int8)
                    masks[name][i, j] = mask
            for agent in self.alive[i]:
                name, j = self.slot[agent]
                alive[name][i, j] = True
        return ArrayBatch(
            obs={name: self._obs_rows(obs, name) for name in self.groups}, rewards=rewards,
            terminated=terminated, truncated=truncated, episode_terminated=episode_t,
            episode_truncated=episode_u, acting=acting, alive=alive, action_mask=masks,
            infos=list(infos))


def _set_row(target: Any, i: int, rows: Any) -> None:
    if isinstance(target, dict):
        for key in target:
            _set_row(target[key], i, rows[key])
    elif isinstance(target, tuple):
        for sub, row in zip(target, rows):
            _set_row(sub, i, row)
    else:
        target[i] = rows[0]
