"""Lockstep comparison of :func:`~marlhub.adapters.gymnasium.make_multi_agent` envs with native copies.

The native side is Gymnasium's own: ``num_agents`` envs made by
``gymnasium.make(env_id, **kwargs)`` (or by the user's creator), copy ``i``
reset with ``seed + i`` as the adapter promises, each stepped with its agent's
action while it runs. Every observation, reward and done flag must match, and
each agent's summed rewards must equal its native return.

:func:`compare_tuple_with_native` does the same for an env of the Tuple
convention (:class:`~marlhub.adapters.gymnasium.TupleAgentsEnv`): one native env,
stepped with the tuple of the agents' actions, its observations and rewards
compared entry by entry.

Example:
    >>> compare_with_native("CartPole-v1", {"num_agents": 2}, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Union

import gymnasium as gym
import numpy as np

from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.core import ALL
from marlhub.episode.status import episode_over, flag
from marlhub.spaces import zero_like

__all__ = ["GymnasiumTwin", "TupleTwin", "compare_tuple_with_native", "compare_with_native",
           "native_tuple_env"]


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


def native_tuple_env(source: Union[str, Callable[..., Any]],
                     config: Optional[Mapping[str, Any]] = None, *,
                     own_keys: Sequence[str] = ()) -> gym.Env:
    """Make a Tuple-convention env: ``gymnasium.make(source, **config)``, or ``source(config)``.

    Gymnasium's passive checker is off unless ``config`` sets ``disable_env_checker``:
    it warns at every env's first step that a list of rewards is no float, which is
    the convention. ``own_keys`` are the caller's config keys, which a ``ConfigError``
    lists among the accepted ones.

    Raises:
        UnknownEnvError: Gymnasium has no env ``source``.
        ConfigError: ``gymnasium.make`` or the env rejects a key.
    """
    from marlhub.adapters.gymnasium.adapter import make_gymnasium_env

    config = dict(config or {})
    if not isinstance(source, str):
        return source(EnvContext(config))
    return make_gymnasium_env(source, {"disable_env_checker": True, **config}, own_keys=own_keys)


def compare_tuple_with_native(
    env_name_or_creator: Union[str, Callable[..., Any]],
    config: Optional[Mapping[str, Any]] = None,
    *,
    episodes: int = 5,
    seed: int = 0,
    max_steps: int = 1000,
) -> list[Finding]:
    """Step a :class:`~marlhub.adapters.gymnasium.TupleAgentsEnv` and its native env in lockstep.

    Args:
        env_name_or_creator: a Gymnasium id (``"Foraging-8x8-2p-3f-v3"``) or a
            creator ``creator(config) -> gymnasium.Env``; both sides are made from it.
        config: ``gymnasium.make``'s and the env's keyword arguments (or the creator's config).
        episodes: how many episodes; episode ``e`` is seeded ``seed + e``.
        seed: the first episode's seed.
        max_steps: the step budget of one episode.

    Returns:
        ``equiv.trajectory`` and ``equiv.returns`` findings; empty when the adapter
        reports exactly what the native env does.
    """
    from marlhub.adapters.gymnasium.tuple_agents import TupleAgentsEnv

    adapted = TupleAgentsEnv(native_tuple_env(env_name_or_creator, config))
    try:
        return compare_in_lockstep(
            adapted, lambda: TupleTwin(native_tuple_env(env_name_or_creator, config),
                                       adapted.possible_agents),
            episodes=episodes, seed=seed, max_steps=max_steps,
        )
    finally:
        adapted.close()


class TupleTwin(NativeTwin):
    """One native Tuple-convention env, stepped with the tuple of every agent's action.

    An agent the adapted env did not ask to act (none, in envs where all act) sends
    the first action of its space, as the adapter does.
    """

    def __init__(self, env: gym.Env, agents: list[Any]) -> None:
        from marlhub.adapters.gymnasium.tuple_agents import flags_of

        self.env = env
        self.agents = agents
        self._flags_of = flags_of
        self._idle = [zero_like(s) for s in env.action_space.spaces]  # type: ignore[attr-defined]
        self.sums: dict[Any, float] = {}
        self.over = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        obs, _ = self.env.reset(seed=seed)
        self.sums = dict.fromkeys(self.agents, 0.0)
        self.over = False
        for i, agent in enumerate(self.agents):
            if agent in first.obs:
                lock.expect("observations", first.obs[agent], obs[i], agent=agent)

    def step(self, step: Step, lock: Lockstep) -> None:
        actions = step.actions or {}
        reward: Any
        obs, reward, term, trunc, _ = self.env.step(
            tuple(actions.get(a, self._idle[i]) for i, a in enumerate(self.agents)))
        n = len(self.agents)
        rewards = list(reward) if isinstance(reward, (list, tuple)) or np.ndim(reward) \
            else [reward] * n
        for i, agent in enumerate(self.agents):
            self.sums[agent] += float(rewards[i])
            if agent in step.obs:
                lock.expect("observations", step.obs[agent], obs[i], agent=agent)
            if agent in step.rewards:
                lock.expect("rewards", step.rewards[agent], float(rewards[i]), agent=agent,
                            fatal=False)
        team_term, _ = self._flags_of(term, n)
        team_trunc, _ = self._flags_of(trunc, n)
        lock.expect("terminateds", flag(step.terminateds, ALL), team_term)
        lock.expect("truncateds", flag(step.truncateds, ALL), team_trunc and not team_term)
        self.over = team_term or team_trunc

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.over

    def close(self) -> None:
        self.env.close()
