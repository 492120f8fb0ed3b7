"""random_rollout: actors, masks, returns to any agent, seeding, max_steps, contract errors."""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

from marlhub import MultiAgentEnv
from marlhub.envs import TicTacToe, Traffic
from marlhub.errors import EnvContractError
from marlhub.rollout import RolloutStats, random_rollout


class Scripted(MultiAgentEnv):
    """Three steps whose actors and rewards are fixed; it raises on any unexpected action.

    * ``a`` acts every step; its mask (in infos) allows only action 2.
    * ``b`` acts in step 1 only, masked (inside a Dict obs) to action 0, and is
      terminated in step 1 with its last observation.
    * ``c`` never observes or acts but gets 0.5 in steps 1 and 2.
    * returns: a = 1 + 1 + episode seed, b = 2, c = 1.
    """

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["a", "b", "c"]
        mask_obs = gym.spaces.Dict(
            {"obs": gym.spaces.Discrete(2), "action_mask": gym.spaces.MultiBinary(3)}
        )
        self.observation_spaces = {
            "a": gym.spaces.Discrete(2), "b": mask_obs, "c": gym.spaces.Discrete(2),
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self.seeds: list[Optional[int]] = []
        self.actions: list[dict] = []

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.seeds.append(seed)
        self.t = 0
        self.agents = ["a", "b"]
        return self._obs(["a", "b"]), {"a": {"action_mask": np.array([0, 0, 1], np.int8)}}

    def _obs(self, who: list[str]) -> dict:
        out: dict[str, Any] = {}
        if "a" in who:
            out["a"] = 0
        if "b" in who:
            out["b"] = {"obs": 0, "action_mask": np.array([1, 0, 0], np.int8)}
        return out

    def step(self, action_dict: dict) -> Any:
        expected = {"a", "b"} if self.t == 0 else {"a"}
        if set(action_dict) != expected:
            raise ValueError(f"step {self.t}: actions for {sorted(action_dict)}, expected {sorted(expected)}")
        if action_dict["a"] != 2 or action_dict.get("b", 0) != 0:
            raise ValueError(f"masked-out action taken: {action_dict}")
        self.actions.append(dict(action_dict))
        self.t += 1
        infos = {"a": {"action_mask": np.array([0, 0, 1], np.int8)}}
        if self.t == 1:
            self.agents = ["a"]
            return (self._obs(["a", "b"]), {"a": 1.0, "b": 2.0, "c": 0.5},
                    {"b": True, "__all__": False}, {"__all__": False}, infos)
        if self.t == 2:
            return self._obs(["a"]), {"a": 1.0, "c": 0.5}, {"__all__": False}, {"__all__": False}, infos
        final_reward = float(self.seeds[-1] or 0)
        return (self._obs(["a"]), {"a": np.float32(final_reward)},
                {"a": True, "__all__": True}, {"__all__": False}, infos)


def test_returns_lengths_and_actors_of_a_scripted_env() -> None:
    env = Scripted()
    stats = random_rollout(env, episodes=2, seed=5)
    assert stats.episode_returns == [{"a": 7.0, "b": 2.0, "c": 1.0}, {"a": 8.0, "b": 2.0, "c": 1.0}]
    assert stats.episode_lengths == [3, 3] and stats.total_steps == 6
    assert stats.agents == ["a", "b", "c"]
    assert stats.mean_return == {"a": 7.5, "b": 2.0, "c": 1.0}
    assert stats.std_return == {"a": 0.5, "b": 0.0, "c": 0.0}
    assert stats.mean_length == 3.0 and stats.cut_short == 0 and stats.episodes == 2
    assert env.seeds == [5, 6]
    assert env.actions == [{"a": 2, "b": 0}, {"a": 2}, {"a": 2}] * 2
    assert stats.wall_time > 0 and stats.steps_per_second > 0


def test_seed_none_resets_without_seed() -> None:
    env = Scripted()
    stats = random_rollout(env, episodes=2)
    assert env.seeds == [None, None] and stats.seed is None


class Endless(Scripted):
    def step(self, action_dict: dict) -> Any:
        obs = {a: 0 for a in action_dict}
        return obs, {a: 1.0 for a in obs}, {"__all__": False}, {"__all__": False}, {}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        return {"a": 0, "c": 0}, {}


def test_max_steps_cuts_episodes() -> None:
    stats = random_rollout(Endless(), episodes=2, seed=0, max_steps=7)
    assert stats.episode_lengths == [7, 7] and stats.cut_short == 2
    assert stats.mean_return == {"a": 7.0, "c": 7.0}


def test_on_episode_reports_progress() -> None:
    calls: list[tuple[int, int]] = []
    random_rollout(Endless(), episodes=3, max_steps=2, on_episode=lambda *a: calls.append(a))
    assert calls == [(1, 2), (2, 4), (3, 6)]


def test_seeded_rollouts_are_reproducible_and_seeds_matter() -> None:
    first = random_rollout(Traffic({"num_cars": 3}), episodes=5, seed=11)
    again = random_rollout(Traffic({"num_cars": 3}), episodes=5, seed=11)
    other = random_rollout(Traffic({"num_cars": 3}), episodes=5, seed=12)
    assert first == again
    assert first != other
    # Episode i of a run seeded s is episode 0 of a run seeded s + i.
    single = random_rollout(Traffic({"num_cars": 3}), episodes=1, seed=13)
    assert single.episode_returns[0] == first.episode_returns[2]


def test_turn_based_env_ends_every_episode() -> None:
    stats = random_rollout(TicTacToe(), episodes=20, seed=0)
    assert stats.cut_short == 0 and min(stats.episode_lengths) >= 5
    assert stats.agents == ["player1", "player2"]


class NoActors(Endless):
    def step(self, action_dict: dict) -> Any:
        return {}, {}, {"__all__": False}, {"__all__": False}, {}


class NoAll(Endless):
    def step(self, action_dict: dict) -> Any:
        return {"a": 0}, {"a": 0.0}, {"a": False}, {"__all__": False}, {}


class TextReward(Endless):
    def step(self, action_dict: dict) -> Any:
        return {"a": 0}, {"a": "1.0"}, {"__all__": False}, {"__all__": False}, {}


@pytest.mark.parametrize(
    ("env_class", "match"),
    [
        (NoActors, r"NoActors broke the contract rule 'turn.actors_exist': after step 1 of episode 0"),
        (NoAll, r"'done.all_present': step 1 of episode 0 returned terminateds keys \['a'\]"),
        (TextReward, r"'reward.scalar': the reward for 'a' is '1.0', not a number"),
    ],
)
def test_contract_breaks_raise_env_contract_error(env_class: type, match: str) -> None:
    with pytest.raises(EnvContractError, match=match):
        random_rollout(env_class(), episodes=1, seed=0, max_steps=10)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"episodes": 0}, "episodes must be an int >= 1, got 0"),
        ({"episodes": 1.5}, "episodes must be an int >= 1, got 1.5"),
        ({"seed": -1}, "seed must be an int >= 0, got -1"),
        ({"max_steps": 0}, "max_steps must be an int >= 1, got 0"),
        ({"episodes": True}, "episodes must be an int >= 1, got True"),
    ],
)
def test_bad_arguments_raise(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        random_rollout(Scripted(), **kwargs)


def test_stats_of_agents_missing_from_some_episodes() -> None:
    stats = RolloutStats([{"a": 1.0}, {"a": 3.0, "b": 5.0}], [1, 2], 0, ["a", "b"], 0)
    assert stats.returns("b") == [5.0]
    assert stats.mean_return == {"a": 2.0, "b": 5.0}
    assert stats.std_return == {"a": 1.0, "b": 0.0}
