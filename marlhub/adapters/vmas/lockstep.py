"""Lockstep comparison of a ``vmas/`` hub env with a native VMAS env.

The native twin is ``vmas.make_env(scenario, num_envs=1, ...)`` driven as
VMAS's documentation drives it: ``reset(seed=s)``, then ``step`` with one
``(num_envs, action_size)`` tensor per agent, reading the per-agent lists it
returns. Both get the same seed and actions (the
:mod:`marlhub.episode.lockstep` scaffold); after every step the hub env's
observations, rewards and end of episode must be VMAS's, and each agent's
summed rewards its native return.

VMAS keeps one random state for all its envs in a process (a class
attribute); the twin, like the hub env, keeps a stream of its own
(:class:`~marlhub.adapters.vmas.random_stream.RandomStream`), as it would in
a process of its own, so the two envs draw the same numbers.

Example:
    >>> import marlhub, vmas
    >>> hub = marlhub.make("vmas/balance", {"max_steps": 5})
    >>> compare_with_native(hub, lambda: vmas.make_env("balance", num_envs=1, max_steps=5),
    ...                     episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

import numpy as np

from marlhub.adapters.vmas.random_stream import RandomStream
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import flag

__all__ = ["VmasTwin", "compare_with_native"]


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and a native VMAS env from ``make_native()`` in lockstep; list differences."""
    return compare_in_lockstep(hub, lambda: VmasTwin(make_native()), episodes=episodes,
                               seed=seed, max_steps=max_steps)


class VmasTwin(NativeTwin):
    """A native VMAS env (one copy) on its own random stream."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.names = [agent.name for agent in env.agents]
        self.sums: dict[str, float] = {}
        self.done = False
        self.stream = RandomStream(env)

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        with self.stream:
            obs = self.env.reset(seed=seed)
        self.sums = dict.fromkeys(self.names, 0.0)
        self.done = False
        lock.expect("observations", first.obs, self._by_name(obs))

    def step(self, step: Step, lock: Lockstep) -> None:
        import torch

        played: Mapping[Any, Any] = step.actions or {}
        actions = [torch.tensor(np.asarray(played[name])).reshape(1, -1) for name in self.names]
        with self.stream:
            obs, rewards, dones, _ = self.env.step(actions)
        native_rewards = {name: float(r[0]) for name, r in zip(self.names, rewards)}
        for name, reward in native_rewards.items():
            self.sums[name] += reward
        self.done = bool(dones[0])
        lock.expect("observations", step.obs, self._by_name(obs))
        lock.expect("rewards", step.rewards, native_rewards, fatal=False, check_dtype=False)
        hub_done = flag(step.terminateds, ALL) or flag(step.truncateds, ALL)
        if hub_done != self.done:
            lock.differ("end of episode", f"hub __all__ done={hub_done}, VMAS done={self.done}")

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.done

    def _by_name(self, obs: Any) -> dict[str, Any]:
        return {name: _numpy(o) for name, o in zip(self.names, obs)}


def _numpy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _numpy(v) for k, v in value.items()}
    return value[0].detach().cpu().numpy()
