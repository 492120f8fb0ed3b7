"""Lockstep comparison of a ``jaxmarl/`` hub env with JaxMARL's own code path.

The native twin is the JaxMARL env driven as JaxMARL's examples drive it::

    key = jax.random.PRNGKey(seed)
    key, k = jax.random.split(key); obs, state = env.reset(k)
    key, k = jax.random.split(key); obs, state, rewards, dones, infos = env.step(k, state, actions)

(:mod:`~marlhub.adapters.jaxmarl.functions` says why the hub's keys are these.)
Every agent needs an action there: the actors' are the hub's, every other agent
(done, or waiting for its turn in Hanabi) plays its first legal action (the
action space's zero without masks), as the hub env does. After every step the hub's rewards and end of episode must be
JaxMARL's, and its observations too until the last step (where JaxMARL's
``step`` returns the next episode's first observations and the hub the true
last ones); each agent's summed rewards its native return.

Example:
    >>> import marlhub, jaxmarl
    >>> hub = marlhub.make("jaxmarl/MPE_simple_spread_v3", {"max_steps": 4})
    >>> compare_with_native(hub, lambda: jaxmarl.make("MPE_simple_spread_v3", max_steps=4),
    ...                     episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

from marlhub.adapters.jaxmarl.functions import functions_for
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import flag

__all__ = ["JaxMarlTwin", "compare_with_native"]


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and JaxMARL's env from ``make_native()`` in lockstep; list differences."""
    return compare_in_lockstep(hub, lambda: JaxMarlTwin(make_native()), episodes=episodes,
                               seed=seed, max_steps=max_steps)


class JaxMarlTwin(NativeTwin):
    """A JaxMARL env stepped with its own ``reset(key)`` and ``step(key, state, actions)``."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.reset_fn = env.reset  # JaxMARL's own, jitted by JaxMARL
        self.step_fn = env.step
        discrete = all(type(env.action_space(a)).__name__ == "Discrete" for a in env.agents)
        functions = functions_for(env)
        self.masks_fn = functions.legal if functions.has_masks and discrete else None
        self.key: Any = None
        self.state: Any = None
        self.sums: dict[Any, float] = {}
        self.done = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        import jax

        if seed is not None:
            self.key = jax.random.PRNGKey(seed)
        self.key, k = jax.random.split(self.key)
        obs, self.state = self.reset_fn(k)
        self.sums = dict.fromkeys(self.env.agents, 0.0)
        self.done = False
        lock.expect("observations", first.obs, self._seen(obs, first.obs), check_dtype=False)

    def step(self, step: Step, lock: Lockstep) -> None:
        import jax

        played = dict(step.actions or {})
        legal = jax.device_get(self.masks_fn(self.state)) if self.masks_fn else {}
        for agent in self.env.agents:
            if agent not in played:
                mask = np.asarray(legal[agent]) if agent in legal else None
                played[agent] = int(np.argmax(mask)) if mask is not None and mask.any() \
                    else np.zeros(self.env.action_space(agent).shape,
                                  np.dtype(self.env.action_space(agent).dtype))
        self.key, k = jax.random.split(self.key)
        obs, self.state, rewards, dones, _ = self.step_fn(
            k, self.state, {a: np.asarray(v) for a, v in played.items()})
        obs, rewards, dones = jax.device_get((obs, rewards, dones))
        self.done = bool(dones[ALL])
        native = {a: float(rewards[a]) for a in step.rewards}
        for agent, reward in native.items():
            self.sums[agent] = self.sums.get(agent, 0.0) + reward
        lock.expect("rewards", step.rewards, native, fatal=False, check_dtype=False)
        hub_done = flag(step.terminateds, ALL) or flag(step.truncateds, ALL)
        if hub_done != self.done:
            lock.differ("end of episode", f"hub __all__ done={hub_done}, JaxMARL done={self.done}")
        if not self.done:
            lock.expect("observations", step.obs, self._seen(obs, step.obs), check_dtype=False)

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.done

    def _seen(self, obs: Mapping[Any, Any], hub_obs: Mapping[Any, Any]) -> dict[Any, Any]:
        """JaxMARL's observations of the agents the hub shows, as numpy, in the hub's order."""
        return {a: np.asarray(obs[a]).reshape(np.shape(hub_obs[a])).astype(
            np.asarray(hub_obs[a]).dtype) for a in hub_obs if a in obs}
