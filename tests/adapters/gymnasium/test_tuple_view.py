"""hub -> Gymnasium in the Tuple convention: TupleView, padding, gym.make(...), round trips."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import marlhub
from marlhub import ALL
from marlhub.adapters.gymnasium import TupleAgentsEnv, TupleView, to_gymnasium_tuple
from marlhub.episode.play import RandomEpisode
from marlhub.errors import ActionError, ConfigError, ResetNeededError
from marlhub.registry import register_with_gymnasium
from marlhub.spaces import zero_like

#: Gymnasium's checkers want one float reward; the convention's is a list, one per agent.
LIST_REWARDS = "ignore:.*reward returned by `step\\(\\)` must be a float"


def test_spaces_are_tuples_over_the_possible_agents() -> None:
    hub = marlhub.make("traffic", {"num_cars": 2})
    view = to_gymnasium_tuple(hub)
    assert isinstance(view, TupleView) and view.n_agents == 3
    assert view.possible_agents == ["car_0", "car_1", "light"]
    assert view.observation_space[2] is hub.get_observation_space("light")
    assert view.action_space[0] is hub.get_action_space("car_0")
    assert type(marlhub.convert(hub, to="gymnasium.tuple")) is TupleView
    assert type(marlhub.make("tic_tac_toe", to="gymnasium.tuple")) is TupleView


def test_agents_that_wait_or_are_gone_are_padded_as_documented() -> None:
    """Waiting: latest observation, first action only; gone: zeros, reward 0, first action only."""
    hub = marlhub.make("traffic", {"num_cars": 3})
    view = TupleView(hub)
    spaces = view.observation_space.spaces
    obs, info = view.reset(seed=0)
    last = dict(zip(view.possible_agents, obs))
    was_alive = info["alive"]
    kinds_seen = set()
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = tuple(int(rng.integers(space.n)) for space in view.action_space.spaces)
        obs, rewards, terminated, truncated, info = view.step(action)
        assert len(obs) == len(rewards) == 4 and obs in view.observation_space
        for i, agent in enumerate(view.possible_agents):
            acting, alive, mask = info["acting"][i], info["alive"][i], info["action_mask"][i]
            if acting:
                kinds_seen.add("acting")
                assert mask.sum() >= 1
            elif alive:  # waiting: its latest observation, not the same object
                kinds_seen.add("waiting")
                assert mask.tolist() == [1] + [0] * (len(mask) - 1)
                if agent in last:
                    assert np.array_equal(obs[i], last[agent])
            elif not (terminated or truncated or was_alive[i]):  # gone, or not there yet
                kinds_seen.add("gone")  # (in the step it ends: its final observation)
                assert mask.tolist() == [1] + [0] * (len(mask) - 1)
                assert np.array_equal(obs[i], zero_like(spaces[i])) and rewards[i] == 0.0
            if alive:
                last[agent] = obs[i]
        was_alive = info["alive"]
        if terminated or truncated:
            break
    assert kinds_seen == {"acting", "waiting", "gone"}
    with pytest.raises(ResetNeededError):
        view.step(action)


def test_actions_are_one_tuple_the_idle_agents_entries_ignored() -> None:
    view = to_gymnasium_tuple(marlhub.make("tic_tac_toe"), illegal_action="raise")
    obs, info = view.reset(seed=0)
    mover = info["acting"].index(True)
    action = [0, 0]
    action[mover] = 4
    action[1 - mover] = 8  # ignored: that player waits
    obs, rewards, terminated, truncated, info = view.step(np.array(action))
    assert info["acting"][1 - mover] and not info["acting"][mover]
    with pytest.raises(ActionError, match="a tuple of 2 actions"):
        view.step((1,))
    with pytest.raises(ActionError, match="for 'player"):
        view.step((9, 9))  # outside Discrete(9)


@pytest.mark.parametrize("env_id", ["traffic", "rock_paper_scissors", "tic_tac_toe"])
def test_round_trip_hub_tuple_hub_plays_the_same_episodes(env_id: str) -> None:
    for seed in range(3):
        played = RandomEpisode(marlhub.make(env_id), seed)
        steps = list(played)
        trip = TupleAgentsEnv(TupleView(marlhub.make(env_id)),
                              agent_ids=marlhub.make(env_id).possible_agents)
        obs, _ = trip.reset(seed=seed)
        assert sorted(obs) == sorted(steps[0].obs) and _same(obs, steps[0].obs)
        returns: dict[Any, float] = {}
        for step in steps[1:]:
            obs, rewards, terminateds, truncateds, _ = trip.step(step.actions)
            actors = marlhub.actors(obs, terminateds, truncateds)
            assert actors == step.actors, (env_id, seed, step.index)
            assert _same({a: obs[a] for a in actors}, {a: step.obs[a] for a in actors})
            assert terminateds[ALL] == step.terminateds[ALL]
            assert truncateds[ALL] == step.truncateds[ALL]
            for agent, reward in rewards.items():
                returns[agent] = returns.get(agent, 0.0) + reward
        expected: dict[Any, float] = {}
        for step in steps[1:]:
            for agent, reward in step.rewards.items():
                expected[agent] = expected.get(agent, 0.0) + float(reward)
        assert {a: r for a, r in returns.items() if r} == {a: r for a, r in expected.items() if r}


def _same(a: dict[Any, Any], b: dict[Any, Any]) -> bool:
    return list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.filterwarnings(LIST_REWARDS)
@pytest.mark.parametrize("env_id", ["rock_paper_scissors", "tic_tac_toe", "traffic"])
def test_gymnasiums_check_env_passes_on_the_view(env_id: str) -> None:
    check_env(to_gymnasium_tuple(marlhub.make(env_id)), skip_render_check=True)


def test_gymnasium_make_marlhub_ids_for_learners_that_load_envs_by_key() -> None:
    """What EPyMARL's gymma does: gym.make(key), TimeLimit, n_agents, lists of int actions."""
    assert {"marlhub/rock_paper_scissors", "marlhub/tic_tac_toe", "marlhub/traffic"} <= set(
        gym.registry)
    for key in ("marlhub/rock_paper_scissors", "marlhub:marlhub/traffic"):
        env = gym.make(key, max_episode_steps=30)
        n_agents = env.unwrapped.n_agents
        longest = max(env.action_space, key=lambda space: space.n)
        obs, info = env.reset(seed=0)
        assert len(obs) == n_agents and longest.n >= 2
        total, done, steps = 0.0, False, 0
        while not done:
            masks = info["action_mask"]
            actions = [int(np.flatnonzero(mask)[-1]) for mask in masks]  # a legal action each
            obs, reward, terminated, truncated, info = env.step(actions)
            assert isinstance(reward, list) and len(reward) == n_agents
            total += sum(reward)
            done, steps = terminated or truncated, steps + 1
        assert steps <= 30
        env.close()
    traffic = gym.make("marlhub/traffic", num_cars=2)  # the keyword arguments are the config
    assert traffic.unwrapped.possible_agents == ["car_0", "car_1", "light"]


def test_register_with_gymnasium_takes_any_id_under_a_gymnasium_name() -> None:
    gym_id = register_with_gymnasium("traffic", "Traffic-v1", config={"num_cars": 1},
                                     illegal_action="raise")
    try:
        assert gym_id == "marlhub/Traffic-v1"
        env = gym.make(gym_id)
        assert env.unwrapped.possible_agents == ["car_0", "light"]
        assert env.unwrapped.illegal_action == "raise"
    finally:
        del gym.registry[gym_id]
    with pytest.raises(ConfigError, match="is no Gymnasium id.*name="):
        register_with_gymnasium("openspiel/kuhn_poker")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # registering a name again replaces it, silently
        register_with_gymnasium("rock_paper_scissors")
    name = "tuple_view_test_env"
    marlhub.register_env(name, lambda config: marlhub.make("rock_paper_scissors"))
    try:
        assert gym.make(f"marlhub/{name}").unwrapped.n_agents == 2
    finally:
        marlhub.registry.default_registry().unregister(name)
        del gym.registry[f"marlhub/{name}"]
