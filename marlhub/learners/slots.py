"""One slot per (copy, agent): a vector env's array face as the flat batch learners train on.

Learners that share one policy between agents (SB3, PufferLib, CleanRL-style PPO) want a
fixed number of "envs", each with one observation and one action per step. An
:class:`AgentSlots` gives every copy of a vector env ``A`` slots, one per agent, and
converts each :class:`~marlhub.vector.faces.arrays.ArrayBatch` of the vector env (which it
drives with ``autoreset_mode="same_step"``) into arrays of ``num_envs * A`` rows, slot
``copy * A + k`` for the copy's ``k``-th agent. Three layouts:

* **one group** (the default): the agents share one observation and one action space (the
  vector env's array face has one group); the slots take that space as it is;
* **one space** (``one_space=True``), for mixed teams: every agent gets a slot, in one padded
  space (:mod:`marlhub.learners.padding`: the flattened observation and the agent's kind;
  one ``Discrete`` whose masks forbid what a kind cannot do, or one ``Box``);
* **one group of several** (``group=NAME``), as TorchRL's ``group_map`` by kind: that
  group's agents get the slots, in their own spaces; the other groups act by ``others``.

A ``Dict`` observation's action mask is left out of the observation (the learner gets the
masks from :meth:`AgentSlots.action_masks`, as PettingZoo's SB3 tutorial does); where one
entry is left (``"observation"``), it is the slot's observation.

Every slot, every step, is one of (the one documented treatment of agents that wait, leave
or join, for learners whose batches cannot skip rows):

* **acting**: its agent acts in the next step; its observation is its latest;
* **waiting** (alive, not acting: turn-based games): it shows its latest observation, gets
  its rewards, and its action is ignored;
* **done**: its agent terminated or truncated in this step, or the episode ended while it
  was alive: ``done`` is True once, with its final observation and whether it was
  truncated; the observation returned is the slot's next (the next episode's first after
  a reset, else the empty observation);
* **empty** (its agent left, has not joined yet, or the copy has nobody left): the empty
  observation (zeros), reward 0, ``done`` False, the action ignored.

Waiting and empty slots are never done, so a learner's episode statistics count each
agent's episode exactly once, with the hub's return. Their action masks allow only the
first action: a masking learner (MaskablePPO) then gives their ignored actions
probability 1, so they add nothing to the policy's gradient or entropy.

Example:
    >>> from marlhub.vector import SyncVectorMultiAgentEnv
    >>> from marlhub.envs import TicTacToe
    >>> slots = AgentSlots(SyncVectorMultiAgentEnv([TicTacToe] * 2, autoreset_mode="same_step"))
    >>> out = slots.reset(seed=0)
    >>> slots.num_slots, out.obs.shape, out.acting.tolist()  # who starts is drawn
    (4, (4, 9), [False, True, True, False])
    >>> slots.action_masks()[0].tolist()  # copy 0's player1 waits: only the first action
    [True, False, False, False, False, False, False, False, False]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import VectorEnvError
from marlhub.learners.padding import (
    first_actions,
    flat_rows,
    mask_size,
    padded_action_space,
    padded_observation_space,
    without_mask,
)
from marlhub.vector.base import SAME_STEP, VectorMultiAgentEnv
from marlhub.vector.faces.arrays import ArrayBatch

__all__ = ["AgentSlots", "Policy", "RandomLegal", "SlotStep"]

#: ``policy(obs, masks, action_space) -> actions`` of a group without slots (see AgentSlots).
Policy = Callable[[Any, Optional[np.ndarray], gym.Space], Any]



@dataclass
class SlotStep:
    """One reset or step of every slot (``num_slots`` rows each).

    Attributes:
        obs: each slot's observation (a dict of arrays for a ``Dict`` space, one group).
        rewards: float32 rewards.
        terminated, truncated: whether the slot's agent is done in this step.
        final_obs: slot -> its final observation, for the slots done in this step.
        acting: the slots whose agent acts in the next step.
        alive: the slots whose agent is in the episode and not done.
        infos: each copy's infos dict.
    """

    obs: Any
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    final_obs: dict[int, Any]
    acting: np.ndarray
    alive: np.ndarray
    infos: Sequence[Any]


class AgentSlots:
    """The slots of a vector env's agents, for learners that share one policy.

    Args:
        vector_env: a vector env (any source) made with ``autoreset_mode="same_step"``.
        one_space: put agents of different spaces into one padded space (see the module).
        group: give slots to this group of the vector env's array face only (its agents
            share their spaces); the other groups act by ``others``.
        others: group -> ``policy(obs, masks, action_space) -> actions`` for the groups
            without slots: ``obs`` the group's observations ``(num_envs, n, ...)`` (zeros
            where an agent does not act), ``masks`` its legal actions ``(num_envs, n,
            size)`` (bools, none for an agent that does not act; None for Box actions), the
            actions ``(num_envs, n, ...)``, ignored where an agent does not act; a
            uniformly random legal action by default (:class:`RandomLegal`).
        seed: the seed of the default random policy of the others (until a seeded reset).

    Attributes:
        agents: each copy's agents, in slot order.
        num_slots: ``num_envs * len(agents)``.
        observation_space, action_space: one slot's spaces.

    Raises:
        VectorEnvError: the vector env's autoreset mode is not ``same_step``; its agents have
            several spaces and ``one_space`` is False; a space the layout cannot take.
    """

    def __init__(self, vector_env: VectorMultiAgentEnv, *, one_space: bool = False,
                 group: Optional[str] = None, others: Optional[Mapping[str, Policy]] = None,
                 seed: Optional[int] = None) -> None:
        name = vector_env.name()
        if vector_env.autoreset_mode != SAME_STEP:
            raise VectorEnvError(name, f"agent slots need autoreset_mode='same_step', got "
                                 f"{vector_env.autoreset_mode!r}", "Make the vector env with "
                                 "autoreset_mode='same_step' (a done slot returns the next "
                                 "episode's observation, its final one beside it).")
        self.vector_env = vector_env
        self.groups = {g: list(members) for g, members in vector_env.groups.items()}
        trained = _trained_groups(name, self.groups, one_space, group, others)
        self.one_space = one_space
        self.others = {g: (others or {}).get(g) or RandomLegal(seed) for g in self.groups
                       if g not in trained}
        self.agents: list[AgentID] = [a for a in vector_env.possible_agents
                                      if any(a in self.groups[g] for g in trained)]
        self.num_envs = vector_env.num_envs
        self.num_slots = self.num_envs * len(self.agents)
        # the slots' columns of each group: slot column k holds group column j
        self._columns = {g: [self.agents.index(a) for a in self.groups[g]] for g in trained}
        obs_spaces = {g: without_mask(vector_env.get_observation_space(self.groups[g][0]))
                      for g in trained}
        act_spaces = {g: vector_env.get_action_space(m[0]) for g, m in self.groups.items()}
        self._obs_spaces, self._act_spaces = obs_spaces, act_spaces
        if one_space:
            self.observation_space = padded_observation_space(name, obs_spaces)
            self.action_space = padded_action_space(name, {g: act_spaces[g] for g in trained})
        else:
            (self.observation_space,), (self.action_space,) = obs_spaces.values(), \
                [act_spaces[g] for g in trained]
        self.mask_size = mask_size(self.action_space)
        self._shown: Any = None  # what the slots showed last (a waiting slot shows it again)
        self._batch: Optional[ArrayBatch] = None

    # -- driving the vector env ---------------------------------------------------------

    def reset(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> SlotStep:
        """Reset every copy (copy ``i`` seeded ``seed + i``; the others' default random policy
        with ``seed`` too); return the slots' first step."""
        if seed is not None:
            for policy in self.others.values():
                if isinstance(policy, RandomLegal):
                    policy.rng = np.random.default_rng(seed)
        batch = self.vector_env.reset_arrays(seed=seed, options=options)
        return self._convert(batch, reset=True)

    def step(self, actions: Any) -> SlotStep:
        """Step every copy with one action per slot (those of slots that do not act are
        ignored); return the slots' step.

        Raises:
            VectorEnvError: not one action per slot, or no reset yet.
            ActionError: an acting slot's action is illegal (the copy and agent named).
        """
        if self._batch is None:
            raise VectorEnvError(self.vector_env.name(), "step() was called before reset()",
                                 "Call reset() first.")
        return self._convert(self.vector_env.step_arrays(self._group_actions(actions)),
                             reset=False)

    def action_masks(self) -> np.ndarray:
        """Each slot's legal actions, ``(num_slots, size)`` bools: the env's mask for acting
        slots (all legal where it has none), only the first action for the others.

        Raises:
            VectorEnvError: the slots' action space has no masks (a ``Box``), or no reset yet.
        """
        if self.mask_size is None:
            raise VectorEnvError(self.vector_env.name(), f"action masks of {self.action_space} "
                                 "were asked for", "Masks exist for Discrete and MultiDiscrete "
                                 "actions only.")
        if self._batch is None:
            raise VectorEnvError(self.vector_env.name(), "action_masks() was called before "
                                 "reset()", "Call reset() first.")
        batch = self._batch
        masks = np.zeros((self.num_envs, len(self.agents), self.mask_size), bool)
        first = first_actions(self.action_space)
        for g, columns in self._columns.items():
            acting = np.asarray(_numpy(batch.acting[g]), bool)
            own = batch.action_mask.get(g)
            size = mask_size(self._act_spaces[g]) or 0
            kind = np.ones((self.num_envs, len(columns), size), bool) if own is None \
                else np.asarray(_numpy(own), bool)
            masks[:, columns, :size] = kind
            masks[:, columns] = np.where(acting[..., None], masks[:, columns], first)
        return masks.reshape(self.num_slots, self.mask_size)

    # -- conversion ---------------------------------------------------------------------

    def _convert(self, batch: ArrayBatch, reset: bool) -> SlotStep:
        self._batch = batch
        n, a = self.num_envs, len(self.agents)
        obs = self._slot_obs(batch.obs)
        rewards = np.zeros((n, a), np.float32)
        terminated, truncated = np.zeros((n, a), bool), np.zeros((n, a), bool)
        acting, alive = np.zeros((n, a), bool), np.zeros((n, a), bool)
        for g, columns in self._columns.items():
            rewards[:, columns] = _numpy(batch.rewards[g])
            terminated[:, columns] = _numpy(batch.terminated[g])
            truncated[:, columns] = _numpy(batch.truncated[g])
            acting[:, columns] = _numpy(batch.acting[g])
            alive[:, columns] = _numpy(batch.alive[g])
        done = terminated | truncated
        ended = np.asarray(_numpy(batch.episode_terminated), bool) \
            | np.asarray(_numpy(batch.episode_truncated), bool)
        final_obs: dict[int, Any] = {}
        if not reset and done.any():
            finals = self._slot_obs(batch.final_obs) if batch.final_obs is not None else None
            for i, k in zip(*np.nonzero(done)):
                source = finals if ended[i] and finals is not None else obs
                final_obs[int(i) * a + int(k)] = _row(source, (int(i), int(k)))
        # Each slot shows its latest observation while alive: a waiting slot's is the one it
        # showed last step; a slot done in a copy that goes on shows the empty one (zeros).
        # (one_space flattens the rows without an observation too: all are cleared there)
        waiting = alive & ~acting
        cleared = ~alive if self.one_space else done & ~ended[:, None]
        if waiting.any() or cleared.any():
            shown = obs if self.one_space else _copy(obs)  # one_space's rows are new
            if waiting.any():
                _put(shown, self._shown, waiting)
            _clear(shown, cleared, len(self.groups) if self.one_space else 0)
        else:
            shown = obs if _owned(obs) else _copy(obs)
        self._shown = shown
        return SlotStep(_flat(shown, self.num_slots), rewards.reshape(-1),
                        terminated.reshape(-1), truncated.reshape(-1), final_obs,
                        acting.reshape(-1), alive.reshape(-1), batch.infos)

    def _slot_obs(self, group_obs: Mapping[str, Any]) -> Any:
        """The groups' observations as ``(num_envs, A, ...)`` in slot order (padded), the
        action masks left out (:meth:`action_masks` has them)."""
        group_obs = {g: without_mask(obs) for g, obs in group_obs.items()}
        if not self.one_space:
            (g,) = self._columns
            if g not in group_obs:
                raise VectorEnvError(self.vector_env.name(), f"the observations of {g!r} have "
                                     "no fixed size", "Agent slots need fixed-size "
                                     "observations (Box, Discrete, MultiDiscrete, MultiBinary, "
                                     "or a Dict of them).")
            obs = _numpy(group_obs[g])
            order = self._columns[g]
            if order == sorted(order):
                return obs
            back = np.argsort(order)  # slot column k holds group column back[k]
            return {key: sub[:, back] for key, sub in obs.items()} if isinstance(obs, dict) \
                else obs[:, back]
        space = self.observation_space
        out = np.zeros((self.num_envs, len(self.agents)) + space.shape, space.dtype)
        kinds = len(self.groups)
        for gi, (g, columns) in enumerate(self._columns.items()):
            if g not in group_obs:
                continue
            flat = flat_rows(self._obs_spaces[g], _numpy(group_obs[g]), space.dtype)
            out[:, columns, :flat.shape[-1]] = flat
            if kinds > 1:
                out[:, columns, -kinds + gi] = 1.0
        return out

    def _group_actions(self, actions: Any) -> dict[str, Any]:
        """One action per slot -> one array per group, in the group's own space."""
        space = self.action_space
        shape = (self.num_slots,) + tuple(space.shape or ())
        values = np.asarray(actions)
        if values.shape != shape and values.size == int(np.prod(shape)):
            values = values.reshape(shape)
        if values.shape != shape:
            raise VectorEnvError(self.vector_env.name(), f"got actions of shape {values.shape}, "
                                 f"expected {shape} (one per slot)", "Pass one action per "
                                 "slot, in slot order (copy * num_agents + agent); the "
                                 "actions of slots that do not act are ignored.")
        values = values.reshape((self.num_envs, len(self.agents)) + shape[1:])
        out: dict[str, Any] = {}
        for g, columns in self._columns.items():
            own = self._act_spaces[g]
            value = values[:, columns]
            if isinstance(own, gym.spaces.Box) and self.one_space:
                size = int(np.prod(own.shape))
                value = np.clip(value[..., :size].reshape(value.shape[:2] + own.shape),
                                own.low, own.high).astype(own.dtype)
            elif isinstance(own, gym.spaces.Discrete) and self.one_space:
                # the padded Discrete counts from 0; an action beyond the kind's plays its
                # first action, as SuperSuit's pad_action_space has it (masks forbid them)
                value = value.astype(np.int64)
                value = np.where(value < own.n, value, 0) + int(own.start)
            out[g] = value
        batch = cast(ArrayBatch, self._batch)  # step() checked that there is one
        for g, policy in self.others.items():  # the groups without slots
            space = self._act_spaces[g]
            acting = np.asarray(_numpy(batch.acting[g]), bool)[..., None]
            mask = batch.action_mask.get(g)
            legal = mask_size(space)
            if legal is None:
                mask = None
            elif mask is None:
                mask = np.repeat(acting, legal, axis=-1)
            else:
                mask = np.asarray(_numpy(mask), bool) & acting
            out[g] = np.asarray(policy(_numpy(batch.obs.get(g)), mask, space))
        return out

    def close(self) -> None:
        """Close the vector env underneath."""
        self.vector_env.close()


