"""Traffic: agents enter and leave, act in changing groups, earn rewards while idle; errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.core import ALL
from marlhub.envs import Traffic
from marlhub.envs.traffic import EXIT_REWARD, LIGHT, WAIT_COST
from marlhub.errors import ActionError, ConfigError, ResetNeededError
from marlhub.spaces import ActionSampler

Policy = Callable[[str], int]


def run(env: Traffic, seed: int, policy: Policy) -> tuple[dict, list[tuple[dict, tuple]]]:
    """Play one episode; return the reset obs and a list of (actions, step result)."""
    obs, _ = env.reset(seed=seed)
    reset_obs, history = obs, []
    while True:
        actions = {a: policy(a) for a in obs}
        result = env.step(actions)
        history.append((actions, result))
        obs, _, terminateds, truncateds, _ = result
        if terminateds[ALL] or truncateds[ALL]:
            return reset_obs, history
        obs = {a: o for a, o in obs.items() if not terminateds.get(a)}


def fast_green(agent: str) -> int:
    return 1 if agent == LIGHT else 2


def red_forever(agent: str) -> int:
    return 0 if agent == LIGHT else 1


def snapshot(env: Traffic) -> tuple:
    return (env.t, env.phase, dict(env.positions), env.next_car, env.crossed,
            list(env._actors), list(env.agents))


def test_spaces_differ_between_cars_and_light_and_observations_have_their_dtype():
    env = Traffic({"road_length": 5})
    obs, infos = env.reset(seed=0)
    assert env.get_observation_space("car_0") == env.get_observation_space("car_3")
    assert str(env.get_observation_space("car_0")) == "MultiDiscrete([6 5 2])"
    assert str(env.get_observation_space(LIGHT)) == "Box(0.0, 1.0, (6,), float32)"
    assert (env.get_action_space("car_1").n, env.get_action_space(LIGHT).n) == (3, 2)
    assert obs["car_0"].dtype == np.int64 and obs[LIGHT].dtype == np.float32
    assert all(env.get_observation_space(a).contains(o) for a, o in obs.items())


def test_only_the_first_car_and_the_light_are_there_at_reset():
    env = Traffic()
    assert env.agents == []
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        assert list(obs) == ["car_0", LIGHT] == env.agents


def test_a_seeded_random_run_shows_every_hard_part_of_the_contract():
    env = Traffic({"num_cars": 5, "max_steps": 60})
    sampler = ActionSampler(3)
    reset_obs, history = run(env, 3, lambda a: sampler.sample(a, env.get_action_space(a)))
    assert len(reset_obs) < len(env.possible_agents) - 1
    entered_later = {a for _, (obs, *_) in history for a in obs} - set(reset_obs)
    assert {"car_1", "car_2", "car_3", "car_4"} <= entered_later
    left_early = [a for _, (_, _, te, _, _) in history if not te[ALL] for a in te if a != ALL]
    assert len(left_early) >= 2 and all(a.startswith("car_") for a in left_early)
    idle_rewards = {
        (a, r) for actions, (_, rewards, *_) in history for a, r in rewards.items()
        if a not in actions and r != 0
    }
    assert (LIGHT, EXIT_REWARD) in idle_rewards
    assert any(a.startswith("car_") and r == WAIT_COST for a, r in idle_rewards)
    group_sizes = {len(actions) for actions, _ in history}
    assert 1 in group_sizes and max(group_sizes) >= 3


def test_light_acts_alone_every_fourth_step_and_with_every_car_every_tenth():
    env = Traffic({"max_steps": 25})
    obs, _ = env.reset(seed=0)
    for n in range(25):
        light_turn = n % 10 == 0 or n % 4 == 0
        cars_turn = n % 10 == 0 or n % 4 != 0
        live_cars = [a for a in env.agents if a != LIGHT]
        assert live_cars  # under red_forever a car is always on the road
        assert list(obs) == (live_cars if cars_turn else []) + ([LIGHT] if light_turn else []), n
        obs, *_ = env.step({a: red_forever(a) for a in obs})


def test_idle_cars_pay_the_waiting_cost_on_light_steps():
    env = Traffic({"max_steps": 25})
    _, history = run(env, 0, red_forever)
    actions, (obs, rewards, *_) = history[8]
    assert list(actions) == [LIGHT] and len(rewards) > 2
    assert all(r == WAIT_COST for a, r in rewards.items() if a != LIGHT)


def test_cars_leave_one_by_one_with_final_obs_and_the_light_earns_each_crossing():
    env = Traffic({"num_cars": 4, "road_length": 4})
    _, history = run(env, 2, fast_green)
    crossings = [(actions, result) for actions, result in history if any(
        a != ALL and flag for a, flag in result[2].items())]
    crossed = [a for _, (_, _, te, _, _) in crossings for a in te if a.startswith("car_")]
    assert sorted(crossed) == env.cars
    for actions, (obs, rewards, terminateds, truncateds, _) in crossings:
        cars = [a for a in terminateds if a.startswith("car_")]
        for car in cars:
            np.testing.assert_array_equal(obs[car], [4, 0, 1])
            assert rewards[car] == EXIT_REWARD
        assert rewards[LIGHT] == EXIT_REWARD * len(cars)
    assert any(LIGHT not in actions for actions, _ in crossings)
    obs, rewards, terminateds, truncateds, _ = history[-1][1]
    assert terminateds[ALL] and terminateds[LIGHT] and truncateds == {ALL: False}
    assert LIGHT in obs and env.agents == []
    assert sum(r[1][LIGHT] for _, r in history) == 4 * EXIT_REWARD


def test_truncation_gives_every_live_agent_its_last_obs():
    env = Traffic({"max_steps": 30, "arrival_gap": 1})
    _, history = run(env, 1, red_forever)
    assert len(history) == 30
    obs, rewards, terminateds, truncateds, _ = history[-1][1]
    live = [a for a in env.possible_agents if a in rewards]
    assert len(live) >= 4 and sorted(obs) == sorted(live)
    assert truncateds == {**{a: True for a in live}, ALL: True}
    assert terminateds == {ALL: False}
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({LIGHT: 0})


def test_step_before_reset_raises():
    with pytest.raises(ResetNeededError, match=r"Traffic.step\(\) .* reset\(\) has not been called"):
        Traffic().step({LIGHT: 0})


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({LIGHT: 1, "car_0": 1}, r"Bad action for 'car_0'.*did not receive an observation"),
        ({LIGHT: 1, "car_4": 1}, r"Bad action for 'car_4'.*did not receive an observation"),
        ({LIGHT: 1, "bus": 1}, r"'bus' is not an agent of Traffic; its agents are \['car_0'"),
        ({}, r"Bad action for 'light'.*Add an action for 'light'"),
        ({LIGHT: 2}, r"for 'light': got 2, expected an action in Discrete\(2\)"),
        ({LIGHT: None}, r"for 'light': got None"),
    ],
)
def test_bad_actions_on_a_light_step_raise_and_leave_the_env_unchanged(actions, match):
    env, twin = Traffic({"num_cars": 5}), Traffic({"num_cars": 5})
    for e in (env, twin):
        e.reset(seed=4)
        for _ in range(4):
            e.step({a: 1 for a in e._actors})
    assert env._actors == [LIGHT] and "car_0" in env.agents
    before = snapshot(env)
    with pytest.raises(ActionError, match=match):
        env.step(actions)
    assert snapshot(env) == before
    got, want = env.step({LIGHT: 1}), twin.step({LIGHT: 1})
    assert repr(got) == repr(want)


def test_bad_car_action_on_a_joint_step_is_caught_before_the_light_switches():
    env = Traffic()
    env.reset(seed=0)
    before = snapshot(env)
    with pytest.raises(ActionError, match=r"for 'car_0': got 3, expected an action in Discrete\(3\)"):
        env.step({"car_0": 3, LIGHT: 1 - env.phase})
    assert snapshot(env) == before


def test_unknown_config_key_lists_the_accepted_ones():
    with pytest.raises(ConfigError, match=r"unknown key 'cars'\. Accepted keys: 'arrival_gap', "
                       r"'joint_every', 'light_every', 'max_steps', 'num_cars', 'road_length'"):
        Traffic({"cars": 3})


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"num_cars": 0}, r"'num_cars' must be an integer >= 1, got 0"),
        ({"road_length": 1}, r"'road_length' must be an integer >= 2, got 1"),
        ({"max_steps": None}, r"'max_steps' must be an integer >= 1, got None"),
        ({"arrival_gap": -1}, r"'arrival_gap' must be an integer >= 0"),
        ({"light_every": 1.5}, r"'light_every' must be an integer >= 1"),
    ],
)
def test_bad_config_values_are_config_errors(config, match):
    with pytest.raises(ConfigError, match=match):
        Traffic(config)


def test_render_shows_the_road_and_the_light():
    env = Traffic({"num_cars": 3, "road_length": 4})
    env.reset(seed=0)
    env.step({"car_0": 2, LIGHT: 0})
    assert env.render() == "t=1 to_enter=2 |. . 0 .|R crossed=0/3"


def test_arrivals_depend_on_the_seed():
    arrivals = set()
    for seed in range(10):
        env = Traffic()
        env.reset(seed=seed)
        arrivals.add(tuple(env.arrivals))
    assert len(arrivals) > 5


CONFIGS: list[Any] = [
    None,
    {"max_steps": 15},
    {"num_cars": 1},
    {"num_cars": 8, "light_every": 1, "joint_every": 3},
    {"arrival_gap": 0, "road_length": 2, "light_every": 2},
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("seed", range(8))
def test_contract_holds_and_seeded_episodes_replay(contract, config, seed):
    first = contract(Traffic(config), seed)
    again = contract(Traffic(config), seed)
    assert first.trajectory == again.trajectory


def test_contract_runs_end_both_ways_and_vary_the_groups(contract):
    episodes = [contract(Traffic({"max_steps": 25}), seed) for seed in range(20)]
    assert {e.ended_by for e in episodes} == {"terminated", "truncated"}
    assert {1, 2, 3} <= {n for e in episodes for n in e.actor_counts}


def test_an_action_for_a_car_that_left_says_it_is_done_and_moves_nothing():
    """The README's loop, sending actions to every agent of obs, meets a car's final obs."""
    env, twin = Traffic({"num_cars": 3}), Traffic({"num_cars": 3})
    obs, _ = env.reset(seed=0)
    twin.reset(seed=0)
    terminateds: dict = {}
    while not terminateds.get("car_0"):
        actions = {a: 1 for a in marlhub.actors(obs, terminateds, {})}
        obs, _, terminateds, _, _ = env.step(actions)
        twin.step(actions)
    assert "car_0" in obs and "car_0" not in marlhub.actors(obs, terminateds, {})
    with pytest.raises(ActionError, match=r"Bad action for 'car_0': got 1, .*'car_0' is done: it "
                                          r"got its final observation .*marlhub\.actors\(obs"):
        env.step({a: 1 for a in obs})
    actions = {a: 1 for a in marlhub.actors(obs, terminateds, {})}
    assert repr(env.step(actions)) == repr(twin.step(actions))



# -- the global state ------------------------------------------------------------------

def states_along(env: Traffic, seed: int, policy: Policy) -> list[np.ndarray]:
    """Play one episode; return the global state after reset and after each step."""
    obs, _ = env.reset(seed=seed)
    states = [env.state()]
    while True:
        obs, _, terminateds, truncateds, _ = env.step({a: policy(a) for a in obs})
        states.append(env.state())
        if terminateds[ALL] or truncateds[ALL]:
            return states
        obs = {a: o for a, o in obs.items() if not terminateds.get(a)}


@pytest.mark.parametrize("seed", [0, 5])
def test_the_global_state_is_in_its_space_after_reset_and_every_step(seed: int) -> None:
    env = Traffic({"num_cars": 3, "max_steps": 40})
    space = env.state_space
    assert isinstance(space, gym.spaces.Box) and space.dtype == np.float32
    assert space.shape == (3 * 3 + 2,)
    sampler = ActionSampler(seed)
    states = states_along(env, seed, lambda a: sampler.sample(a, env.get_action_space(a)))
    for state in states:
        assert state.shape == space.shape and space.contains(state)


def test_the_global_state_follows_the_cars_the_light_and_the_clock() -> None:
    env = Traffic({"num_cars": 2, "road_length": 3, "arrival_gap": 0, "max_steps": 50})
    states = states_along(env, 0, fast_green)
    n = env.road_length
    # Per car (cell, on the road, crossed), then the phase and t: car_0 on cell 0,
    # car_1 not on the road yet.
    assert states[0].tolist()[:6] == [0, 1, 0, 0, 0, 0]
    assert [s[-1] for s in states] == list(range(len(states)))
    cells = [s[0] for s in states if s[1] == 1]
    assert cells == sorted(cells) and len(set(cells)) > 1  # car_0 moves forward
    assert any(s[3:6].tolist() == [0, 1, 0] for s in states)  # car_1 enters
    assert states[-1].tolist() == [n, 0, 1, n, 0, 1, 1, len(states) - 1]  # both crossed, green
