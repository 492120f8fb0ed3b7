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
from marlhub.contract.compare import why_different
from marlhub.contract.findings import Finding
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import flag

__all__ = ["VmasTwin", "compare_batch_with_native", "compare_with_native"]


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


def compare_batch_with_native(envs: Any, make_native: Callable[[], Any], *, seed: int = 0,
                              steps: int = 30) -> list[Finding]:
    """Step a batched vector env of VMAS and a native VMAS batch in lockstep; list differences.

    ``envs`` is ``marlhub.make_vec("vmas/<scenario>", N, ...)`` (its array face is
    read); ``make_native()`` makes ``vmas.make_env(scenario, num_envs=N, ...)``, driven
    as TorchRL's ``VmasEnv`` drives it: ``step`` with one ``(N, size)`` tensor per
    agent, and each copy that ended in the last call reset with ``reset_at`` (all of
    them with one ``reset()``) before the observations are read again. After the first step copy 0 alone is reset
    (``reset_mask`` / ``reset_at(0)``), so the copies end at different times and
    every partial reset is a reset of some copies only. Observations, rewards and
    ends must agree in every copy (``equiv.trajectory``).
    """
    import torch

    native = make_native()
    stream = RandomStream(native)
    rng = np.random.default_rng(seed)
    batch = envs.reset_arrays(seed=seed)
    with stream:
        native_obs = native.reset(seed=seed)
    found = _batch_differs(envs, "reset", batch.obs, _by_group(envs, native_obs))
    ended = np.zeros(envs.num_envs, bool)
    for t in range(1, steps + 1):
        if found:
            return found
        actions = {name: _sample(envs, name, rng) for name in envs.groups}
        batch = envs.step_arrays(actions)
        per_agent = {agent: torch.as_tensor(actions[name][:, j]).reshape(envs.num_envs, -1)
                     for name, members in envs.groups.items() for j, agent in enumerate(members)}
        with stream:
            result = native.step([per_agent[a.name] for a in native.agents])
            obs = _reset_rows(native, result[0], np.flatnonzero(ended))
        rewards = result[1]
        dones = result[2] | result[3] if len(result) == 5 else result[2]
        dones = dones.cpu().numpy() & ~ended
        rewards = [r.clone() for r in rewards]
        for r in rewards:
            r[torch.as_tensor(ended)] = 0
        found = (_batch_differs(envs, f"step {t}", batch.obs, _by_group(envs, obs))
                 or _batch_differs(envs, f"step {t} rewards", batch.rewards,
                                   _by_group(envs, rewards))
                 or _batch_differs(envs, f"step {t} ends", batch.episode_terminated
                                   | batch.episode_truncated, dones))
        ended = dones
        if t == 1:  # copy 0 alone starts over: from now on the copies end at different times
            mask = np.arange(envs.num_envs) == 0
            batch = envs.reset_arrays(options={"reset_mask": mask})
            with stream:
                obs = _reset_rows(native, obs, [0])
            found = found or _batch_differs(envs, "reset of copy 0", batch.obs,
                                            _by_group(envs, obs))
            ended = ended & ~mask
    return found


def _reset_rows(native: Any, obs: Any, rows: Any) -> Any:
    """VMAS's ``reset_at`` of ``rows``, then the observations of those rows (the rest kept)."""
    import torch

    if len(rows) == 0:
        return obs
    if len(rows) == native.num_envs:  # every copy: one reset(), as TorchRL's VmasEnv
        return native.reset()
    for row in rows:
        native.reset_at(int(row), return_observations=False)
    fresh = native.get_from_scenario(get_observations=True, get_infos=False, get_rewards=False,
                                     get_dones=False)[0]
    index = torch.as_tensor(np.asarray(rows), dtype=torch.long)
    kept = [o.clone() for o in obs]
    for mine, new in zip(kept, fresh):
        mine[index] = new[index]
    return kept


def _sample(envs: Any, name: str, rng: np.random.Generator) -> np.ndarray:
    import gymnasium as gym

    space = envs.single_action_spaces[envs.groups[name][0]]
    shape = (envs.num_envs, len(envs.groups[name]))
    if isinstance(space, gym.spaces.Discrete):
        return rng.integers(space.start, space.start + space.n, size=shape)
    if isinstance(space, gym.spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=shape + space.nvec.shape)
    return rng.uniform(space.low, space.high, size=shape + space.shape).astype(space.dtype)


def _by_group(envs: Any, values: Any) -> dict[str, np.ndarray]:
    """VMAS's per-agent list of ``(N, ...)`` tensors as the array face's groups."""
    import torch

    index = {name: i for i, name in enumerate(envs.possible_agents)}
    return {name: torch.stack([values[index[a]] for a in members], 1).cpu().numpy()
            for name, members in envs.groups.items()}


def _batch_differs(envs: Any, where: str, ours: Any, native: Any) -> list[Finding]:
    reason = why_different(ours, native, check_dtype=False)
    if reason is None:
        return []
    return [Finding(EQUIV_TRAJECTORY, "error",
                    f"{envs.name()} and a native VMAS batch of {envs.num_envs} copies, seeded "
                    f"alike and given the same actions, differ at {where} ({reason}; ours vs "
                    "VMAS).")]
