"""Jumanji as a batched source: ``N`` copies of one multi-agent env under ``jax.vmap`` and ``jit``.

:class:`JumanjiBatch` is what ``marlhub.make_vec("jumanji/<env>", N)`` holds:
Jumanji's ``reset`` and ``step`` vmapped over a batch of keys and states, each
group's values stacked as ``(num_envs, n, ...)`` arrays inside the same jitted
call (:class:`BatchFunctions`), so a step is one call and one transfer to the host.
Copy ``i`` walks its own key from ``jax.random.PRNGKey(seed + i)``
(:mod:`~marlhub.adapters.jumanji.functions`), so it is the hub env
``jumanji/<env>`` seeded ``seed + i``, step for step; a partial reset resets the
chosen copies with the next keys of their own streams (``jnp.where`` over the batch,
in one jitted call). Observations, masks, rewards and ends follow
:class:`~marlhub.adapters.jumanji.adapter.JumanjiHubEnv`.

Example:
    >>> import jumanji, numpy as np
    >>> source = JumanjiBatch(jumanji.make("Cleaner-v0", time_limit=4), 5)
    >>> source.groups
    {'agents': ['agent_0', 'agent_1', 'agent_2']}
    >>> batch = source.reset(0)
    >>> batch.obs["agents"]["grid"].shape, batch.action_mask["agents"].shape
    ((5, 3, 10, 10), (5, 3, 4))
    >>> batch = source.step({"agents": batch.action_mask["agents"].argmax(-1)})
    >>> batch.rewards["agents"].shape, batch.terminated.tolist()
    ((5, 3), [False, False, False, False, False])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.batched import SourceBatch, group_agents
from marlhub.adapters.jax_env import SEEDING, compiled_once, to_numpy
from marlhub.adapters.jumanji.adapter import DISCOUNT_KEY
from marlhub.adapters.jumanji.functions import BATCH_RTOL, LAST, seed_keys
from marlhub.adapters.jumanji.specs import AgentLayout, layout_of, plain_tree
from marlhub.core import AgentID
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["BatchFunctions", "JumanjiBatch", "batch_functions_for"]

class BatchFunctions:
    """One Jumanji env's batch functions, jitted, with each group's values stacked inside the
    jitted call: one call and one transfer to the host per step (see the module).

    ``reset(keys)``, ``reset_where(keys, state, out, rows)`` return ``(keys, state, out)``,
    ``step(state, actions)`` returns ``(state, out)``; ``out`` holds ``obs`` per group
    (each agent's observation, ``(num_envs, n, ...)``), ``discounts`` per group
    (``(num_envs, n)``), ``per_agent`` (whether Jumanji's discount has one per agent) and,
    after a step, ``rewards`` per group, ``last`` (``StepType.LAST``, per copy) and
    ``extras``.

    Args:
        env: a multi-agent Jumanji ``Environment``.
        layout: its :class:`~marlhub.adapters.jumanji.specs.AgentLayout`.
        groups: the agents of each group, in order.
    """

    def __init__(self, env: Any, layout: AgentLayout,
                 groups: Mapping[str, Sequence[AgentID]]) -> None:
        import jax
        import jax.numpy as jnp

        rows = {name: jnp.asarray([layout.agents.index(a) for a in members])
                for name, members in groups.items()}
        order = np.argsort([layout.agents.index(a) for m in groups.values() for a in m])

        def spread(tree: Any, idx: Any, top: bool = True) -> Any:
            """Each agent of ``idx``'s observation: the team's, with its own mask row."""
            if isinstance(tree, dict):
                return {k: v[:, idx] if top and layout.masked and k == ACTION_MASK_KEY
                        else spread(v, idx, False) for k, v in tree.items()}
            return jnp.broadcast_to(tree[:, None], (tree.shape[0], len(idx)) + tree.shape[1:])

        def per_group(value: Any) -> dict[str, Any]:  # a reward or discount
            return {name: jnp.broadcast_to(value[:, None], (value.shape[0], len(idx)))
                    if value.ndim == 1 else value[:, idx] for name, idx in rows.items()}

        def observe(timestep: Any) -> dict[str, Any]:
            tree = plain_tree(layout.observation_spec, timestep.observation)
            return {"obs": {name: spread(tree, idx) for name, idx in rows.items()},
                    "discounts": per_group(timestep.discount),
                    "per_agent": timestep.discount.ndim > 1}

        def reset_all(keys: Any) -> Any:
            keys, k = jnp.moveaxis(jax.vmap(jax.random.split)(keys), 1, 0)
            state, timestep = jax.vmap(env.reset)(k)
            return keys, state, observe(timestep)

        def reset_where(keys: Any, state: Any, out: Any, rows_: Any) -> Any:
            new_keys, new_state, new_out = reset_all(keys)

            def pick(new: Any, old: Any) -> Any:
                return jnp.where(rows_.reshape(rows_.shape + (1,) * (new.ndim - 1)), new, old)

            return (pick(new_keys, keys), jax.tree.map(pick, new_state, state),
                    {**new_out, "obs": jax.tree.map(pick, new_out["obs"], out["obs"])})

        def step(state: Any, actions: Mapping[str, Any]) -> Any:
            joined = jnp.concatenate([actions[name] for name in groups], axis=1)[:, order]
            state, timestep = jax.vmap(env.step)(state, joined.astype(layout.action_dtype))
            return state, {**observe(timestep), "rewards": per_group(timestep.reward),
                           "last": timestep.step_type == LAST, "extras": timestep.extras}

        self.reset = jax.jit(reset_all)
        self.reset_where = jax.jit(reset_where)
        self.step = jax.jit(step)


class JumanjiBatch:
    """A multi-agent Jumanji env's ``num_envs`` copies under ``jax.vmap`` (see the module).

    Args:
        env: a multi-agent Jumanji ``Environment``.
        num_envs: how many copies.
        name: the env's name, for messages.
    """

    seeding = SEEDING
    device = None
    #: How far the batch's floats may be from one copy's, relatively or absolutely, as XLA
    #: compiles the batch apart from one copy.
    tolerance = BATCH_RTOL

    def __init__(self, env: Any, num_envs: int, *, name: Optional[str] = None) -> None:
        self.jumanji_env = env
        self.num_envs = int(num_envs)
        self.layout = layout_of(env, name or type(env).__name__)
        self.possible_agents: list[AgentID] = list(self.layout.agents)
        self.observation_spaces = {a: self.layout.observation_space for a in self.possible_agents}
        self.action_spaces = dict(self.layout.action_spaces)
        self.groups = group_agents(self.possible_agents, self.observation_spaces.__getitem__,
                                   self.action_spaces.__getitem__)
        self._fns = batch_functions_for(env, self.layout, self.groups)
        self.metadata: dict[str, Any] = {"render_modes": []}
        self.render_mode: Optional[str] = None
        self._rng = np.random.default_rng()
        self._keys: Any = None
        self._state: Any = None
        self._out: Any = None  # the last call's observations on the device (kept for resets)

    def reset(self, seed: Optional[int]) -> SourceBatch:
        """Reset every copy: copy ``i`` from ``jax.random.PRNGKey(seed + i)`` (random seeds
        for None)."""
        base = int(self._rng.integers(2**31)) if seed is None else int(seed)
        self._keys, self._state, self._out = self._fns.reset(seed_keys(base, self.num_envs))
        return self._batch(self._out)

    def reset_rows(self, rows: Sequence[int]) -> SourceBatch:
        """Reset the copies of ``rows``, each with the next key of its own stream."""
        mask = np.zeros(self.num_envs, bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        self._keys, self._state, self._out = self._fns.reset_where(
            self._keys, self._state, self._out, mask)
        return self._batch(self._out)

    def step(self, actions: Mapping[str, Any]) -> SourceBatch:
        """One vmapped ``step`` of every copy (those whose episode ended too: the vector env
        reads nothing of theirs until their reset)."""
        self._state, out = self._fns.step(
            self._state, {name: np.asarray(actions[name]) for name in self.groups})
        self._out = {"obs": out["obs"]}
        return self._batch(out, stepped=True)

    def close(self) -> None:
        """Drop the batch's state."""
        self._state = self._out = None

    # -- Jumanji values --------------------------------------------------------------

    def _batch(self, out: Mapping[str, Any], stepped: bool = False) -> SourceBatch:
        host = to_numpy(dict(out))  # one transfer
        over = np.asarray(host["last"], bool) if stepped else np.zeros(self.num_envs, bool)
        space = self.layout.observation_space
        batch = SourceBatch(
            obs={name: _values(host["obs"][name], space, (self.num_envs, len(members)))
                 for name, members in self.groups.items()},
            terminated=np.zeros(self.num_envs, bool), truncated=np.zeros(self.num_envs, bool))
        if self.layout.masked:  # who has a legal action acts (see JumanjiHubEnv)
            batch.action_mask = {name: obs[ACTION_MASK_KEY] for name, obs in batch.obs.items()}
            batch.acting = {name: mask.any(-1) for name, mask in batch.action_mask.items()}
        if bool(host["per_agent"]):
            batch.infos = {name: {DISCOUNT_KEY: np.asarray(d, np.float64)}
                           for name, d in host["discounts"].items()}
        if not stepped:
            return batch
        ended = {name: over[:, None] & (np.asarray(d) == 0) for name, d in
                 host["discounts"].items()}
        batch.terminated = over & np.all([e.all(-1) for e in ended.values()], axis=0)
        batch.truncated = over & ~batch.terminated
        batch.agent_terminated = ended  # at a mixed end, those of discount 0
        batch.rewards = {name: np.asarray(r, np.float64) for name, r in host["rewards"].items()}
        batch.common_infos = {k: np.asarray(v) for k, v in host["extras"].items()} or None
        return batch


def batch_functions_for(env: Any, layout: AgentLayout,
                        groups: Mapping[str, Sequence[AgentID]]) -> BatchFunctions:
    """Return :class:`BatchFunctions` of ``env`` and ``groups``, made once per env object."""
    key = tuple((name, tuple(members)) for name, members in groups.items())
    return compiled_once(env, (BatchFunctions, key), lambda: BatchFunctions(env, layout, groups))


def _values(value: Any, space: gym.Space, lead: tuple[int, ...]) -> Any:
    """``value`` (numpy, from the device) as a batch of elements of ``space``: its dtype, and
    its shape after the ``lead`` dimensions ``(num_envs, n)``; writable (JAX hands the host
    read-only buffers)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: _values(value[k], s, lead) for k, s in space.spaces.items()}
    return np.array(value, dtype=space.dtype).reshape(lead + tuple(space.shape or ()))
