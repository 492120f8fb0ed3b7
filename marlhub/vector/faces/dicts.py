"""The dict face of a batched vector env: lists of per-copy dicts, built from its arrays.

A :class:`~marlhub.vector.sources.batched.BatchedVectorEnv` steps arrays; its ``reset``
and ``step`` take and return lists of per-copy dicts, exactly as
:class:`~marlhub.vector.SyncVectorMultiAgentEnv` does (the same
:class:`~marlhub.vector.book.CopyBook` checks the action dicts and keeps who
acts), by reading the arrays row by row (:class:`DictFace`). A copy's infos are
built only when read (:class:`LazyInfos`), so the array face pays nothing for them.

Example:
    >>> import marlhub
    >>> envs = marlhub.make_vec("vmas/balance", 2, {"max_steps": 1})
    >>> obs, infos = envs.reset(seed=0)
    >>> sorted(obs[1]), obs[1]["agent_0"].shape, sorted(infos[1]["agent_0"])
    (['agent_0', 'agent_1', 'agent_2'], (16,), ['ground_rew', 'pos_rew'])
    >>> still = [{a: np.zeros(2, np.float32) for a in ob} for ob in obs]
    >>> obs, rewards, terminateds, truncateds, infos = envs.step(still)
    >>> truncateds[0]["__all__"], envs.actors
    (True, [[], []])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from marlhub.adapters.batched import to_numpy
from marlhub.core import ALL, COMMON, AgentID
from marlhub.spaces import ACTION_MASK_KEY
from marlhub.vector.autoreset import ENDED_AND_RESET, IDLE, RESTARTED, same_step_infos
from marlhub.vector.book import CopyBook
from marlhub.vector.ready import ReadyCopies

__all__ = ["DictFace", "LazyInfos"]


class LazyInfos(Sequence):
    """Each copy's infos dict, built from per-group info arrays when read.

    Args:
        env: the batched vector env (for its groups).
        arrays: group -> key -> ``(num_envs, n, ...)``.
        final: under ``same_step``, ``(infos of the ending step, which copies ended, final
            obs arrays, per group the slots that ended in it)``: those copies' infos also
            carry ``"final_obs"`` (of those agents) and ``"final_info"`` under
            ``"__common__"``.
        common: infos of whole copies (``(num_envs, ...)`` arrays, any nesting), under
            ``"__common__"``; ``common_rows`` says which copies have them.

    Attributes:
        batch: the :class:`~marlhub.vector.faces.arrays.ArrayBatch` these infos belong to; its
            action masks go to the infos of the agents that act.
    """

    def __init__(self, env: Any, arrays: Mapping[str, Mapping[str, Any]],
                 final: Optional[tuple[Any, Any, Any, Any]] = None, *, common: Any = None,
                 common_rows: Any = None) -> None:
        self.groups = env.groups
        self.num_envs = env.num_envs
        self.arrays = dict(arrays)
        self.final = final
        self.common = common
        self.common_rows = np.ones(self.num_envs, bool) if common_rows is None else common_rows
        self.batch: Any = None

    def with_final(self, final: tuple[Any, Any, Any, Any]) -> "LazyInfos":
        """The same infos, with ``same_step``'s final obs and infos (see the class)."""
        return LazyInfos(self, self.arrays, final, common=self.common,
                         common_rows=self.common_rows)

    def with_rows_reset(self, arrays: Mapping[str, Mapping[str, Any]],
                        rows: Any) -> "LazyInfos":
        """The infos after the copies of ``rows`` were reset: ``arrays``, no common infos."""
        common_rows = self.common_rows.copy()
        common_rows[rows] = False
        return LazyInfos(self, arrays, self.final, common=self.common, common_rows=common_rows)

    def __len__(self) -> int:
        return self.num_envs

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self.num_envs))]
        if not -self.num_envs <= i < self.num_envs:
            raise IndexError(f"copy {i} of {self.num_envs}")
        i = i % self.num_envs
        infos = self.agent_infos(i)
        if self.final is not None and self.final[1][i]:
            final_infos, _, final_obs, seen = self.final
            agents = {a for name, members in self.groups.items() for j, a in enumerate(members)
                      if seen[name][i, j]}
            infos = same_step_infos(obs_of_copy(self.groups, final_obs, i, agents),
                                    final_infos[i], infos)
        return infos

    def agent_infos(self, i: int, agents: Optional[Any] = None) -> dict[Any, Any]:
        """Copy ``i``'s infos of ``agents`` (every agent by default), masks and common infos."""
        infos: dict[Any, Any] = {}
        masks = self.batch.action_mask if self.batch is not None else {}
        acting = self.batch.acting if self.batch is not None else {}
        for name, members in self.groups.items():
            keys = self.arrays.get(name)
            for j, agent in enumerate(members):
                if agents is not None and agent not in agents:
                    continue
                if keys is not None:
                    infos[agent] = {key: value[i, j, ...] for key, value in keys.items()}
                if name in masks and acting[name][i, j]:
                    infos.setdefault(agent, {})[ACTION_MASK_KEY] = masks[name][i, j]
        if self.common is not None and self.common_rows[i]:
            infos[COMMON] = _row(self.common, i)
        return infos


