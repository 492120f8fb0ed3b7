"""Lockstep comparison of a ``jumanji/`` hub env with Jumanji's own code path.

The native twin is the Jumanji env driven as Jumanji's README drives it, with the
hub's keys (:mod:`~marlhub.adapters.jumanji.functions` says why they are these)::

    key = jax.random.PRNGKey(seed)
    key, k = jax.random.split(key); state, timestep = jax.jit(env.reset)(k)
    state, timestep = jax.jit(env.step)(state, actions)      # one action row per agent

The hub's actors' actions are Jumanji's rows; an agent the hub has wait (no legal
action) plays zero, as the hub does. After every step the hub's observations must be
Jumanji's (agent ``i``'s ``action_mask`` its row ``i``, every other field the whole of
Jumanji's), its
rewards Jumanji's (a team reward paid to every agent), and the hub's end of episode
Jumanji's ``StepType.LAST``; each agent's summed rewards its native return.

Example:
    >>> import marlhub, jumanji
    >>> hub = marlhub.make("jumanji/Cleaner-v0", {"time_limit": 4})
    >>> compare_with_native(hub, lambda: jumanji.make("Cleaner-v0", time_limit=4), episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

from marlhub.adapters.jax_env import JaxTwin, to_numpy
from marlhub.adapters.jumanji.specs import fields
from marlhub.contract.findings import Finding
from marlhub.episode.lockstep import Lockstep, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["JumanjiTwin", "compare_with_native"]


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and Jumanji's env from ``make_native()`` in lockstep; list differences."""
    return compare_in_lockstep(hub, lambda: JumanjiTwin(make_native()), episodes=episodes,
                               seed=seed, max_steps=max_steps)


class JumanjiTwin(JaxTwin):
    """A Jumanji env stepped with ``jax.jit(env.reset)`` and ``jax.jit(env.step)``."""

    def __init__(self, env: Any) -> None:
        import jax

        super().__init__(env, jax.jit(env.reset), jax.jit(env.step),
                         [f"agent_{i}" for i in range(int(env.num_agents))])

    def start(self, key: Any) -> Any:
        self.state, timestep = self.reset_fn(key)
        return timestep.observation

    def step(self, step: Step, lock: Lockstep) -> None:
        spec = self.env.action_spec
        played = dict(step.actions or {})  # an agent without a legal action waits: zero
        actions = np.asarray([played.get(a, np.zeros(spec.shape[1:])) for a in self.agents],
                             dtype=np.dtype(spec.dtype))
        self.state, timestep = self.step_fn(self.state, actions)
        timestep = to_numpy(timestep)
        reward = np.asarray(timestep.reward, np.float64)
        native = {a: float(reward if reward.ndim == 0 else reward[i])
                  for i, a in enumerate(self.agents)}
        self.settle(step, lock, native, bool(timestep.step_type == 2),  # StepType.LAST
                    f"Jumanji's step_type is {int(timestep.step_type)} (2 = LAST)")
        lock.expect("observations", step.obs, self._seen(timestep.observation, step.obs),
                    check_dtype=False)

    def _seen(self, observation: Any, hub_obs: Mapping[Any, Any]) -> dict[Any, Any]:
        """Jumanji's observation as each agent of ``hub_obs`` is shown it: every field whole,
        the ``action_mask`` the agent's row; in the hub's order and dtypes."""
        return {a: _as(_agent_view(self.env.observation_spec, observation, i), hub_obs[a])
                for i, a in enumerate(self.agents) if a in hub_obs}


def _agent_view(spec: Any, value: Any, index: int, top: bool = True) -> Any:
    named = fields(spec)
    if not named:
        return np.asarray(value)
    return {key: np.asarray(getattr(value, key))[index] if top and key == ACTION_MASK_KEY
            else _agent_view(child, getattr(value, key), index, False) for key, child in named}


def _as(native: Any, hub: Any) -> Any:
    """``native`` in ``hub``'s key order, shapes and dtypes (for an exact comparison)."""
    if isinstance(hub, Mapping):
        return {k: _as(native[k], v) for k, v in hub.items()}
    return np.asarray(native).reshape(np.shape(hub)).astype(np.asarray(hub).dtype)
