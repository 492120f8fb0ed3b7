"""The dict face of a batched vector env: lists of per-copy dicts, read from its arrays.

:class:`DictFace` gives a :class:`~marlhub.vector.sources.batched.BatchedVectorEnv` the
``reset`` and ``step`` of :class:`~marlhub.vector.SyncVectorMultiAgentEnv` (the same
:class:`~marlhub.vector.book.CopyBook` checks the dicts); infos are built only when
read (:class:`LazyInfos`), so the array face pays nothing for them.

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
from marlhub.vector.faces.arrays import tree_map
from marlhub.vector.ready import ReadyCopies

__all__ = ["DictFace", "LazyInfos"]


class LazyInfos(Sequence):
    """Each copy's infos dict, built from per-group info ``arrays`` (group -> key ->
    ``(num_envs, n, ...)``) when read.

    ``final``: under ``same_step``, ``(infos of the ending step, which copies ended, final obs
    arrays, per group the slots that ended)`` for ``"__common__"``'s ``"final_obs"`` and
    ``"final_info"``; ``common``: whole copies' infos (``common_rows`` says whose); ``batch``:
    the batch whose masks go to the acting agents' infos.
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
        """The same infos, with ``same_step``'s final obs and infos."""
        return LazyInfos(self, self.arrays, final, common=self.common,
                         common_rows=self.common_rows)

    def with_rows_reset(self, arrays: Mapping[str, Mapping[str, Any]],
                        rows: Any) -> "LazyInfos":
        """The infos after the copies ``rows`` were reset (``arrays``, no common infos)."""
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
            infos[COMMON] = tree_map(lambda value: value[i], self.common)
        return infos


def obs_of_copy(groups: Mapping[str, Sequence[AgentID]], obs: Mapping[str, Any], i: int,
                agents: Optional[Any] = None) -> dict[AgentID, Any]:
    """Copy ``i``'s obs dict from the per-group arrays (only ``agents``, when given)."""
    found: dict[AgentID, Any] = {}
    for name, members in groups.items():
        rows = obs[name]
        for j, agent in enumerate(members):
            if agents is None or agent in agents:
                found[agent] = tree_map(lambda value: value[i, j], rows)
    return found


class DictFace:
    """``reset`` and ``step`` with lists of dicts over a batched vector ``env``."""

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
        self.reset(batch)
        for row in np.flatnonzero(ended):
            self.book.ended[row], self.book.actors[row] = True, []
            self.book.final_flags[row] = (bool(final_flags[row, 0]), bool(final_flags[row, 1]))

    def reset(self, batch: Any, mask: Any = None) -> tuple[list[Any], list[Any]]:
        """The obs and infos lists of a reset (of the copies ``mask`` selects, or of all)."""
        obs_rows = to_numpy(batch.obs)
        obs, infos = map(list, zip(*(
            self._actors_dicts(batch, obs_rows, i) if mask is None or mask[i]
            else self.book.kept_by_masked_reset(i) for i in range(self.env.num_envs))))
        self.book.record_reset(obs, infos, mask)
        self.synced = True
        return obs, infos

    def _actors_dicts(self, batch: Any, obs_rows: Any, i: int) -> tuple[Any, Any]:
        """Copy ``i``'s obs and infos dicts of the agents that act next."""
        acting = self._agents(batch.acting, i)
        return (obs_of_copy(self.env.groups, obs_rows, i, acting),
                batch.infos.agent_infos(i, acting))

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        """Check the action dicts, step the arrays, return the five per-copy lists."""
        env, book = self.env, self.book
        if not self.synced and env._last is not None:
            self.sync(env._last, env._ended, env._final_flags)
        book.check_actions(actions)
        before = list(book.ended)
        last = env._last
        live = [self._agents(last.alive, i) for i in range(env.num_envs)]  # paid and flagged
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
            present = self._agents(batch.acting, i) if reset_now else set()  # who observes
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
        """What an ended copy returns: its reset (``RESTARTED``), or its final flags (``IDLE``)."""
        if outcome == RESTARTED:
            ob, info = self._actors_dicts(batch, obs_rows, i)
            return ob, {}, {ALL: False}, {ALL: False}, info
        terminated, truncated = self.book.final_flags[i]
        return {}, {}, {ALL: terminated}, {ALL: truncated}, {}

    def _agents(self, flags: Mapping[str, Any], i: int) -> set[AgentID]:
        """Copy ``i``'s agents whose slot is True in ``flags`` (``acting`` or ``alive``)."""
        return {agent for name, members in self.env.groups.items()
                for j, agent in enumerate(members) if flags[name][i, j]}

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