def _row(tree: Any, i: int) -> Any:
    if isinstance(tree, dict):
        return {k: _row(v, i) for k, v in tree.items()}
    return tree[i]


def obs_of_copy(groups: Mapping[str, Sequence[AgentID]], obs: Mapping[str, Any], i: int,
                agents: Optional[Any] = None) -> dict[AgentID, Any]:
    """Copy ``i``'s obs dict from the per-group arrays (only ``agents``, when given)."""
    found: dict[AgentID, Any] = {}
    for name, members in groups.items():
        rows = obs[name]
        for j, agent in enumerate(members):
            if agents is None or agent in agents:
                found[agent] = _item(rows, i, j)
    return found


def _item(rows: Any, i: int, j: int) -> Any:
    if isinstance(rows, dict):
        return {key: _item(value, i, j) for key, value in rows.items()}
    return rows[i, j]


class DictFace:
    """``reset`` and ``step`` with lists of per-copy dicts over a batched vector env.

    Args:
        env: the :class:`~marlhub.vector.sources.batched.BatchedVectorEnv`.
        batch_size: how many copies ``recv`` returns (the book's cycle).
    """

    def __init__(self, env: Any, batch_size: Optional[int] = None) -> None:
        self.env = env
        spaces = env.single_action_spaces
        self.book = CopyBook(env.name(), env.num_envs, env.autoreset_mode,
                             [env.possible_agents] * env.num_envs,
                             [spaces.__getitem__] * env.num_envs,
                             [env.check_masks] * env.num_envs,
                             ReadyCopies(env.name(), env.num_envs, batch_size), faces_mix=True)
        #: Whether the book holds the last call; False after a call of the array face.
        self.synced = True

    def sync(self, batch: Any, ended: Any, final_flags: Any) -> None:
        """Bring the book up to the array face's last call (the dict face comes next)."""
        book = self.book
        obs, infos = [], []
        for i in range(self.env.num_envs):
            acting = self._acting(batch, i)
            obs.append(obs_of_copy(self.env.groups, to_numpy(batch.obs), i, acting))
            infos.append(batch.infos.agent_infos(i, acting))
        book.record_reset(obs, infos)
        for row in np.flatnonzero(ended):
            book.ended[row], book.actors[row] = True, []
            book.final_flags[row] = (bool(final_flags[row, 0]), bool(final_flags[row, 1]))
        self.synced = True

    def reset(self, batch: Any, mask: Any = None) -> tuple[list[Any], list[Any]]:
        """The obs and infos lists of a reset (of the copies ``mask`` selects, or of all)."""
        env, book = self.env, self.book
        obs: list[Any] = []
        infos: list[Any] = []
        for i in range(env.num_envs):
            if mask is None or mask[i]:
                acting = self._acting(batch, i)
                obs.append(obs_of_copy(env.groups, to_numpy(batch.obs), i, acting))
                infos.append(batch.infos.agent_infos(i, acting))
            else:
                ob, info = book.kept_by_masked_reset(i)
                obs.append(ob)
                infos.append(info)
        book.record_reset(obs, infos, mask)
        self.synced = True
        return obs, infos

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        """Check the action dicts, step the arrays, return the five per-copy lists."""
        env, book = self.env, self.book
        if not self.synced and env._last is not None:
            self.sync(env._last, env._ended, env._final_flags)
        book.check_actions(actions)
        before = list(book.ended)
        last = env._last
        live = [self._alive(last, i) for i in range(env.num_envs)]  # paid and flagged
        batch = env._step_checked(self._arrays(actions, before))
        obs_rows = to_numpy(batch.obs)
        groups = env.groups
        rewards_rows = {name: to_numpy(v).tolist() for name, v in batch.rewards.items()}
        term_rows = {name: v.tolist() for name, v in batch.terminated.items()}
        trunc_rows = {name: v.tolist() for name, v in batch.truncated.items()}
        ep_t, ep_u = batch.episode_terminated.tolist(), batch.episode_truncated.tolist()
        results = []
        outcomes = env._outcomes.tolist()  # what the step did to each copy, as the source says
        for i in range(env.num_envs):
            if outcomes[i] in (RESTARTED, IDLE):
                results.append(self._ended_copy(batch, obs_rows, i, outcomes[i]))
                continue
            reset_now = outcomes[i] == ENDED_AND_RESET
            rewards: dict[Any, Any] = {}
            terminateds: dict[Any, Any] = {}
            truncateds: dict[Any, Any] = {}
            present = self._acting(batch, i) if reset_now else set()  # who observes
            for name, members in groups.items():
                for j, agent in enumerate(members):
                    if not reset_now and agent in live[i] and (
                            batch.acting[name][i, j] or term_rows[name][i][j]
                            or trunc_rows[name][i][j]):
                        present.add(agent)
                    if agent in live[i]:
                        rewards[agent] = rewards_rows[name][i][j]
                        terminateds[agent] = term_rows[name][i][j]
                        truncateds[agent] = trunc_rows[name][i][j]
            terminateds[ALL], truncateds[ALL] = ep_t[i], ep_u[i]
            infos = batch.infos[i] if reset_now else batch.infos.agent_infos(i, present)
            results.append((obs_of_copy(groups, obs_rows, i, present), rewards, terminateds,
                            truncateds, infos))
        book.record_step(results, outcomes)
        self.synced = True
        return tuple(map(list, zip(*results)))

    def _ended_copy(self, batch: Any, obs_rows: Any, i: int, outcome: int) -> tuple[Any, ...]:
        """What a copy whose episode ended in the last call returns now: its reset
        (``RESTARTED``), or nothing but its final flags (``IDLE``)."""
        if outcome == RESTARTED:
            acting = self._acting(batch, i)
            return (obs_of_copy(self.env.groups, obs_rows, i, acting), {}, {ALL: False},
                    {ALL: False}, batch.infos.agent_infos(i, acting))
        terminated, truncated = self.book.final_flags[i]
        return {}, {}, {ALL: terminated}, {ALL: truncated}, {}

    def _acting(self, batch: Any, i: int) -> set[AgentID]:
        return {agent for name, members in self.env.groups.items()
                for j, agent in enumerate(members) if batch.acting[name][i, j]}

    def _alive(self, batch: Any, i: int) -> set[AgentID]:
        return {agent for name, members in self.env.groups.items()
                for j, agent in enumerate(members) if batch.alive[name][i, j]}

    def _arrays(self, actions: Sequence[Any], before: list[bool]) -> dict[str, Any]:
        """The action dicts as one array per group (the space's zero where nobody acts)."""
        env = self.env
        arrays: dict[str, Any] = {}
        for name, members in env.groups.items():
            array = env._actions.blank(name)
            full = [i for i, d in enumerate(actions) if not before[i] and len(d) == len(members)
                    and all(a in d for a in members)] if len(env.groups) == 1 else []
            if len(full) == env.num_envs:  # every agent of every copy acts: one conversion
                array[...] = np.asarray([[d[a] for a in members] for d in actions],
                                        dtype=array.dtype).reshape(array.shape)
            else:
                for i, action_dict in enumerate(actions):
                    if before[i]:
                        continue
                    for j, agent in enumerate(members):
                        if agent in action_dict:
                            array[i, j] = action_dict[agent]
            arrays[name] = array
        return arrays
