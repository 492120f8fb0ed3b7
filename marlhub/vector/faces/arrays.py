"""The array face: per group of agents, arrays of ``(num_envs, num_agents, ...)``.

Agents with the same spaces form a group (:func:`~marlhub.adapters.batched.group_agents`),
whose values have one row per copy and one column per agent. One reset or step of every
copy is an :class:`ArrayBatch`: a batched simulator fills it itself, and
:class:`DictArrays` builds it from the lists of dicts of copies stepped one by one.

Example:
    >>> import gymnasium as gym
    >>> box, coin = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(2)
    >>> face = DictArrays(2, {"car": ["car_0", "car_1"]}, lambda a: box,
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

from marlhub.adapters.batched import reward_shape
from marlhub.core import ALL, COMMON, AgentID
from marlhub.episode.status import truthy
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask, raw_action_mask, zero_like
from marlhub.vector.autoreset import ENDED_AND_RESET, FINAL_OBS, IDLE, RESTARTED, STEPPED
from marlhub.vector.faces.group_actions import GroupActions

__all__ = ["ArrayBatch", "DictArrays", "Leaf", "array_leaves", "final_obs_of", "obs_leaves",
           "reshape_rows", "row_index", "tree_map"]

#: One array of a slot: (key in a Dict observation or None, shape, dtype).
Leaf = tuple[Optional[str], tuple[int, ...], np.dtype]

_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.MultiBinary, gym.spaces.MultiDiscrete)


def array_leaves(space: gym.Space) -> Optional[list[Leaf]]:
    """The fixed-size arrays an observation of ``space`` is made of, or None.

    Example:
        >>> array_leaves(gym.spaces.Box(0, 1, (3,), np.float32))
        [(None, (3,), dtype('float32'))]
        >>> array_leaves(gym.spaces.Discrete(3)) is None
        True
    """
    if type(space) in _ARRAY_SPACES:
        return [(None, tuple(space.shape or ()), np.dtype(space.dtype))]
    if type(space) is gym.spaces.Dict and space.spaces:
        leaves: list[Leaf] = []
        for key, sub in space.spaces.items():
            if type(sub) not in _ARRAY_SPACES or not isinstance(key, str):
                return None
            leaves.append((key, tuple(sub.shape or ()), np.dtype(sub.dtype)))
        return leaves
    return None


def obs_leaves(space: gym.Space) -> Optional[list[Leaf]]:
    """:func:`array_leaves`, and a ``Discrete`` observation as one int64.

    Example:
        >>> obs_leaves(gym.spaces.Discrete(3))
        [(None, (), dtype('int64'))]
    """
    if type(space) is gym.spaces.Discrete:
        return [(None, (), np.dtype(np.int64))]
    return array_leaves(space)


@dataclass
class ArrayBatch:
    """One ``reset`` or ``step`` of every copy, as arrays per group.

    Attributes:
        obs: group -> ``(num_envs, n, ...)`` (dicts for ``Dict`` spaces; zeros: no observation).
        rewards, terminated, truncated: group -> ``(num_envs, n)`` (rewards ``(num_envs, n, k)``
            for agents paid arrays of k objectives); a slot is done when its agent is, or
            when the episode ended while it was alive.
        episode_terminated, episode_truncated: ``(num_envs,)``, the ``"__all__"`` flags.
        acting, alive: group -> ``(num_envs, n)``: acts next; seen this episode and not done.
        action_mask: group -> ``(num_envs, n, size)`` int8, once the group showed a mask.
        infos: each copy's infos dict, as the dict face returns it.
        final_obs: under ``same_step``, group -> the observations that ended the episode of
            the copies reset in the call; else None.
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


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``fn`` of an array, or of each array of nested dicts and tuples (an observation of a
    ``Dict`` or ``Tuple`` space, a group's values).

    Example:
        >>> tree_map(len, {"a": [1, 2], "b": ([3], [])})
        {'a': 2, 'b': (1, 0)}
    """
    if isinstance(tree, dict):
        return {key: tree_map(fn, value) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(tree_map(fn, value) for value in tree)
    return fn(tree)


def reshape_rows(flat: Any, lead: tuple[int, ...]) -> Any:
    """Give ``flat`` (or each array of a nested dict or tuple) the leading shape ``lead``."""
    return tree_map(lambda array: array.reshape(lead + tuple(array.shape[1:])), flat)


def row_index(rows: Sequence[int]) -> Any:
    """An index of the rows ``rows``: a slice when they are one ascending run (numpy slices
    several times faster than it gathers), else the list.

    Example:
        >>> row_index([4, 5, 6]), row_index([1, 3]), row_index([5, 4])
        (slice(4, 7, None), [1, 3], [5, 4])
    """
    rows = list(rows)
    if rows and rows == list(range(rows[0], rows[0] + len(rows))):
        return slice(rows[0], rows[0] + len(rows))
    return rows


class DictArrays:
    """Builds :class:`ArrayBatch` es of ``num_envs`` copies of ``groups`` from their dicts.

    Feed it every call with each copy's outcome (the book's): it keeps who is alive, never
    the autoreset rule. It returns new arrays, or fills ``out`` (a worker's shared rows).
    ``checker`` checks action arrays; ``mask_size``: group -> its mask size, once seen.
    """

    def __init__(self, num_envs: int, groups: Mapping[str, Sequence[AgentID]],
                 observation_space: Callable[[AgentID], gym.Space],
                 action_space: Callable[[AgentID], gym.Space], env_name: str = "vector env",
                 reward_space: Callable[[AgentID], Optional[gym.Space]] = lambda a: None) -> None:
        self.num_envs = num_envs
        self.groups = {name: list(agents) for name, agents in groups.items()}
        self.spaces = {name: observation_space(agents[0]) for name, agents in self.groups.items()}
        self.action_spaces = {name: action_space(agents[0])
                              for name, agents in self.groups.items()}
        self.reward_shapes = {n: reward_shape(reward_space(a[0])) for n, a in self.groups.items()}
        self.slot = {agent: (name, j) for name, agents in self.groups.items()
                     for j, agent in enumerate(agents)}
        self.blank = {name: zero_like(space) for name, space in self.spaces.items()}
        # fixed-size observations are written slot by slot; others through concatenate
        self.leaves = {name: obs_leaves(space) for name, space in self.spaces.items()}
        self.mask_size: dict[str, int] = {}
        self.checker = GroupActions(env_name, num_envs, self.groups,
                                    {a: action_space(a) for a in self.slot})
        self.alive: list[set[AgentID]] = [set() for _ in range(num_envs)]
        # final observations written into ``out`` since it was zeroed whole
        self._final_filled = False

    def reset(self, obs: Sequence[Mapping[Any, Any]], infos: Sequence[Any],
              actors: Sequence[Sequence[AgentID]], mask: Any = None,
              out: Optional[ArrayBatch] = None,
              rows: Optional[Sequence[int]] = None) -> ArrayBatch:
        """Convert a ``reset`` (of the copies ``mask`` selects, or all). ``rows``: the copies
        of ``obs`` and ``infos`` (``recv()``), the rows of the batch, or of ``out``."""
        copies = range(self.num_envs) if rows is None else rows
        for i, ob in zip(copies, obs):
            if mask is None or mask[i]:
                self.alive[i] = set(ob)
        batch = self._target(out, rows)
        return self._fill(batch, obs, infos, actors, out is None, rows)

    def step(self, results: tuple[Sequence[Any], ...], actors: Sequence[Sequence[AgentID]],
             outcomes: Sequence[int], out: Optional[ArrayBatch] = None,
             rows: Optional[Sequence[int]] = None) -> ArrayBatch:
        """Convert a ``step``: the five lists, who acts next and each copy's ``outcomes`` (a
        reset that arrives as a step's results is ``RESTARTED``); ``rows``: as in :meth:`reset`."""
        obs, rewards, terminateds, truncateds, infos = results
        batch = self._target(out, rows)
        final_rows = out.final_obs if out is not None else None
        slot, alive = self.slot, self.alive
        reward_rows, done_t, done_u = batch.rewards, batch.terminated, batch.truncated
        episode_t, episode_u = batch.episode_terminated, batch.episode_truncated
        count = len(obs)
        for k, (ob, rewards_i, flags_t, flags_u) in enumerate(zip(obs, rewards, terminateds,
                                                                   truncateds)):
            i = k if rows is None else rows[k]  # the copy
            p = i if out is not None else k  # its row in the batch
            for agent, reward in rewards_i.items():
                if type(reward) is np.ndarray or reward:  # zeros stay as they are
                    name, j = slot[agent]
                    reward_rows[name][p, j] = reward
            outcome = outcomes[i]
            if outcome == RESTARTED or outcome == IDLE:  # reset instead of stepped, or ended
                alive[i] = set(ob) if outcome == RESTARTED else set()
                continue
            now_alive = alive[i].union(ob)
            done = _flag_slots(flags_t, slot, done_t, p) \
                if len(flags_t) > 1 or ALL not in flags_t else []
            if len(flags_u) > 1 or ALL not in flags_u:
                done += _flag_slots(flags_u, slot, done_u, p)
            all_t, all_u = flags_t.get(ALL, False), flags_u.get(ALL, False)
            if type(all_t) is not bool or type(all_u) is not bool:
                all_t, all_u = truthy(all_t), truthy(all_u)
            if outcome == STEPPED:
                alive[i] = now_alive.difference(done) if done else now_alive
                continue
            reset_too = outcome == ENDED_AND_RESET
            if reset_too:  # ``ob`` is the next episode's: the ending step's obs is the final obs
                now_alive = alive[i].union(final_obs_of(infos[k]))
            for agent in now_alive:  # the episode ended while they were alive
                name, j = slot[agent]
                if all_t:
                    done_t[name][p, j] = True
                if all_u:
                    done_u[name][p, j] = True
            episode_t[p], episode_u[p] = all_t, all_u
            alive[i] = set(ob) if reset_too else set()  # same_step: obs is the reset's
            if reset_too:
                if final_rows is None:
                    final_rows = {name: self._obs_rows([{}] * count, name) for name in self.groups}
                self._fill_final(final_rows, p, infos[k])
                self._final_filled = True
        if out is None:
            batch.final_obs = final_rows
        return self._fill(batch, obs, infos, actors, out is None, rows)

    # -- helpers ------------------------------------------------------------------

    def _target(self, out: Optional[ArrayBatch], rows: Optional[Sequence[int]]) -> ArrayBatch:
        """``out`` cleared (zeros, masks ones; only ``rows`` if given), or a new batch of zeros."""
        filled, self._final_filled = self._final_filled, self._final_filled and rows is not None
        if out is None:
            n = self.num_envs if rows is None else len(rows)
            masks = {name: np.ones((n, len(self.groups[name]), size), np.int8)
                     for name, size in self.mask_size.items()}
            return ArrayBatch(
                obs={name: _zeros_of(self.leaves[name], (n, len(agents)))
                     for name, agents in self.groups.items() if self.leaves[name] is not None},
                rewards={name: np.zeros((n, len(agents)) + self.reward_shapes[name])
                         for name, agents in self.groups.items()},
                terminated=self._zeros(np.bool_, n),
                truncated=self._zeros(np.bool_, n), episode_terminated=np.zeros(n, np.bool_),
                episode_truncated=np.zeros(n, np.bool_), acting=self._zeros(np.bool_, n),
                alive=self._zeros(np.bool_, n), action_mask=masks)
        where = slice(None) if rows is None else row_index(rows)
        if out.final_obs is not None and (filled or rows is not None):
            _zero(out.final_obs, where)
        for name in self.groups:
            _zero(out.obs[name], where)
            for arrays in (out.rewards, out.terminated, out.truncated, out.acting, out.alive):
                arrays[name][where] = 0
        for mask in out.action_mask.values():
            mask[where] = 1
        out.episode_terminated[where] = False
        out.episode_truncated[where] = False
        return out

    def _zeros(self, dtype: Any, n: int) -> dict[str, np.ndarray]:
        return {name: np.zeros((n, len(agents)), dtype) for name, agents in self.groups.items()}

    def _fill(self, batch: ArrayBatch, obs: Sequence[Any], infos: Sequence[Any],
              actors: Sequence[Sequence[AgentID]], fresh: bool,
              rows: Optional[Sequence[int]] = None) -> ArrayBatch:
        """Write who acts, their masks, who is alive and the observations into ``batch``
        (``fresh``: made in this call; ``rows``: as in :meth:`reset`)."""
        slot, acting, alive = self.slot, batch.acting, batch.alive
        written = {name: array for name, array in batch.obs.items()
                   if self.leaves[name] is not None}
        for k, (ob, info) in enumerate(zip(obs, infos)):
            c = k if rows is None else rows[k]  # the copy
            i = k if fresh else c  # its row in the batch
            copy_actors = actors[c]
            if not (type(info) is dict or isinstance(info, Mapping)) or not info:
                info = None
            for agent in copy_actors:
                name, j = slot[agent]
                acting[name][i, j] = True
                observation = ob.get(agent)
                mask = observation.get(ACTION_MASK_KEY) if type(observation) is dict else None
                if mask is None and (info is not None
                                     or type(observation) not in (dict, np.ndarray)):
                    mask = raw_action_mask(observation, info.get(agent) if info else None)
                if mask is None:
                    continue
                masks = batch.action_mask.get(name)
                if masks is not None and type(mask) is np.ndarray and mask.ndim == 1 \
                        and name in self.mask_size:
                    masks[i, j] = mask
                else:
                    self._put_mask(batch, name, i, j, mask, fresh)
            for agent in self.alive[c]:
                name, j = slot[agent]
                alive[name][i, j] = True
            for agent, value in ob.items():
                name, j = slot[agent]
                target = written.get(name)
                if target is None:
                    continue  # a group without fixed-size observations: concatenated below
                if type(target) is dict:
                    for key, array in target.items():
                        array[i, j] = value[key]
                else:
                    target[i, j] = value
        for name in self.groups:
            if name not in written:
                batch.obs[name] = self._obs_rows(obs, name)
        batch.infos = list(infos)
        return batch

    def _put_mask(self, batch: ArrayBatch, name: str, i: int, j: int, mask: Any,
                  fresh: bool) -> None:
        flat: Any = mask if type(mask) is np.ndarray and mask.ndim == 1 else find_action_mask(mask)
        masks = batch.action_mask.get(name)
        if name not in self.mask_size:  # the first mask seen: from now on, always an array
            self.mask_size[name] = flat.size
            if masks is None and fresh:
                masks = batch.action_mask[name] = np.ones(
                    (len(batch.episode_terminated), len(self.groups[name]), flat.size), np.int8)
        if masks is not None:  # (``out`` may keep no masks for the group)
            masks[i, j] = flat

    def _fill_final(self, final: dict[str, Any], i: int, infos: Any) -> None:
        final_obs = final_obs_of(infos)
        for name in self.groups:
            if self.leaves[name] is None:  # no fixed size: through gymnasium's concatenate
                _set_row(final[name], i, self._obs_rows([final_obs], name))
        for agent, value in final_obs.items():  # the rows hold zeros: write the slots seen
            name, j = self.slot[agent]
            if self.leaves[name] is not None:
                _put(final[name], i, j, value)

    def _obs_rows(self, obs: Sequence[Mapping[Any, Any]], name: str) -> Any:
        leaves = self.leaves[name]
        if leaves is not None:
            out = _zeros_of(leaves, (len(obs), len(self.groups[name])))
            for i, ob in enumerate(obs):
                for agent, value in ob.items():
                    group, j = self.slot[agent]
                    if group == name:
                        _put(out, i, j, value)
            return out
        agents, blank, space = self.groups[name], self.blank[name], self.spaces[name]
        items = [ob.get(agent, blank) for ob in obs for agent in agents]
        rows: Any = create_empty_array(space, n=len(items), fn=np.zeros)
        return reshape_rows(concatenate(space, items, rows), (len(obs), len(agents)))


def final_obs_of(infos: Any) -> Mapping[Any, Any]:
    """The obs dict that ended a copy's episode under ``same_step`` (``{}`` if none), from the
    infos of the step that reset it.

    Example:
        >>> final_obs_of({"__common__": {"final_obs": {"a": 1}}}), final_obs_of({})
        ({'a': 1}, {})
    """
    common = infos.get(COMMON, {}) if isinstance(infos, Mapping) else {}
    final_obs = common.get(FINAL_OBS, {}) if isinstance(common, Mapping) else {}
    return final_obs if isinstance(final_obs, Mapping) else {}


def _flag_slots(flags: Mapping[Any, Any], slot: Mapping[AgentID, tuple[str, int]],
                target: dict[str, np.ndarray], i: int) -> list[AgentID]:
    """Set row ``i`` of ``target`` for the agents a done dict flags; return them."""
    done = []
    for agent, value in flags.items():
        if agent != ALL and (value is True or (value is not False and truthy(value))):
            name, j = slot[agent]
            target[name][i, j] = True
            done.append(agent)
    return done


def _zeros_of(leaves: Any, lead: tuple[int, ...]) -> Any:
    """Zeros for the observations of a group whose observations are the arrays ``leaves``."""
    if leaves[0][0] is None:  # one array
        _, shape, dtype = leaves[0]
        return np.zeros(lead + shape, dtype)
    return {key: np.zeros(lead + shape, dtype) for key, shape, dtype in leaves}


def _put(target: Any, i: int, j: int, value: Any) -> None:
    """Write one slot's observation into an array, or into each array of a dict of them."""
    if type(target) is dict:
        for key, array in target.items():
            array[i, j] = value[key]
    else:
        target[i, j] = value


def _zero(target: Any, where: Any) -> None:
    """Zero the rows ``where`` of an array, or of each array of a nested dict."""
    tree_map(lambda array: array.__setitem__(where, 0), target)


def _set_row(target: Any, i: int, rows: Any) -> None:
    if isinstance(target, dict):
        for key in target:
            _set_row(target[key], i, rows[key])
    elif isinstance(target, tuple):
        for sub, row in zip(target, rows):
            _set_row(sub, i, row)
    else:
        target[i] = rows[0]
