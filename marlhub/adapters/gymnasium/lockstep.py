"""Lockstep comparison of :func:`~marlhub.adapters.gymnasium.make_multi_agent` envs with native copies.

The adapted env and ``num_agents`` native Gymnasium envs (native copy ``i``
reset with ``seed + i``, as the adapter promises) take the same seeded random
actions; every observation, reward and done flag must match, and each agent's
summed rewards must equal its native return.

Example:
    >>> compare_with_native("CartPole-v1", {"num_agents": 2}, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, Union

from marlhub.contract.compare import (
    returns_findings,
    trajectory_finding,
    why_different,
)
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.spaces import ActionSampler

__all__ = ["compare_with_native"]


def compare_with_native(
    env_name_or_creator: Union[str, Any],
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
    from marlhub.adapters.gymnasium import make_multi_agent

    env_class = make_multi_agent(env_name_or_creator)
    adapted = env_class(config)
    native = env_class(config).envs  # built exactly as the adapter builds its copies
    findings: list[Finding] = []
    try:
        for episode in range(episodes):
            findings.extend(_one_episode(adapted, native, episode, seed + episode, max_steps))
    finally:
        adapted.close()
        for env in native:
            env.close()
    return findings


def _one_episode(adapted: Any, native: list[Any], episode: int, seed: int,
                 max_steps: int) -> list[Finding]:
    agents = list(adapted.possible_agents)
    sampler = ActionSampler(seed)
    actions: list[dict[Any, Any]] = []

    def differ(what: str, reason: str, agent: Any = None) -> list[Finding]:
        return [trajectory_finding(what, reason, episode=episode, step=len(actions), seed=seed,
                                   actions=actions, agent=agent)]

    obs, _ = adapted.reset(seed=seed)
    for i, agent in enumerate(agents):
        native_obs, _ = native[i].reset(seed=seed + i)
        reason = why_different(obs.get(agent), native_obs, f"[{agent!r}]")
        if reason:
            return differ("observations", reason, agent)
    returns = {a: 0.0 for a in agents}
    native_returns = {a: 0.0 for a in agents}
    live = list(agents)
    for _ in range(max_steps):
        action = {a: sampler.sample(a, adapted.get_action_space(a)) for a in live}
        actions.append(action)
        obs, rewards, terminateds, truncateds, _ = adapted.step(action)
        still = []
        for agent in live:
            o, r, term, trunc, _ = native[agents.index(agent)].step(action[agent])
            native_returns[agent] += float(r)
            returns[agent] += float(rewards.get(agent, 0.0))
            mine = (obs.get(agent), rewards.get(agent), terminateds.get(agent), truncateds.get(agent))
            theirs = (o, float(r), bool(term), bool(trunc))
            for what, a, b in zip(("observations", "rewards", "terminateds", "truncateds"), mine, theirs):
                reason = why_different(a, b, f"[{agent!r}]")
                if reason:
                    return differ(what, reason, agent)
            if not (term or trunc):
                still.append(agent)
        live = still
        over = bool(terminateds.get(ALL)) or bool(truncateds.get(ALL))
        if over != (not live):
            return differ("episode end", f"__all__ is {over} but {len(live)} native envs still run")
        if over:
            break
    return returns_findings(returns, native_returns, episode=episode, seed=seed, actions=actions)
