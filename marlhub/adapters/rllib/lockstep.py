"""Lockstep comparison of :func:`~marlhub.adapters.rllib.from_rllib` with the RLlib env itself.

The native side is a second instance of the RLlib env, reset and stepped
directly, as RLlib's env runners do. The adapter passes values through, so
every dict must be the native one; the contract adds only ``"__all__"`` in a
done dict that lacks it, which must then be False, and the last observation
again for an agent that acted and ends terminated without one
(``done.final_obs``).

Example:
    >>> from marlhub.envs import TicTacToe
    >>> compare_with_native(TicTacToe, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import with_all

__all__ = ["RLlibTwin", "compare_with_native"]


def compare_with_native(
    factory: Callable[[], Any],
    *,
    episodes: int = 3,
    seed: Optional[int] = 0,
    max_steps: int = 1000,
    adapt: Optional[Callable[[Any], Any]] = None,
) -> list[Finding]:
    """Step ``from_rllib(factory(), check=False)`` and another ``factory()`` in lockstep.

    Args:
        factory: a zero-argument callable returning a fresh RLlib env; called twice.
        episodes: how many episodes; episode ``i`` is reset with ``seed + i``.
        seed: the first episode's seed.
        max_steps: steps per episode at most.
        adapt: the adapter under comparison (default ``from_rllib(env, check=False)``).

    Returns:
        ``equiv.trajectory`` and ``equiv.returns`` findings; empty when the adapter
        reports exactly what the RLlib env does.
    """
    from marlhub.adapters.rllib.adapter import RLlibEnv

    hub = (adapt or (lambda env: RLlibEnv(env, check=False)))(factory())
    return compare_in_lockstep(hub, lambda: RLlibTwin(factory()), episodes=episodes, seed=seed,
                               max_steps=max_steps)


class RLlibTwin(NativeTwin):
    """The RLlib env stepped directly with the same actions."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.sums: dict[Any, float] = {}
        self.over = False
        self.last_obs: dict[Any, Any] = {}

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        self.sums, self.over = {}, False
        obs, infos = self.env.reset(seed=seed, options=None)
        self.last_obs = dict(obs)
        lock.expect("observations", first.obs, obs)
        lock.expect("infos", first.infos, infos)

    def step(self, step: Step, lock: Lockstep) -> None:
        obs, rewards, terminateds, truncateds, infos = self.env.step(dict(step.actions or {}))
        for agent, reward in rewards.items():
            self.sums[agent] = self.sums.get(agent, 0.0) + float(reward)
        over = bool(terminateds.get(ALL)) or bool(truncateds.get(ALL))
        expected = dict(obs)
        for agent in step.obs:
            ends_terminated = bool(terminateds.get(agent) or terminateds.get(ALL))
            if agent not in obs and agent in self.last_obs and ends_terminated:
                expected[agent] = self.last_obs[agent]  # done.final_obs, as RLlib fills it in
        self.last_obs.update(obs)
        lock.expect("observations", step.obs, expected)
        lock.expect("terminateds", step.terminateds, with_all(terminateds))
        lock.expect("truncateds", step.truncateds, with_all(truncateds))
        lock.expect("infos", step.infos, infos)
        lock.expect("rewards", step.rewards, rewards, fatal=False)
        self.over = over

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.over

    def close(self) -> None:
        close = getattr(self.env, "close", None)
        if callable(close):
            close()