def _trained_groups(name: str, groups: Mapping[str, list[AgentID]], one_space: bool,
                    group: Optional[str], others: Optional[Mapping[str, Any]]) -> list[str]:
    """The groups that get slots; raise for a choice the slots cannot take."""
    if group is not None:
        if group not in groups or one_space:
            raise VectorEnvError(name, f"group={group!r} " + (
                "with one_space=True" if group in groups else
                f"is no group of the array face (its groups: {list(groups)})"),
                "Name one group (its agents share their spaces), or pass one_space=True "
                "alone to give every agent a slot.")
        trained = [group]
    else:
        trained = list(groups)
    unknown = [g for g in (others or {}) if g not in groups or g in trained]
    if unknown:
        raise VectorEnvError(name, f"others= names {unknown}, which are not groups without "
                             "slots", f"Give policies only to groups other than {trained}.")
    if len(trained) > 1 and not one_space:
        raise VectorEnvError(
            name, "the agents have different spaces (groups: " + ", ".join(
                f"{g}: {members}" for g, members in groups.items()) + ")",
            "Pass one_space=True to pad every agent's observation into one Box with its kind "
            "beside it, or group=NAME to give slots to one group (the others act by others=), "
            "or train each group through the vector env's array face (step_arrays) or "
            "to_torchrl.")
    return trained


