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

from marlhub.adapters.jumanji.specs import fields
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import flag
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["JumanjiTwin", "compare_with_native"]


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and Jumanji's env from ``make_native()`` in lockstep; list differences."""
    return compare_in_lockstep(hub, lambda: JumanjiTwin(make_native()), episodes=episodes,
                               seed=seed, max_steps=max_steps)


class JumanjiTwin(NativeTwin):
    """A Jumanji env stepped with ``jax.jit(env.reset)`` and ``jax.jit(env.step)``."""

    def __init__(self, env: Any) -> None:
        import jax

        self.env = env
        self.reset_fn = jax.jit(env.reset)
        self.step_fn = jax.jit(env.step)
        self.agents = [f"agent_{i}" for i in range(int(env.num_agents))]
        self.key: Any = None
        self.state: Any = None
        self.sums: dict[Any, float] = {}
        self.done = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        import jax

        if seed is not None:
            self.key = jax.random.PRNGKey(seed)
        self.key, k = jax.random.split(self.key)
        self.state, timestep = self.reset_fn(k)
        self.sums = dict.fromkeys(self.agents, 0.0)
        self.done = False
        lock.expect("observations", first.obs, self._seen(timestep.observation, first.obs),
                    check_dtype=False)

    def step(self, step: Step, lock: Lockstep) -> None:
        import jax

        spec = self.env.action_spec
        played = dict(step.actions or {})  # an agent without a legal action waits: zero
        actions = np.asarray([played.get(a, np.zeros(spec.shape[1:])) for a in self.agents],
                             dtype=np.dtype(spec.dtype))
        self.state, timestep = self.step_fn(self.state, actions)
        timestep = jax.device_get(timestep)
        self.done = bool(timestep.step_type == 2)  # StepType.LAST
        reward = np.asarray(timestep.reward, np.float64)
        native = {a: float(reward if reward.ndim == 0 else reward[i])
                  for i, a in enumerate(self.agents)}
        for agent, value in native.items():
            self.sums[agent] += value
        lock.expect("rewards", step.rewards, native, fatal=False, check_dtype=False)
        hub_done = flag(step.terminateds, ALL) or flag(step.truncateds, ALL)
        if hub_done != self.done:
            lock.differ("end of episode", f"hub __all__ done={hub_done}, Jumanji's step_type "
                        f"is {int(timestep.step_type)} (2 = LAST)")
        lock.expect("observations", step.obs, self._seen(timestep.observation, step.obs),
                    check_dtype=False)

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.done

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
