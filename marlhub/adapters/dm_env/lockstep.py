"""Lockstep comparison of a multi-player dm_env hub env with Shimmy's wrapper of a second copy.

The native side is ``shimmy.DmControlMultiAgentCompatibilityV0(env=native)``, Shimmy's
PettingZoo parallel env over a dm_env of lists per player, the peer people use for
dm_control's soccer: ``reset(seed=s)`` (Shimmy gives the env
``np.random.RandomState(s)``; the hub env seeds the env's own one in place, which draws
the same numbers), then ``step({agent: action})`` in Shimmy's agent order. After every
step the hub env's observations, rewards and end of episode must be what Shimmy
returns, and each agent's summed rewards Shimmy's.

Shimmy's agent ``player_i`` is the hub's ``i``-th agent. One difference is Shimmy's,
and the comparison reads past it: Shimmy 2.0.1's multi-agent wrapper reports a ``LAST``
step with discount 0 (a goal in soccer) as *truncated* and one with discount 1 (the
time limit) as *terminated*, the reverse of dm_env's convention, of the hub env and of
Shimmy's own single-agent ``DmControlCompatibilityV0``. The twin therefore reads the end
from what Shimmy puts in ``infos`` (``timestep.step_type`` and ``timestep.discount``),
by dm_env's rule.

Example:
    >>> from dm_control.locomotion import soccer
    >>> from marlhub.adapters.dm_env import from_dm_env
    >>> make = lambda: soccer.load(team_size=1, time_limit=0.5)
    >>> compare_with_native(from_dm_env(make()), make, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

import numpy as np

from marlhub.backends import import_backend
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step

__all__ = ["ShimmyTwin", "compare_with_native"]

#: Shimmy's module of the multi-agent dm_env wrapper (it imports dm_control and PettingZoo).
_SHIMMY = "shimmy.dm_control_multiagent_compatibility"
_LAST = 2  # dm_env.StepType.LAST


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
    """Step ``hub`` and Shimmy's wrapper of ``make_native()`` in lockstep; list differences.

    Args:
        hub: a :class:`~marlhub.adapters.dm_env.adapter.DmEnvHubEnv`.
        make_native: makes a second native dm_env, built as the hub's was.
        episodes: how many episodes; episode ``i`` is seeded ``seed + i``.
        seed: the first episode's seed.
        max_steps: steps per episode at most.

    Raises:
        MissingDependencyError: Shimmy, dm_control or PettingZoo is not installed.
    """
    shimmy = import_backend(_SHIMMY, package=None, extra="dmc",
                            feature="The lockstep of a dm_env with Shimmy (--against-native)")
    return compare_in_lockstep(
        hub, lambda: ShimmyTwin(hub, shimmy.DmControlMultiAgentCompatibilityV0(env=make_native())),
        episodes=episodes, seed=seed, max_steps=max_steps)


class ShimmyTwin(NativeTwin):
    """Shimmy's ``DmControlMultiAgentCompatibilityV0`` over a second copy of the native env."""

    def __init__(self, hub: Any, shimmy_env: Any) -> None:
        self.hub = hub
        self.env = shimmy_env
        self.ids = dict(zip(shimmy_env.possible_agents, hub.possible_agents))
        self.sums: dict[Any, float] = {}
        self.done = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        if seed is not None:  # envs seeded otherwise than through their RandomState
            self.hub.reseed(self.env._env, seed)
        obs, _ = self.env.reset(seed=seed)
        self.sums = dict.fromkeys(self.hub.possible_agents, 0.0)
        self.done = False
        lock.expect("observations", first.obs, self._ours(obs), check_dtype=False)

    def step(self, step: Step, lock: Lockstep) -> None:
        played: Mapping[Any, Any] = step.actions or {}
        actions = {name: played[agent] for name, agent in self.ids.items()}
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        native = {self.ids[name]: float(np.asarray(r)) for name, r in rewards.items()}
        for agent, reward in native.items():
            self.sums[agent] += reward
        lock.expect("rewards", step.rewards, native, fatal=False, check_dtype=False)
        lock.expect("observations", step.obs, self._ours(obs), check_dtype=False)
        self.done = any(terminations.values()) or any(truncations.values())
        terminateds, truncateds = self._ends(infos)
        lock.expect("terminateds", dict(step.terminateds), terminateds)
        lock.expect("truncateds", dict(step.truncateds), truncateds)

    def _ends(self, infos: Mapping[Any, Any]) -> tuple[dict[Any, bool], dict[Any, bool]]:
        """The done dicts by dm_env's rule, from the step type and discount Shimmy reports."""
        agents = self.hub.possible_agents
        last = any(int(info["timestep.step_type"]) == _LAST for info in infos.values())
        if not last:
            flags = dict.fromkeys(agents, False)
            return {**flags, ALL: False}, {**flags, ALL: False}
        discount = np.asarray(next(iter(infos.values()))["timestep.discount"], float)
        per_player = np.broadcast_to(discount.reshape(-1), (len(agents),))
        terminated = {a: bool(d == 0.0) for a, d in zip(agents, per_player)}
        every = all(terminated.values())
        return ({**terminated, ALL: every},
                {**{a: not t for a, t in terminated.items()}, ALL: not every})

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.done

    def close(self) -> None:
        # Not Shimmy's close(), which frees dm_control's physics and then has the env free
        # it again, and reads a `physics` other dm_envs lack.
        self.env._env.close()

    def _ours(self, obs: Mapping[Any, Any]) -> dict[Any, Any]:
        return {self.ids[name]: value for name, value in obs.items()}
