"""A natively batched simulator as a vector env: ONE object of ``num_envs`` copies, never N.

:class:`BatchedVectorEnv` gives a :class:`~marlhub.adapters.batched.BatchedSource` (VMAS,
JaxMARL, a batched TorchRL env) every face: the array face is its own batch per group, with
no per-copy Python (numpy, or torch on the simulator's device with ``as_torch=True``); the
dict face is read from it when called (:mod:`marlhub.vector.faces.dicts`); ``recv``/``send``
step every copy at once (:mod:`~marlhub.vector.sources.batched_cycle`). Copies are reset by
the simulator's partial reset (``reset_rows``); ``reset(seed=s)`` seeds it once, and its
``seeding`` says what that reproduces.

Example:
    >>> import marlhub
    >>> envs = marlhub.make_vec("vmas/balance", 8, {"max_steps": 3})
    >>> envs, envs.groups
    (BatchedVectorEnv(vmas/balance, num_envs=8), {'agents': ['agent_0', 'agent_1', 'agent_2']})
    >>> batch = envs.reset_arrays(seed=0)
    >>> batch.obs["agents"].shape, batch.acting["agents"].all()
    ((8, 3, 16), np.True_)
    >>> batch = envs.step_arrays({"agents": np.zeros((8, 3, 2), np.float32)})
    >>> batch.rewards["agents"].shape, batch.episode_truncated.any()
    ((8, 3), np.False_)
    >>> envs.close()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from copy import deepcopy
from typing import Any, Optional

import numpy as np

from marlhub.adapters.batched import BatchedSource, SourceBatch, to_numpy
from marlhub.episode.status import NOT_RESET, require_running
from marlhub.errors import ProtocolError, VectorEnvError
from marlhub.vector.autoreset import ENDED, ENDED_AND_RESET, IDLE, RESTARTED, STEPPED
from marlhub.vector.base import (
    DISABLED,
    NEXT_STEP,
    SAME_STEP,
    VectorMultiAgentEnv,
    one_seed,
    parse_autoreset_mode,
    reset_mask_of,
)
from marlhub.vector.book import ARRAYS, DICTS
from marlhub.vector.faces.arrays import ArrayBatch, tree_map
from marlhub.vector.faces.dicts import DictFace, LazyInfos
from marlhub.vector.faces.group_actions import GroupActions
from marlhub.vector.ready import Received, ReceivedArrays, rows_of
from marlhub.vector.sources.batched_cycle import BatchedCycle

__all__ = ["BatchedVectorEnv"]


class BatchedVectorEnv(VectorMultiAgentEnv):
    """A batched ``source`` as a vector env (see the module).

    Args:
        source: a :class:`~marlhub.adapters.batched.BatchedSource` (else ``ProtocolError``).
        autoreset_mode: ``"next_step"`` (default), ``"same_step"`` or ``"disabled"``.
        env_id: the registry id, for messages and ``repr``.
        as_torch: the array face returns torch tensors on the simulator's device.
        check_masks: refuse actions outside the action masks (the default).
        batch_size: how many copies ``recv()`` and ``recv_arrays()`` return (None: all).
    """

    def __init__(self, source: Any, autoreset_mode: Any = "next_step", *,
                 env_id: Optional[str] = None, as_torch: bool = False,
                 check_masks: bool = True, batch_size: Optional[int] = None) -> None:
        self.closed = True  # until built
        if not isinstance(source, BatchedSource):
            raise ProtocolError(source, [], expected="a batched source (num_envs, groups, reset, "
                                "reset_rows, step: marlhub.adapters.batched.BatchedSource)",
                                fix="Bring a natively batched simulator through its adapter, e.g. "
                                    "marlhub.make_vec('vmas/balance', N) or from_torchrl(env).")
        self.source = source
        self.num_envs = int(source.num_envs)
        self.autoreset_mode = parse_autoreset_mode(autoreset_mode)
        self.env_id = env_id
        self.as_torch = bool(as_torch)
        self.check_masks = bool(check_masks)
        self.envs: list[Any] = []  # one simulator, no copies
        self._groups = {name: list(agents) for name, agents in source.groups.items()}
        self.seeding = str(source.seeding)
        self._adopt_description({
            "metadata": dict(source.metadata), "render_mode": source.render_mode,
            "possible_agents": list(source.possible_agents),
            "observation_spaces": source.observation_spaces, "action_spaces": source.action_spaces})
        self._actions = GroupActions(self.name(), self.num_envs, self.groups,
                                     source.action_spaces, device=source.device)
        self._dicts = DictFace(self, batch_size)
        self._book = self._dicts.book
        self._ended = np.zeros(self.num_envs, np.bool_)
        self._final_flags = np.zeros((self.num_envs, 2), np.bool_)
        self._chooses: dict[str, Any] = {}  # the source's acting (whose turn), per group
        self._done = {name: np.zeros((self.num_envs, len(a)), np.bool_)
                      for name, a in self.groups.items()}
        self._last: Optional[ArrayBatch] = None
        self._cannot_step: Optional[str] = NOT_RESET
        self._cycle = BatchedCycle(self)
        self._outcomes = np.zeros(self.num_envs, np.int8)  # of the last step, per copy
        self.closed = False

    @property
    def groups(self) -> dict[str, list[Any]]:
        """The simulator's groups: group name -> agents with the same spaces."""
        return self._groups

    # -- the array face -------------------------------------------------------------

    def _reset_batch(self, seed: Any, options: Optional[dict[str, Any]]) -> ArrayBatch:
        self._cycle.check_idle("reset_arrays()")
        return self._reset_arrays(seed, options)

    def _reset_arrays(self, seed: Any, options: Optional[dict[str, Any]]) -> ArrayBatch:
        mask, rest = reset_mask_of(self.name(), options, self.num_envs)
        seed = one_seed(self.name(), seed, mask, self.seeding)
        if rest:
            raise VectorEnvError(self.name(), f"reset() got the options {sorted(rest)}, which the "
                                 "batched simulator does not take",
                                 "Pass only options={'reset_mask': mask}.")
        if mask is None or self._last is None:
            out = self._host_batch(self.source.reset(seed))
            self._ended[:] = False
            for done in self._done.values():
                done[:] = False
            batch = self._fresh(out)
        else:
            rows = np.flatnonzero(mask)
            batch = self._with_rows_reset(self._last, rows)
            self._ended[rows] = False
            batch.rewards = {k: v * 0 for k, v in batch.rewards.items()}
            batch.terminated, batch.truncated = self._flag_arrays(), self._flag_arrays()
            batch.episode_terminated = np.zeros(self.num_envs, np.bool_)
            batch.episode_truncated = np.zeros(self.num_envs, np.bool_)
        self._finish(batch)
        self._cannot_step = None
        self._book.cycle.held(rows_of(mask, self.num_envs))
        return batch

    def _step_batch(self, actions: Any) -> ArrayBatch:
        self._cycle.check_idle("step_arrays()")
        require_running(self.name(), self._cannot_step)
        last = self._last
        assert last is not None
        actions = self._actions.check(actions, last.acting,
                                      last.action_mask if self.check_masks else {})
        return self._step_checked(self._idle_blanked(actions, last.acting))

    def _idle_blanked(self, actions: dict[str, Any],
                      acting_slots: dict[str, Any]) -> dict[str, Any]:
        """``actions`` with the space's zero in every slot that does not act."""
        for name, acting in acting_slots.items():
            if not acting.all():
                value = actions[name]
                blank = self._actions.blank(name)
                if hasattr(value, "detach"):
                    import torch

                    idle = torch.as_tensor(~acting, device=value.device)
                    actions[name] = torch.where(
                        idle.reshape(*idle.shape, *([1] * (value.dim() - 2))),
                        torch.as_tensor(blank, device=value.device, dtype=value.dtype), value)
                else:
                    actions[name] = np.where(
                        (~acting).reshape(*acting.shape, *([1] * (blank.ndim - 2))), blank,
                        np.asarray(value))
        return actions

    def _step_checked(self, actions: dict[str, Any]) -> ArrayBatch:
        before = self._ended.copy()
        try:
            out = self._host_batch(self.source.step(actions))
        except Exception:
            self._cannot_step = "the simulator raised in the last step(), so the copies may be " \
                "out of step"
            raise
        batch = self._stepped(out, before)
        mode = self.autoreset_mode
        if mode == NEXT_STEP and before.any():
            rows = np.flatnonzero(before)
            batch = self._with_rows_reset(batch, rows)
            for value in (*batch.rewards.values(), *batch.terminated.values(),
                          *batch.truncated.values()):
                value[rows] = 0
            batch.episode_terminated[rows] = False
            batch.episode_truncated[rows] = False
        ended = (batch.episode_terminated | batch.episode_truncated) & ~before
        self._final_flags[ended, 0] = batch.episode_terminated[ended]
        self._final_flags[ended, 1] = batch.episode_truncated[ended]
        if mode == SAME_STEP and ended.any():
            final_obs, final_infos = deepcopy(batch.obs), batch.infos
            seen = {name: batch.terminated[name] | batch.truncated[name] for name in self.groups}
            batch = self._with_rows_reset(batch, np.flatnonzero(ended))
            batch.final_obs = final_obs
            assert isinstance(batch.infos, LazyInfos)
            batch.infos = batch.infos.with_final((final_infos, ended, final_obs, seen))
        else:
            self._ended = (before & (mode == DISABLED)) | ended
        # what the step did to each copy (the dict face reads it)
        self._outcomes = np.full(self.num_envs, STEPPED, np.int8)
        self._outcomes[before] = RESTARTED if mode == NEXT_STEP else IDLE
        self._outcomes[ended] = ENDED_AND_RESET if mode == SAME_STEP else ENDED
        self._finish(batch)
        return batch

    # -- the source's calls (marlhub.vector.base); recv/send in batched_cycle.py ----------

    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        mask = None if not options or "reset_mask" not in options else options["reset_mask"]
        self._cycle.check_idle("reset()")
        return self._dicts.reset(self._reset_arrays(seed, options), mask)

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        self._cycle.check_idle("step()")
        return self._dicts.step(actions)

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        self._cycle.async_reset(face, seed, options)

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        self._cycle.send(DICTS, actions, copy_ids)

    def _recv(self) -> Received:
        return self._cycle.recv(DICTS)

    def _send_batch(self, actions: Any, copy_ids: Any) -> None:
        self._cycle.send(ARRAYS, actions, copy_ids)

    def _recv_batch(self) -> ReceivedArrays:
        return self._cycle.recv(ARRAYS)

    # -- helpers --------------------------------------------------------------------

    def _host_batch(self, out: SourceBatch) -> SourceBatch:
        """The source's values as numpy (obs, rewards, infos: torch with ``as_torch``)."""
        kept = (lambda value: value) if self.as_torch else to_numpy
        values: dict[str, Any] = {name: tree_map(kept if name in ("obs", "rewards", "infos")
                                                 else to_numpy, value) if value else None
                                  for name, value in vars(out).items()
                                  if name not in ("terminated", "truncated")}
        return SourceBatch(**values, terminated=to_numpy(out.terminated).astype(bool),
                           truncated=to_numpy(out.truncated).astype(bool))

    def _fresh(self, out: SourceBatch) -> ArrayBatch:
        """The batch of a reset of every copy."""
        self._chooses = dict(out.acting or {})
        zeros = {name: _zeros((self.num_envs, len(agents)), self.as_torch and self.source.device)
                 for name, agents in self.groups.items()}
        flags = np.zeros(self.num_envs, np.bool_)
        return ArrayBatch(
            obs=out.obs, rewards=zeros, terminated=self._flag_arrays(), truncated=self._flag_arrays(),
            episode_terminated=flags, episode_truncated=flags.copy(), acting={},
            alive={}, action_mask=dict(out.action_mask or {}),
            infos=LazyInfos(self, out.infos or {}, common=out.common_infos))

    def _stepped(self, out: SourceBatch, before: np.ndarray) -> ArrayBatch:
        """The batch of a step, before any autoreset; ended copies' flags cleared."""
        self._chooses = dict(out.acting or {})
        ep_t, ep_u = out.terminated, out.truncated
        ep_t[before] = False
        ep_u[before] = False
        terminated, truncated = {}, {}
        for name in self.groups:
            alive = _alive(self._done[name], before)
            terminated[name] = _ended(alive, out.agent_terminated, name, ep_t)
            truncated[name] = _ended(alive, out.agent_truncated, name, ep_u)
            truncated[name] &= ~terminated[name]
            self._done[name] |= terminated[name]
            self._done[name] |= truncated[name]
        rewards = out.rewards or {}
        if before.any():
            for value in rewards.values():
                value[before] = 0
        return ArrayBatch(
            obs=out.obs, rewards=dict(rewards), terminated=terminated, truncated=truncated,
            episode_terminated=ep_t, episode_truncated=ep_u, acting={},
            alive={}, action_mask=dict(out.action_mask or {}),
            infos=LazyInfos(self, out.infos or {}, common=out.common_infos))

    def _with_rows_reset(self, batch: ArrayBatch, rows: np.ndarray) -> ArrayBatch:
        """``batch`` with the copies of ``rows`` reset by the simulator (obs, infos, masks)."""
        out = self._host_batch(self.source.reset_rows(rows))
        obs = tree_map(_copy, batch.obs)
        _put_rows(obs, out.obs, rows)
        assert isinstance(batch.infos, LazyInfos)
        infos = tree_map(_copy, batch.infos.arrays)
        if out.infos:
            _put_rows(infos, {k: v for k, v in out.infos.items() if k in infos}, rows)
        for done in self._done.values():
            done[rows] = False
        self._chooses = _rows_from(self._chooses, out.acting, rows)
        return dataclasses.replace(
            batch, obs=obs, acting={}, alive={}, final_obs=None,
            action_mask=_rows_from(batch.action_mask, out.action_mask, rows),
            infos=batch.infos.with_rows_reset(infos, rows))

    def _flag_arrays(self) -> dict[str, np.ndarray]:
        return {name: np.zeros((self.num_envs, len(a)), np.bool_) for name, a in self.groups.items()}

    def _finish(self, batch: ArrayBatch) -> None:
        """Fill who acts and who is alive, masks of slots that do not act; keep the batch."""
        for name in self.groups:
            alive = _alive(self._done[name], self._ended)
            batch.alive[name] = alive
            chooses = self._chooses.get(name)  # the source's: whose turn it is
            batch.acting[name] = alive & np.asarray(chooses, bool) if chooses is not None \
                else alive.copy()
            if name in batch.action_mask:
                mask = np.asarray(batch.action_mask[name]).astype(np.int8)
                mask[~alive] = 1
                batch.action_mask[name] = mask
        if isinstance(batch.infos, LazyInfos):
            batch.infos.batch = batch  # the masks of acting agents go to their infos
        self._last = batch
        self._dicts.synced = False

    def render(self) -> Any:
        """The simulator's render of copy 0."""
        render = getattr(self.source, "render", None)
        return render() if callable(render) else None

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of the simulator (or read the attribute), once for all copies."""
        self._check_open()
        attr = getattr(self.source, name)
        return (attr(*args, **kwargs) if callable(attr) else attr,)

    def close_extras(self, **kwargs: Any) -> None:
        """Close the simulator."""
        self.source.close()


def _zeros(shape: tuple[int, ...], device: Any) -> Any:
    """float32 zeros: torch's on ``device``, or numpy's (None or False)."""
    if device is None or device is False:
        return np.zeros(shape, np.float32)
    import torch

    return torch.zeros(shape, device=device)


def _copy(value: Any) -> Any:
    return value.clone() if hasattr(value, "clone") else value.copy()


def _put_rows(target: dict[str, Any], source: dict[str, Any], rows: np.ndarray) -> None:
    for key, value in source.items():
        if isinstance(value, dict):
            _put_rows(target[key], value, rows)
        else:
            target[key][rows] = value[rows]


def _rows_from(current: dict[str, Any], fresh: Optional[dict[str, Any]],
               rows: np.ndarray) -> dict[str, Any]:
    """``current`` per group, with ``rows`` taken from ``fresh`` (copied where changed)."""
    merged = dict(current)
    for name, value in (fresh or {}).items():
        if name in merged:
            merged[name] = np.array(merged[name], copy=True)
            merged[name][rows] = value[rows]
        else:
            merged[name] = value
    return merged


def _alive(done: np.ndarray, ended: np.ndarray) -> np.ndarray:
    """``(num_envs, n)``: slots not done in copies not ended (``ended`` all False: skipped)."""
    alive = ~done
    if ended.any():
        alive &= ~ended[:, None]
    return alive


def _ended(alive: np.ndarray, flags: Optional[dict[str, Any]], name: str,
           episode: np.ndarray) -> np.ndarray:
    """Which ``alive`` slots end in this step: by their own flag or their copy's."""
    ended = alive & episode[:, None] if episode.any() else np.zeros_like(alive)
    if flags is not None and name in flags:
        ended |= alive & np.asarray(flags[name]).reshape(alive.shape).astype(bool)
    return ended
