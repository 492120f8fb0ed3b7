"""The one seeded random episode: check, run, probes and lockstep play the same episodes."""

from __future__ import annotations

from typing import Any

import pytest

from marlhub.conformance import check
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic
from marlhub.episode.play import RandomEpisode, episode_seed
from marlhub.rollout import random_rollout


class Recording(TicTacToe):
    """Records the action dicts of the first episode played under each reset seed."""

    log: dict[Any, list[dict[Any, Any]]] = {}

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        # The check's probes play a seed's episode again, some with other actions.
        self._current = [] if seed in Recording.log else Recording.log.setdefault(seed, [])
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: Any) -> Any:
        result = super().step(action_dict)  # a step refused (after the end) plays no part
        self._current.append(dict(action_dict))
        return result


def test_run_and_check_play_the_same_episodes_under_one_seed() -> None:
    Recording.log = {}
    random_rollout(Recording(), episodes=3, seed=5)
    by_run = {s: list(a) for s, a in Recording.log.items()}
    Recording.log = {}
    check(Recording, episodes=3, seed=5)  # replays each episode: the log keeps the first play
    by_check = {s: list(a) for s, a in Recording.log.items() if s in by_run}
    assert by_run.keys() == {5, 6, 7} and by_check == by_run


def test_episode_i_of_a_run_is_the_episode_of_its_seed() -> None:
    env = Traffic()
    stats = random_rollout(env, episodes=3, seed=10)
    for i in range(3):
        steps = list(RandomEpisode(Traffic(), episode_seed(10, i)))
        returns: dict[Any, float] = {}
        for step in steps:
            for agent, reward in step.rewards.items():
                returns[agent] = returns.get(agent, 0.0) + reward
        assert stats.episode_lengths[i] == len(steps) - 1
        assert {a: r for a, r in stats.episode_returns[i].items() if r} == \
            {a: r for a, r in returns.items() if r}


def test_steps_carry_actors_and_the_end() -> None:
    steps = list(RandomEpisode(RockPaperScissors(), seed=0))
    assert steps[0].index == 0 and steps[0].actions is None
    assert steps[0].actors == ["player1", "player2"]
    assert steps[-1].over and steps[-1].actors == [] and not any(s.over for s in steps[:-1])


def test_max_steps_cuts_and_says_so() -> None:
    episode = RandomEpisode(RockPaperScissors(), seed=0, max_steps=3)
    assert len(list(episode)) == 4 and episode.cut and not episode.stalled


def test_an_env_that_leaves_nobody_to_act_stalls() -> None:
    class Stuck(RockPaperScissors):
        def step(self, action_dict: Any) -> Any:
            _, rewards, terminateds, truncateds, infos = super().step(action_dict)
            return {}, rewards, {"__all__": False}, {"__all__": False}, {}

    episode = RandomEpisode(Stuck(), seed=0)
    assert len(list(episode)) == 2 and episode.stalled


def test_the_env_call_under_way_is_known_when_it_raises() -> None:
    class Breaks(RockPaperScissors):
        def step(self, action_dict: Any) -> Any:
            raise RuntimeError("boom")

    episode = RandomEpisode(Breaks(), seed=0)
    with pytest.raises(RuntimeError):
        list(episode)
    assert episode.calling == "step" and len(episode.actions) == 1
