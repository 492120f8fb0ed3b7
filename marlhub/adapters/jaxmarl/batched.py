"""JaxMARL as a batched source: ``N`` copies of one env under ``jax.vmap`` and ``jit``.

:class:`JaxMarlBatch` is what ``marlhub.make_vec("jaxmarl/<env>", N)`` holds:
the env's ``reset`` and ``step_env`` vmapped over a batch of states and keys
(:class:`~marlhub.adapters.jaxmarl.functions.JaxFunctions`), each group's values
as ``(num_envs, n, ...)`` arrays. Copy ``i`` walks its own key from
``jax.random.PRNGKey(seed + i)``, so it is the hub env ``jaxmarl/<env>`` seeded
``seed + i``, step for step; a partial reset resets the chosen copies with the
next keys of their own streams (``jnp.where`` over the batch, in one jitted call).
Who acts and the idle players' actions follow
:class:`~marlhub.adapters.jaxmarl.adapter.JaxMarlHubEnv`.

Example:
    >>> import jaxmarl, numpy as np
    >>> source = JaxMarlBatch(jaxmarl.make("MPE_simple_spread_v3"), 4)
    >>> source.groups
    {'agents': ['agent_0', 'agent_1', 'agent_2']}
    >>> batch = source.reset(0)
    >>> np.shape(batch.obs["agents"])
    (4, 3, 18)
    >>> batch = source.step({"agents": np.zeros((4, 3), np.int64)})
    >>> np.shape(batch.rewards["agents"]), batch.terminated.tolist()
    ((4, 3), [False, False, False, False])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.batched import SourceBatch, group_agents
from marlhub.adapters.jaxmarl.adapter import as_space, jaxmarl_spaces, steps_taken
from marlhub.adapters.jaxmarl.functions import BATCH_RTOL, functions_for, is_turn_based
from marlhub.core import ALL, AgentID

__all__ = ["JaxMarlBatch"]

SEEDING = ("copy i is seeded seed + i: it walks its own key from jax.random.PRNGKey(seed + i), "
           "so it is the hub env seeded seed + i, step for step (its floats to rounding: XLA "
           "compiles the batch apart from one copy).")


class JaxMarlBatch:
    """A JaxMARL env's ``num_envs`` copies under ``jax.vmap`` (see the module).

    Args:
        env: a JaxMARL ``MultiAgentEnv``.
        num_envs: how many copies.
    """

    seeding = SEEDING
    device = None
    #: How far the batch's floats may be from one copy's, relatively or absolutely, as XLA
    #: compiles the batch apart from one copy.
    tolerance = BATCH_RTOL

    def __init__(self, env: Any, num_envs: int) -> None:
        self.jaxmarl_env = env
        self.num_envs = int(num_envs)
        self._fns = functions_for(env, batched=True)
        keys = self._fns.seed_keys(0, self.num_envs)
        _, first, _ = self._fns.reset(keys)
        first = {a: np.asarray(v)[0] for a, v in first.items()}
        self.possible_agents: list[AgentID] = list(env.agents)
        self.observation_spaces, self.action_spaces = jaxmarl_spaces(env, first)
        self.groups = group_agents(self.possible_agents, self.observation_spaces.__getitem__,
                                   self.action_spaces.__getitem__)
        self._turn_based = is_turn_based(env)
        self._masked = self._fns.has_masks and all(
            isinstance(s, gym.spaces.Discrete) for s in self.action_spaces.values())
        self.metadata: dict[str, Any] = {"render_modes": []}
        self.render_mode: Optional[str] = None
        self._rng = np.random.default_rng()
        self._keys: Any = None
        self._state: Any = None
        self._obs: Any = None
        self._masks: dict[str, np.ndarray] = {}
        self._acting: dict[str, np.ndarray] = {}
        self._gone = {name: np.zeros((self.num_envs, len(m)), bool)
                      for name, m in self.groups.items()}
        # Copies whose episode ended and that were not reset since: stepped with the rest
        # (the batch is one call), they keep their keys, so that their reset draws what a
        # separate env's reset draws.
        self._over = np.zeros(self.num_envs, bool)
        limit = getattr(env, "max_steps", None)
        self._max_steps = int(limit) if limit is not None else None

    def reset(self, seed: Optional[int]) -> SourceBatch:
        """Reset every copy: copy ``i`` from ``jax.random.PRNGKey(seed + i)`` (random seeds
        for None)."""
        base = int(self._rng.integers(2**31)) if seed is None else int(seed)
        self._keys, self._obs, self._state = self._fns.reset(
            self._fns.seed_keys(base, self.num_envs))
        for gone in self._gone.values():
            gone[:] = False
        self._over = np.zeros(self.num_envs, bool)
        return self._batch(self._obs, rewards=None, dones=None, infos=None)

    def reset_rows(self, rows: Sequence[int]) -> SourceBatch:
        """Reset the copies of ``rows``, each with the next key of its own stream."""
        mask = np.zeros(self.num_envs, bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        assert self._fns.reset_where is not None
        self._keys, self._obs, self._state = self._fns.reset_where(
            self._keys, self._state, self._obs, mask)
        for gone in self._gone.values():
            gone[mask] = False
        self._over = self._over & ~mask
        return self._batch(self._obs, rewards=None, dones=None, infos=None)

    def step(self, actions: Mapping[str, Any]) -> SourceBatch:
        """One vmapped ``step_env`` of every copy; idle and done agents play their first legal
        action (the action space's zero without masks), as the hub env has them do."""
        per_agent: dict[AgentID, Any] = {}
        for name, members in self.groups.items():
            values = np.asarray(actions[name])
            masks = self._masks.get(name)
            idle = self._gone[name] | ~self._acting.get(name, np.ones_like(self._gone[name]))
            if masks is not None:
                first = np.where(masks.any(-1), masks.argmax(-1), 0)
                values = np.where(idle, first, values)
            else:
                zero = np.zeros_like(values)
                values = np.where(idle.reshape(idle.shape + (1,) * (values.ndim - 2)), zero,
                                  values)
            for j, agent in enumerate(members):
                per_agent[agent] = values[:, j]
        keys = self._keys
        self._keys, obs, self._state, rewards, dones, infos = self._fns.step(
            keys, self._state, per_agent)
        if self._over.any():  # a copy whose episode ended keeps its key for its reset
            self._keys = np.where(self._over[:, None], np.asarray(keys), np.asarray(self._keys))
        self._over = self._over | np.asarray(jax_get(dones[ALL]), bool)
        self._obs = obs
        return self._batch(obs, rewards=rewards, dones=dones, infos=infos)

    def close(self) -> None:
        """Drop the batch's state."""
        self._state = self._obs = None

    # -- JaxMARL values ------------------------------------------------------------------

    def _batch(self, obs: Any, *, rewards: Any, dones: Any, infos: Any) -> SourceBatch:
        import jax

        obs, rewards, dones, infos = jax.device_get((obs, rewards, dones, infos))
        over = np.zeros(self.num_envs, bool) if dones is None else np.asarray(dones[ALL], bool)
        if over.any() and self._max_steps is not None:
            truncated = over & (np.asarray(steps_taken(self._state))
                                >= self._max_steps)
        else:
            truncated = np.zeros(self.num_envs, bool)
        lead = (self.num_envs,)
        batch = SourceBatch(
            obs={name: _stack([as_space(obs[a], self.observation_spaces[a], lead)
                               for a in members]) for name, members in self.groups.items()},
            terminated=over & ~truncated, truncated=truncated,
            rewards=None if rewards is None else {
                name: np.stack([np.asarray(rewards[a], np.float64) for a in members], 1)
                for name, members in self.groups.items()},
            common_infos=dict(infos) if infos else None)
        if dones is not None:  # agents done before the episode ends (the end decides the rest)
            batch.agent_terminated = {
                name: np.stack([np.asarray(dones[a], bool) for a in members], 1) & ~over[:, None]
                for name, members in self.groups.items()}
            for name, ended in batch.agent_terminated.items():
                self._gone[name] |= ended
        if self._masked:
            legal = jax.device_get(self._fns.legal(self._state))
            self._masks = {name: np.stack([np.asarray(legal[a]).astype(np.int8)
                                           for a in members], 1)
                           for name, members in self.groups.items()}
            batch.action_mask = dict(self._masks)
            if self._turn_based:
                self._acting = _choosing(self._masks, self._gone)
                batch.acting = dict(self._acting)
        return batch


def jax_get(value: Any) -> Any:
    """A JAX array as numpy."""
    import jax

    return jax.device_get(value)


def _choosing(masks: Mapping[str, np.ndarray],
              gone: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Who acts: the live agents with a choice, or, in a copy where none has one, every live
    agent with a legal action (as the hub env decides)."""
    choice = {name: (m.sum(-1) > 1) & ~gone[name] for name, m in masks.items()}
    anyone = np.any([c.any(-1) for c in choice.values()], axis=0)
    return {name: np.where(anyone[:, None], choice[name], (masks[name].sum(-1) >= 1)
                           & ~gone[name]) for name in masks}


def _stack(values: list[Any]) -> Any:
    """Per-agent ``(num_envs, ...)`` arrays as one ``(num_envs, n, ...)`` (dicts key by key)."""
    if isinstance(values[0], Mapping):
        return {key: _stack([v[key] for v in values]) for key in values[0]}
    return np.stack([np.asarray(v) for v in values], 1)
