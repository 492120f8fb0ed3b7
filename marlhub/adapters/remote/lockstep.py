"""Lockstep comparison of a remote env with a local instance of the same id.

The server says which registry id and config it made its world from
(``RemoteEnv.env_id`` / ``env_config``); the twin is that env, made here.
Both get the same seed and actions (the :mod:`marlhub.episode.lockstep`
scaffold), and after every reset and step all five dicts must be equal:
observations (dtype and key order included), rewards, done flags, infos;
each agent's summed rewards must be its local return. Anything the wire
changed would show here.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> compare_with_local(RockPaperScissors(), RockPaperScissors(), episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from marlhub.contract.findings import Finding
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import episode_over

__all__ = ["LocalTwin", "compare_with_local"]


class LocalTwin(NativeTwin):
    """A local hub env stepped with the remote env's actions."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.sums: dict[Any, float] = {}
        self.over = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        obs, infos = self.env.reset(seed=seed, options=None)
        self.sums, self.over = {}, False
        lock.expect("observations", first.obs, obs)
        lock.expect("infos", first.infos, infos)
        lock.expect("agents", list(getattr(lock.run.env, "agents", [])), list(self.env.agents))

    def step(self, step: Step, lock: Lockstep) -> None:
        obs, rewards, terminateds, truncateds, infos = self.env.step(step.actions)
        for agent, reward in rewards.items():
            self.sums[agent] = self.sums.get(agent, 0.0) + float(reward)
        self.over = episode_over(terminateds, truncateds)
        lock.expect("observations", step.obs, obs)
        lock.expect("terminateds", step.terminateds, terminateds)
        lock.expect("truncateds", step.truncateds, truncateds)
        lock.expect("infos", step.infos, infos)
        lock.expect("agents", list(getattr(lock.run.env, "agents", [])), list(self.env.agents))
        lock.expect("rewards", step.rewards, rewards, fatal=False)

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.over

    def close(self) -> None:
        self.env.close()


def compare_with_local(remote: Any, local: Any, *, episodes: int = 3, seed: Optional[int] = 0,
                       max_steps: int = 1000) -> list[Finding]:
    """Step ``remote`` and ``local`` in lockstep; return ``equiv.*`` findings (empty when equal)."""
    return compare_in_lockstep(remote, lambda: LocalTwin(local), episodes=episodes, seed=seed,
                               max_steps=max_steps)
