"""Play episodes with random legal actions and collect per-agent returns.

:func:`random_rollout` drives any hub env (or any env :func:`~marlhub.adapters.to_hub`
accepts) the way RLlib does: after each reset or step the **actors** are the
agents in the observation dict that are not done in it; each actor gets a
random action from its action space, drawn within its action mask when the
observation (a dict with ``"action_mask"``) or the agent's info carries one.
Rewards count toward the return of whichever agent they name, acting or not.
An episode ends when ``terminateds["__all__"]`` or ``truncateds["__all__"]`` is
True, or after ``max_steps`` steps.

Seeding: episode ``i`` (from 0) is :class:`~marlhub.episode.RandomEpisode`
with seed ``seed + i``: reset with it, actions drawn by a sampler seeded with
it, so any single episode can be replayed on its own, and ``marlhub run
--seed S`` plays the episodes ``marlhub check --seed S`` plays. ``seed=None``
draws fresh entropy for both.

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

from marlhub.adapters.apis import to_hub
from marlhub.contract import rules
from marlhub.core import ALL, AgentID
from marlhub.episode.play import RandomEpisode, episode_seed
from marlhub.errors import EnvContractError
from marlhub.rewards import require_scalar_rewards

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
        VectorRewardError: the env declares vector rewards; scalarize them first
            (:class:`~marlhub.wrappers.ScalarizeRewards`).
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
    require_scalar_rewards(env, "random_rollout", needs="its returns are one number per agent "
                           "and episode")
    name = type(getattr(env, "unwrapped", env)).__name__
    all_returns: list[dict[AgentID, float]] = []
    lengths: list[int] = []
    cut_short = 0
    order: dict[AgentID, None] = {}
    start = time.perf_counter()
    for episode in range(episodes):
        played = RandomEpisode(env, episode_seed(seed, episode), max_steps=max_steps)
        returns = _episode_returns(name, episode, played)
        cut_short += played.cut
        all_returns.append(returns)
        lengths.append(len(played.actions))
        order.update(dict.fromkeys(returns))
        if on_episode is not None:
            on_episode(episode + 1, sum(lengths))
    wall_time = time.perf_counter() - start

    possible = list(getattr(env, "possible_agents", None) or [])
    agents = [a for a in possible if a in order] + [a for a in order if a not in possible]
    return RolloutStats(all_returns, lengths, cut_short, agents, seed, wall_time)


def _episode_returns(name: str, episode: int, played: RandomEpisode) -> dict[AgentID, float]:
    """Play ``played`` to its end; return each taking-part agent's sum of rewards."""
    returns: dict[AgentID, float] = {}
    for step in played:
        for agent, reward in step.rewards.items():
            returns[agent] = returns.get(agent, 0.0) + _as_float(name, agent, reward)
        for agent in step.obs:
            returns.setdefault(agent, 0.0)
        if step.index and (ALL not in step.terminateds or ALL not in step.truncateds):
            raise EnvContractError(
                name, rules.DONE_ALL_PRESENT,
                f"step {step.index} of episode {episode} returned terminateds keys "
                f"{list(step.terminateds)} and truncateds keys {list(step.truncateds)}; both "
                "need '__all__'",
            )
    if played.stalled:
        raise EnvContractError(
            name, rules.TURN_ACTORS_EXIST,
            f"after step {len(played.actions)} of episode {episode} no agent is left to act "
            f"(obs keys {list(step.obs)}) but '__all__' is not True",
        )
    return returns


def _check_int(what: str, value: Any, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{what} must be an int >= {minimum}, got {value!r}")


def _as_float(env_name: str, agent: AgentID, reward: Any) -> float:
    try:
        if isinstance(reward, (bool, str, bytes, Mapping)):
            raise TypeError
        return float(reward)
    except (TypeError, ValueError):
        raise EnvContractError(
            env_name, rules.REWARD_SCALAR, f"the reward for {agent!r} is {reward!r}, not a number"
        ) from None
