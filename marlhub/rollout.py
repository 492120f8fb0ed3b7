"""Play episodes with random legal actions and collect per-agent returns.

:func:`random_rollout` drives any hub env (or any env :func:`~marlhub.adapters.to_hub`
accepts) the way RLlib does: after each reset or step the **actors** are the
agents in the observation dict that are not done in it; each actor gets a
random action from its action space, drawn within its action mask when the
observation (a dict with ``"action_mask"``) or the agent's info carries one.
Rewards count toward the return of whichever agent they name, acting or not.
An episode ends when ``terminateds["__all__"]`` or ``truncateds["__all__"]`` is
True, or after ``max_steps`` steps.

Seeding: episode ``i`` (from 0) is reset with ``seed + i`` and its actions
come from an :class:`~marlhub.spaces.ActionSampler` seeded with ``seed + i``,
so any single episode can be replayed on its own. ``seed=None`` draws fresh
entropy for both.

It is used by ``marlhub run``, tests and benchmarks. Timing covers resets,
steps and action sampling.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> stats = random_rollout(RockPaperScissors(), episodes=3, seed=0)
    >>> stats.episodes, stats.episode_lengths, stats.agents
    (3, [10, 10, 10], ['player1', 'player2'])
    >>> stats == random_rollout(RockPaperScissors(), episodes=3, seed=0)
    True
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from marlhub.adapters import to_hub
from marlhub.core import ALL, AgentID
from marlhub.errors import EnvContractError
from marlhub.spaces import ActionSampler, find_action_mask

__all__ = ["RolloutStats", "random_rollout"]


@dataclass
class RolloutStats:
    """What a rollout measured.

    Attributes:
        episode_returns: one dict per episode, from each agent that took part
            (got an observation or a reward) to the sum of its rewards.
        episode_lengths: the number of ``step`` calls in each episode.
        cut_short: how many episodes were stopped by ``max_steps`` before ``__all__``.
        agents: every agent that took part, in ``possible_agents`` order (then
            in order of appearance).
        seed: the rollout's seed.
        wall_time: seconds spent in the rollout (not compared by ``==``).
    """

    episode_returns: list[dict[AgentID, float]]
    episode_lengths: list[int]
    cut_short: int
    agents: list[AgentID]
    seed: Optional[int]
    wall_time: float = field(default=0.0, compare=False)

    @property
    def episodes(self) -> int:
        """How many episodes were played."""
        return len(self.episode_lengths)

    @property
    def total_steps(self) -> int:
        """How many ``step`` calls were made in all."""
        return sum(self.episode_lengths)

    @property
    def steps_per_second(self) -> float:
        """``total_steps / wall_time`` (``inf`` when no time was measurable)."""
        return self.total_steps / self.wall_time if self.wall_time > 0 else math.inf

    @property
    def mean_length(self) -> float:
        """The mean number of steps per episode."""
        return self.total_steps / self.episodes if self.episodes else 0.0

    def returns(self, agent: AgentID) -> list[float]:
        """The returns of ``agent`` in the episodes it took part in, in order."""
        return [r[agent] for r in self.episode_returns if agent in r]

    @property
    def mean_return(self) -> dict[AgentID, float]:
        """Each agent's mean return over the episodes it took part in."""
        return {a: _mean(self.returns(a)) for a in self.agents}

    @property
    def std_return(self) -> dict[AgentID, float]:
        """Each agent's population standard deviation of returns over its episodes."""
        out = {}
        for agent in self.agents:
            values = self.returns(agent)
            mean = _mean(values)
            out[agent] = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def random_rollout(
    env: Any,
    *,
    episodes: int = 1,
    seed: Optional[int] = None,
    max_steps: Optional[int] = None,
    on_episode: Optional[Callable[[int, int], None]] = None,
) -> RolloutStats:
    """Play ``episodes`` episodes of ``env`` with random legal actions.

    Args:
        env: a hub env, or any env :func:`~marlhub.adapters.to_hub` converts.
        episodes: how many episodes to play (at least 1).
        seed: episode ``i`` is reset with, and samples its actions from, ``seed + i``.
        max_steps: stop an episode after this many steps (counted in ``cut_short``).
        on_episode: called after each episode with ``(episodes done, steps so far)``,
            e.g. to draw a progress bar.

    Returns:
        The per-episode returns and lengths, and the time it took.

    Raises:
        ValueError: ``episodes``, ``seed`` or ``max_steps`` is not a valid number.
        EnvContractError: the env left no actor before the episode ended
            (``turn.actors_exist``), returned done dicts without ``"__all__"``
            (``done.all_present``) or a reward that is not a number (``reward.scalar``).
        Exception: whatever the env itself raises, unchanged.

    Example:
        >>> from marlhub.envs import Traffic
        >>> stats = random_rollout(Traffic({"num_cars": 2}), episodes=2, seed=3, max_steps=5)
        >>> stats.episode_lengths, stats.cut_short
        ([5, 5], 2)
    """
    _check_int("episodes", episodes, minimum=1)
    if seed is not None:
        _check_int("seed", seed, minimum=0)
    if max_steps is not None:
        _check_int("max_steps", max_steps, minimum=1)
    env = to_hub(env)
    name = type(getattr(env, "unwrapped", env)).__name__
    get_space = getattr(env, "get_action_space", None)
    if not callable(get_space):
        get_space = env.action_spaces.__getitem__

    all_returns: list[dict[AgentID, float]] = []
    lengths: list[int] = []
    cut_short = 0
    order: dict[AgentID, None] = {}
    start = time.perf_counter()
    for episode in range(episodes):
        episode_seed = None if seed is None else seed + episode
        sampler = ActionSampler(episode_seed)
        obs, infos = env.reset(seed=episode_seed)
        infos = infos or {}
        returns: dict[AgentID, float] = dict.fromkeys(obs, 0.0)
        actors = list(obs)
        steps = 0
        while True:
            if max_steps is not None and steps >= max_steps:
                cut_short += 1
                break
            if not actors:
                raise _contract(
                    name, "TURN_ACTORS_EXIST",
                    f"after step {steps} of episode {episode} no agent is left to act "
                    f"(obs keys {list(obs)}) but '__all__' is not True",
                )
            actions = {
                agent: sampler.sample(
                    agent, get_space(agent), find_action_mask(obs[agent], infos.get(agent))
                )
                for agent in actors
            }
            obs, rewards, terminateds, truncateds, infos = env.step(actions)
            infos = infos or {}
            steps += 1
            for agent, reward in rewards.items():
                returns[agent] = returns.get(agent, 0.0) + _as_float(name, agent, reward)
            for agent in obs:
                returns.setdefault(agent, 0.0)
            if ALL not in terminateds or ALL not in truncateds:
                raise _contract(
                    name, "DONE_ALL_PRESENT",
                    f"step {steps} of episode {episode} returned terminateds keys "
                    f"{list(terminateds)} and truncateds keys {list(truncateds)}; both need '__all__'",
                )
            if terminateds[ALL] or truncateds[ALL]:
                break
            actors = [a for a in obs if not (terminateds.get(a) or truncateds.get(a))]
        all_returns.append(returns)
        lengths.append(steps)
        order.update(dict.fromkeys(returns))
        if on_episode is not None:
            on_episode(episode + 1, sum(lengths))
    wall_time = time.perf_counter() - start

    possible = list(getattr(env, "possible_agents", None) or [])
    agents = [a for a in possible if a in order] + [a for a in order if a not in possible]
    return RolloutStats(all_returns, lengths, cut_short, agents, seed, wall_time)


def _check_int(what: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")


def _as_float(env_name: str, agent: AgentID, reward: Any) -> float:
    try:
        if isinstance(reward, (bool, str, bytes, Mapping)):
            raise TypeError
        return float(reward)
    except (TypeError, ValueError):
        raise _contract(
            env_name, "REWARD_SCALAR", f"the reward for {agent!r} is {reward!r}, not a number"
        ) from None


def _contract(env_name: str, rule_constant: str, problem: str) -> EnvContractError:
    from marlhub.contract import (
        rules,  # lazily: rollouts do not need the suite otherwise
    )

    return EnvContractError(env_name, getattr(rules, rule_constant), problem)