class RandomLegal:
    """The default policy of a group without slots: a uniformly random legal action.

    Example:
        >>> policy = RandomLegal(0)
        >>> policy(None, np.array([[[False, True, False]]]), gym.spaces.Discrete(3)).tolist()
        [[1]]
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, obs: Any, masks: Optional[np.ndarray], space: gym.Space) -> np.ndarray:
        if masks is None or not isinstance(space, gym.spaces.Discrete):
            first = next(iter(obs.values())) if isinstance(obs, dict) else obs
            lead = masks.shape[:2] if masks is not None else np.shape(first)[:2]
            space.seed(int(self.rng.integers(2**31)))
            return np.stack([space.sample() for _ in range(int(np.prod(lead)))]).reshape(
                tuple(lead) + tuple(space.shape or ()))
        weights = masks.astype(float) + (~masks.any(-1, keepdims=True))  # none legal: any
        picks = (weights.cumsum(-1) > self.rng.random(masks.shape[:-1] + (1,))
                 * weights.sum(-1, keepdims=True)).argmax(-1)
        return picks + int(space.start)


def _numpy(value: Any) -> Any:
    """``value`` as numpy (a torch tensor of a batched simulator on any device)."""
    if isinstance(value, dict):
        return {key: _numpy(sub) for key, sub in value.items()}
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _put(target: Any, source: Any, where: np.ndarray) -> None:
    if isinstance(target, dict):
        for key in target:
            _put(target[key], source[key], where)
        return
    target[where] = source[where]


def _clear(target: Any, where: np.ndarray, kinds: int = 0) -> None:
    """Zero the rows ``where`` of ``target``, but their last ``kinds`` columns (one_space's
    kind of agent; only with several kinds)."""
    if isinstance(target, dict):
        for sub in target.values():
            _clear(sub, where)
        return
    if kinds > 1:
        target[where, :-kinds] = 0
    else:
        target[where] = 0


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(sub) for key, sub in value.items()}
    return np.array(value)


def _owned(value: Any) -> bool:
    """Whether ``value`` (each array of a dict) is an array of its own, which no later call
    of the vector env writes into (not a view of its buffers)."""
    if isinstance(value, dict):
        return all(_owned(sub) for sub in value.values())
    return isinstance(value, np.ndarray) and value.base is None


def _row(value: Any, index: tuple[int, int]) -> Any:
    if isinstance(value, dict):
        return {key: _row(sub, index) for key, sub in value.items()}
    return np.array(value[index])


def _flat(value: Any, rows: int) -> Any:
    if isinstance(value, dict):
        return {key: _flat(sub, rows) for key, sub in value.items()}
    return value.reshape((rows,) + value.shape[2:])
