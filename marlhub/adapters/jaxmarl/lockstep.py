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

from marlhub.adapters.jax_env import JaxTwin
from marlhub.adapters.jaxmarl.functions import functions_for
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, compare_in_lockstep
from marlhub.episode.play import Step

__all__ = ["JaxMarlTwin", "compare_with_native"]


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and JaxMARL's env from ``make_native()`` in lockstep; list differences."""
    return compare_in_lockstep(hub, lambda: JaxMarlTwin(make_native()), episodes=episodes,
                               seed=seed, max_steps=max_steps)


class JaxMarlTwin(JaxTwin):
    """A JaxMARL env stepped with its own ``reset(key)`` and ``step(key, state, actions)``."""

    def __init__(self, env: Any) -> None:
        super().__init__(env, env.reset, env.step, list(env.agents))  # jitted by JaxMARL
        discrete = all(type(env.action_space(a)).__name__ == "Discrete" for a in env.agents)
        functions = functions_for(env)
        self.masks_fn = functions.legal if functions.has_masks and discrete else None

    def start(self, key: Any) -> Any:
        obs, self.state = self.reset_fn(key)
        return obs

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
        done = bool(dones[ALL])
        self.settle(step, lock, {a: float(rewards[a]) for a in step.rewards}, done,
                    f"JaxMARL done={done}")
        if not self.done:
            lock.expect("observations", step.obs, self._seen(obs, step.obs), check_dtype=False)

    def _seen(self, obs: Mapping[Any, Any], hub_obs: Mapping[Any, Any]) -> dict[Any, Any]:
        """JaxMARL's observations of the agents the hub shows, as numpy, in the hub's order."""
        return {a: np.asarray(obs[a]).reshape(np.shape(hub_obs[a])).astype(
            np.asarray(hub_obs[a]).dtype) for a in hub_obs if a in obs}
