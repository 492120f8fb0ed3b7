"""JaxMARL as a batched source: ``N`` copies of one env under ``jax.vmap`` and ``jit``.

:class:`JaxMarlBatch` is what ``marlhub.make_vec("jaxmarl/<env>", N)`` holds:
the env's ``reset`` and ``step_env``
(:func:`~marlhub.adapters.jaxmarl.functions.key_functions`) vmapped over a batch
of states and keys, each group's values stacked as ``(num_envs, n, ...)`` arrays
inside the same jitted call (:class:`BatchFunctions`), so a step is one call and
one transfer to the host. Copy ``i`` walks its own key from
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
from marlhub.adapters.jax_env import SEEDING, compiled_once, to_numpy
from marlhub.adapters.jaxmarl.adapter import as_space, jaxmarl_spaces, step_count
from marlhub.adapters.jaxmarl.functions import (
    BATCH_RTOL,
    JaxFunctions,
    is_turn_based,
    key_functions,
)
from marlhub.core import ALL, AgentID

__all__ = ["BatchFunctions", "JaxMarlBatch", "batch_functions_for"]

class BatchFunctions:
    """One JaxMARL env's batch functions, jitted, with each group's values stacked inside the
    jitted call: one call and one transfer to the host per step (see the module).

    ``reset(keys)``, ``reset_where(keys, state, out, rows)`` and
    ``step(keys, state, actions, over)`` return ``(keys, state, out)``; ``out`` holds
    ``obs``, ``legal`` (per group, ``(num_envs, n, ...)``) and, after a step, ``rewards`` and
    ``dones`` per group, ``all`` (``dones["__all__"]``), ``steps`` (the episode's step
    count, where the state has one) and ``infos``. A step keeps the keys of the copies in
    ``over`` (their episode ended before; they wait for their reset).

    Args:
        env: a JaxMARL ``MultiAgentEnv``.
        groups: the agents of each group, in order.
    """

    def __init__(self, env: Any, groups: Mapping[str, Sequence[AgentID]]) -> None:
        import jax
        import jax.numpy as jnp

        reset, step_env, legal = key_functions(env)
        self.has_masks = legal is not None
        groups = {name: list(members) for name, members in groups.items()}

        def by_group(per_agent: Mapping[AgentID, Any]) -> dict[str, Any]:
            return {name: jax.tree.map(lambda *xs: jnp.stack(xs, 1),
                                       *[per_agent[a] for a in members])
                    for name, members in groups.items()}

        def masks(state: Any) -> dict[str, Any]:
            return by_group(jax.vmap(legal)(state)) if legal is not None else {}

        def reset_all(keys: Any) -> Any:
            keys, obs, state = jax.vmap(reset)(keys)
            return keys, state, {"obs": by_group(obs), "legal": masks(state)}

        def reset_where(keys: Any, state: Any, out: Any, rows: Any) -> Any:
            new_keys, new_state, new_out = reset_all(keys)

            def pick(new: Any, old: Any) -> Any:
                return jnp.where(rows.reshape(rows.shape + (1,) * (new.ndim - 1)), new, old)

            state = jax.tree.map(pick, new_state, state)
            return (pick(new_keys, keys), state,
                    {"obs": jax.tree.map(pick, new_out["obs"], out["obs"]),
                     "legal": masks(state)})

        def step(keys: Any, state: Any, actions: Mapping[str, Any], over: Any) -> Any:
            per_agent = {a: actions[name][:, j] for name, members in groups.items()
                         for j, a in enumerate(members)}
            new_keys, obs, state, rewards, dones, infos = jax.vmap(step_env)(
                keys, state, per_agent)
            clock = step_count(state)
            return jnp.where(over[:, None], keys, new_keys), state, {
                "obs": by_group(obs), "legal": masks(state), "rewards": by_group(rewards),
                "dones": by_group(dones), "all": dones[ALL], "infos": infos,
                "steps": clock}

        self.reset = jax.jit(reset_all)
        self.reset_where = jax.jit(reset_where)
        self.step = jax.jit(step)


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
        import jax

        self.jaxmarl_env = env
        self.num_envs = int(num_envs)
        self.possible_agents: list[AgentID] = list(env.agents)
        _, first, _ = jax.device_get(key_functions(env)[0](JaxFunctions.seed_key(0)))
        self.observation_spaces, self.action_spaces = jaxmarl_spaces(env, first)
        self.groups = group_agents(self.possible_agents, self.observation_spaces.__getitem__,
                                   self.action_spaces.__getitem__)
        self._fns = batch_functions_for(env, self.groups)
        self._turn_based = is_turn_based(env)
        self._masked = self._fns.has_masks and all(
            isinstance(s, gym.spaces.Discrete) for s in self.action_spaces.values())
        self.metadata: dict[str, Any] = {"render_modes": []}
        self.render_mode: Optional[str] = None
        self._rng = np.random.default_rng()
        self._keys: Any = None
        self._state: Any = None
        self._out: Any = None  # the last call's values on the device (obs kept for resets)
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
        self._keys, self._state, self._out = self._fns.reset(
            JaxFunctions.seed_keys(base, self.num_envs))
        for gone in self._gone.values():
            gone[:] = False
        self._over = np.zeros(self.num_envs, bool)
        return self._batch(self._out)

    def reset_rows(self, rows: Sequence[int]) -> SourceBatch:
        """Reset the copies of ``rows``, each with the next key of its own stream."""
        mask = np.zeros(self.num_envs, bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        self._keys, self._state, self._out = self._fns.reset_where(
            self._keys, self._state, self._out, mask)
        for gone in self._gone.values():
            gone[mask] = False
        self._over = self._over & ~mask
        return self._batch(self._out)

    def step(self, actions: Mapping[str, Any]) -> SourceBatch:
        """One vmapped ``step_env`` of every copy; idle and done agents play their first legal
        action (the action space's zero without masks), as the hub env has them do."""
        chosen: dict[str, Any] = {}
        for name in self.groups:
            values = np.asarray(actions[name])
            idle = self._gone[name]
            if name in self._acting:
                idle = idle | ~self._acting[name]
            if idle.any():
                masks = self._masks.get(name)
                if masks is not None:
                    values = np.where(idle, np.where(masks.any(-1), masks.argmax(-1), 0), values)
                else:
                    values = np.where(idle.reshape(idle.shape + (1,) * (values.ndim - 2)),
                                      np.zeros_like(values), values)
            chosen[name] = values
        self._keys, self._state, self._out = self._fns.step(
            self._keys, self._state, chosen, self._over)
        return self._batch(self._out, stepped=True)

    def close(self) -> None:
        """Drop the batch's state."""
        self._state = self._out = None

    # -- JaxMARL values ------------------------------------------------------------------

    def _batch(self, out: Mapping[str, Any], stepped: bool = False) -> SourceBatch:
        host = to_numpy(dict(out))  # one transfer
        over = np.asarray(host["all"], bool) if stepped else np.zeros(self.num_envs, bool)
        truncated = np.zeros(self.num_envs, bool)
        if over.any() and self._max_steps is not None and host.get("steps") is not None:
            truncated = over & (np.asarray(host["steps"]) >= self._max_steps)
        batch = SourceBatch(
            obs={name: _writable(as_space(host["obs"][name], self.observation_spaces[members[0]],
                                          (self.num_envs, len(members))))
                 for name, members in self.groups.items()},
            terminated=over & ~truncated, truncated=truncated)
        if stepped:
            batch.rewards = {name: np.asarray(r, np.float64) for name, r in host["rewards"].items()}
            batch.common_infos = dict(host["infos"]) if host["infos"] else None
            # agents done before the episode ends (the end decides the rest)
            batch.agent_terminated = {name: np.asarray(d, bool) & ~over[:, None]
                                      for name, d in host["dones"].items()}
            for name, ended in batch.agent_terminated.items():
                self._gone[name] |= ended
            self._over = self._over | over
        if self._masked:
            self._masks = {name: np.asarray(m).astype(np.int8)
                           for name, m in host["legal"].items()}
            batch.action_mask = dict(self._masks)
            if self._turn_based:
                self._acting = _choosing(self._masks, self._gone)
                batch.acting = dict(self._acting)
        return batch


def batch_functions_for(env: Any, groups: Mapping[str, Sequence[AgentID]]) -> BatchFunctions:
    """Return :class:`BatchFunctions` of ``env`` and ``groups``, made once per env object."""
    key = tuple((name, tuple(members)) for name, members in groups.items())
    return compiled_once(env, (BatchFunctions, key), lambda: BatchFunctions(env, groups))


def _choosing(masks: Mapping[str, np.ndarray],
              gone: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Who acts: the live agents with a choice, or, in a copy where none has one, every live
    agent with a legal action (as the hub env decides)."""
    choice = {name: (m.sum(-1) > 1) & ~gone[name] for name, m in masks.items()}
    anyone = np.any([c.any(-1) for c in choice.values()], axis=0)
    return {name: np.where(anyone[:, None], choice[name], (masks[name].sum(-1) >= 1)
                           & ~gone[name]) for name in masks}


def _writable(value: Any) -> Any:
    """``value`` with its arrays writable: JAX hands the host read-only views of its buffers."""
    if isinstance(value, Mapping):
        return {k: _writable(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_writable(v) for v in value)
    return value if value.flags.writeable else value.copy()
