"""Lockstep comparison of :func:`~marlhub.adapters.gymnasium.make_multi_agent` envs with native copies.

The native side is Gymnasium's own: ``num_agents`` envs made by
``gymnasium.make(env_id, **kwargs)`` (or by the user's creator), copy ``i``
reset with ``seed + i`` as the adapter promises, each stepped with its agent's
action while it runs. Every observation, reward and done flag must match, and
each agent's summed rewards must equal its native return.

Example:
    >>> compare_with_native("CartPole-v1", {"num_agents": 2}, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional, Union

import gymnasium as gym

from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import episode_over

__all__ = ["GymnasiumTwin", "compare_with_native"]


def compare_with_native(
    env_name_or_creator: Union[str, Callable[..., Any]],
    config: Optional[Mapping[str, Any]] = None,
    *,
    episodes: int = 5,
    seed: int = 0,
    max_steps: int = 1000,
) -> list[Finding]:
    """Step ``make_multi_agent(env_name_or_creator)(config)`` and native copies in lockstep.

    Args:
        env_name_or_creator: what :func:`~marlhub.adapters.gymnasium.make_multi_agent` takes.
        config: the config (``num_agents`` and the env's keys).
        episodes: how many episodes; episode ``e`` is seeded ``seed + e``.
        seed: the first episode's seed.
        max_steps: the step budget of one episode.

    Returns:
        ``equiv.trajectory`` and ``equiv.returns`` findings; empty when the adapter
        reports exactly what the native envs do.
    """
    from marlhub.adapters.gymnasium.adapter import make_multi_agent

    config = dict(config or {})
    adapted = make_multi_agent(env_name_or_creator)(config)
    num = int(config.pop("num_agents", 1))
    try:
        return compare_in_lockstep(
            adapted, lambda: GymnasiumTwin(env_name_or_creator, config, num),
            episodes=episodes, seed=seed, max_steps=max_steps,
        )
    finally:
        adapted.close()


class GymnasiumTwin(NativeTwin):
    """``num`` native Gymnasium envs, made by Gymnasium (or the creator), one per agent ``0..n-1``."""

    def __init__(self, source: Union[str, Callable[..., Any]], kwargs: Mapping[str, Any],
                 num: int) -> None:
        if isinstance(source, str):
            self.envs = [gym.make(source, **kwargs) for _ in range(num)]
        else:
            self.envs = [source(EnvContext(kwargs)) for _ in range(num)]
        self.sums: dict[Any, float] = {}
        self.live: list[int] = []

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        self.sums = dict.fromkeys(range(len(self.envs)), 0.0)
        self.live = list(range(len(self.envs)))
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if seed is None else seed + i)
            lock.expect("observations", first.obs.get(i), obs, agent=i)

    def step(self, step: Step, lock: Lockstep) -> None:
        still = []
        for agent in self.live:
            obs, reward, term, trunc, _ = self.envs[agent].step((step.actions or {})[agent])
            self.sums[agent] += float(reward)
            adapted = (step.obs.get(agent), step.rewards.get(agent), step.terminateds.get(agent),
                       step.truncateds.get(agent))
            native = (obs, float(reward), bool(term), bool(trunc))
            for what, a, b in zip(("observations", "rewards", "terminateds", "truncateds"),
                                  adapted, native):
                lock.expect(what, a, b, agent=agent)
            if not (term or trunc):
                still.append(agent)
        self.live = still
        over = episode_over(step.terminateds, step.truncateds)
        if over != (not still):
            lock.differ("episode end", f"__all__ is {over} but {len(still)} native envs still run")

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return not self.live

    def close(self) -> None:
        for env in self.envs:
            env.close()
