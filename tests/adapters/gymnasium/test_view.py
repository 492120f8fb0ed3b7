"""hub -> Gymnasium: one agent's view and the joint view, checked with Gymnasium's own checker."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import marlhub
from marlhub import ALL, MultiAgentEnv
from marlhub.adapters.gymnasium import (
    AgentView,
    JointView,
    make_multi_agent,
    to_gymnasium,
)
from marlhub.conformance import check
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic
from marlhub.errors import (
    ActionError,
    AgentIdError,
    NotParallelizableError,
    ResetNeededError,
)
from tests.versions import gymnasium_id

# Gymnasium's checker warns about CartPole's own infinite Box bounds; that is CartPole's
# business, not the adapter's. Every other warning of check_env fails the test.
INFINITE_BOUNDS = "ignore:.*Box observation space (minimum|maximum) value is -?infinity"


def first_empty(obs: Any, agent: Any = None) -> int:
    """A deterministic tic-tac-toe policy: the first empty field."""
    return int(np.flatnonzero(obs == 0)[0])


def hub_return(make: Callable[[], Any], agent: Any, seed: int, mine: Callable[[Any], Any],
               others: Callable[[Any, Any], Any]) -> tuple[float, int]:
    """Play the hub env directly; return the agent's return and the number of hub steps."""
    env = make()
    obs, _ = env.reset(seed=seed)
    total, steps, done = 0.0, 0, set()
    while True:
        actions = {a: mine(obs[a]) if a == agent else others(obs[a], a) for a in obs if a not in done}
        obs, rewards, terminateds, truncateds, _ = env.step(actions)
        steps += 1
        total += rewards.get(agent, 0.0)
        done |= {a for d in (terminateds, truncateds) for a, v in d.items() if v and a != ALL}
        if agent in done or terminateds[ALL] or truncateds[ALL]:
            return total, steps


def view_return(view: gym.Env, seed: int, mine: Callable[[Any], Any]) -> tuple[float, int, bool, bool]:
    obs, _ = view.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = view.step(mine(obs))
        steps += 1
        total += reward
        if terminated or truncated:
            return total, steps, terminated, truncated


# -- Gymnasium's check_env -----------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: to_gymnasium(RockPaperScissors(), "player1"),
        lambda: to_gymnasium(RockPaperScissors(), "player2", others=lambda obs, agent: 2),
        lambda: to_gymnasium(TicTacToe(), "player2"),
        lambda: to_gymnasium(Traffic(), "light"),
        lambda: to_gymnasium(Traffic({"num_cars": 5}), "car_3"),  # enters after reset
        lambda: to_gymnasium(make_multi_agent("FrozenLake-v1")({"num_agents": 3}), 2),
        lambda: to_gymnasium(make_multi_agent(gymnasium_id("Taxi"))({"num_agents": 2}), 0),
    ],
)
def test_one_agent_views_pass_check_env(make: Callable[[], gym.Env]) -> None:
    view = make()
    assert isinstance(view, AgentView)
    check_env(view, skip_render_check=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda: to_gymnasium(RockPaperScissors(), joint=True),
        lambda: to_gymnasium(make_multi_agent("FrozenLake-v1")({"num_agents": 3}), joint=True),
        lambda: to_gymnasium(make_multi_agent(gymnasium_id("Taxi"))({"num_agents": 2}), joint=True),
        lambda: to_gymnasium(make_multi_agent("MountainCarContinuous-v0")({"num_agents": 2}), joint=True),
    ],
)
def test_joint_views_pass_check_env(make: Callable[[], gym.Env]) -> None:
    view = make()
    assert isinstance(view, JointView)
    check_env(view, skip_render_check=True)


@pytest.mark.filterwarnings(INFINITE_BOUNDS)
def test_cartpole_copies_views_pass_check_env() -> None:
    make = make_multi_agent("CartPole-v1")
    check_env(to_gymnasium(make({"num_agents": 2}), joint=True), skip_render_check=True)
    check_env(to_gymnasium(make({"num_agents": 2}), 1), skip_render_check=True)


def test_views_render_through_the_hub_env() -> None:
    view = to_gymnasium(RockPaperScissors(), "player1", others=lambda obs, agent: 0)
    view.reset(seed=0)
    view.step(1)
    assert view.render_mode == "ansi"
    assert view.render() == "move 1/10: player1 PAPER vs player2 ROCK -> player1 wins"


# -- one agent's view: rewards between turns, ends, seeds -------------------------------------


def test_rewards_that_arrive_between_turns_add_up_into_the_next_step() -> None:
    def make() -> Traffic:
        return Traffic({"num_cars": 4, "max_steps": 60})

    def green(obs: Any) -> int:
        return 1

    def drive(obs: Any, agent: Any) -> int:
        return 2 if agent != "light" else 1

    want, hub_steps = hub_return(make, "light", 3, green, drive)
    got, view_steps, terminated, truncated = view_return(to_gymnasium(make(), "light", others=drive), 3, green)
    assert got == pytest.approx(want) and want == 4.0  # the light earns +1 per crossing car
    assert view_steps < hub_steps  # the light acts every 4th step, cars cross in between
    assert terminated and not truncated


def test_tic_tac_toe_view_returns_what_the_hub_pays() -> None:
    for seed in range(4):
        want, _ = hub_return(TicTacToe, "player1", seed, first_empty, first_empty)
        got, _, terminated, _ = view_return(to_gymnasium(TicTacToe(), "player1", others=first_empty),
                                            seed, first_empty)
        assert got == want and terminated


def test_an_agent_that_leaves_ends_its_view_while_the_hub_goes_on() -> None:
    view = to_gymnasium(Traffic({"num_cars": 3}), "car_0", others=lambda obs, agent: 1)
    got, _, terminated, truncated = view_return(view, 0, lambda obs: 2)
    assert terminated and not truncated and got == pytest.approx(1.0)  # +1 for crossing
    assert view.hub_env.agents  # the others are still on the road
    with pytest.raises(ResetNeededError, match="agent's episode is over"):
        view.step(0)


def test_truncation_follows_all() -> None:
    view = to_gymnasium(Traffic({"num_cars": 3, "max_steps": 5}), "light", others=lambda obs, a: 0)
    _, _, terminated, truncated = view_return(view, 0, lambda obs: 0)  # red forever
    assert truncated and not terminated


def test_the_same_seed_replays_the_random_others() -> None:
    def trace(seed: int) -> list[Any]:
        view = to_gymnasium(Traffic(), "light")
        obs, _ = view.reset(seed=seed)
        out = [obs.tolist()]
        for t in range(15):
            obs, reward, terminated, truncated, _ = view.step(t % 2)
            out.append((obs.tolist(), reward, terminated, truncated))
            if terminated or truncated:
                break
        return out

    assert trace(5) == trace(5)
    assert trace(5) != trace(6)


def test_an_agent_absent_from_the_episode_sees_it_end_at_its_first_step() -> None:
    # car_5 never enters a one-step episode: reset shows zeros, the first step ends it.
    view = to_gymnasium(Traffic({"num_cars": 6, "max_steps": 1, "arrival_gap": 5}), "car_5")
    obs, info = view.reset(seed=0)
    assert info["episode_over_before_turn"] is True
    assert view.observation_space.contains(obs) and not np.any(obs)
    obs, reward, terminated, truncated, info = view.step(0)
    assert (terminated or truncated) and reward == 0.0
    with pytest.raises(ResetNeededError):
        view.step(0)


def test_no_reward_is_lost_when_the_others_end_the_episode_first() -> None:
    pytest.importorskip("pettingzoo")
    from marlhub.adapters.pettingzoo import from_pettingzoo
    from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make

    # In Leduc hold'em the other player may fold before player_1 acts; player_1 still wins.
    hub = from_pettingzoo(pettingzoo_make("aec", "classic/leduc_holdem-v4"))
    view = to_gymnasium(hub, "player_1", others=lambda obs, agent: 2)  # player_0 folds
    found = 0
    for seed in range(20):
        obs, info = view.reset(seed=seed)
        if info.get("episode_over_before_turn"):
            found += 1
            _, reward, terminated, truncated, _ = view.step(0)
            assert terminated and reward > 0
    assert found


def test_view_action_errors() -> None:
    view = to_gymnasium(RockPaperScissors(), "player1")
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called"):
        view.step(0)
    view.reset(seed=0)
    with pytest.raises(ActionError, match=r"Bad action for 'player1': got 3, expected an action in Discrete\(3\)"):
        view.step(3)
    assert view.hub_env.num_moves == 0  # nothing was stepped
    bad_policy = to_gymnasium(RockPaperScissors(), "player1", others=lambda obs, agent: 7)
    bad_policy.reset(seed=0)
    with pytest.raises(ActionError, match="The others= policy for 'player2' chose it"):
        bad_policy.step(0)
    assert bad_policy.hub_env.num_moves == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({}, AgentIdError, "needs agent_id for an env with 2 agents.*joint=True"),
        ({"agent_id": "player3"}, AgentIdError, "'player3', which is not a possible agent.*Did you mean"),
        ({"agent_id": "player1", "others": {"player4": print}}, AgentIdError, "others= names 'player4'"),
        ({"agent_id": "player1", "others": {"player1": print}}, AgentIdError, "the agent of the view itself"),
        ({"agent_id": "player1", "others": {"player2": 1}}, TypeError, r"others\['player2'\] must be a policy"),
        ({"agent_id": "player1", "others": "random"}, TypeError, "others= takes None"),
        ({"agent_id": "player1", "joint": True}, ValueError, "takes no agent_id and no others"),
    ],
)
def test_view_construction_errors(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        to_gymnasium(RockPaperScissors(), **kwargs)


def test_views_conform_as_hub_envs_again() -> None:
    for make in (lambda: to_gymnasium(Traffic(), "light"), lambda: to_gymnasium(TicTacToe(), "player1")):
        report = check(make, episodes=4, strict=True)
        assert report.ok, str(report)


# -- the joint view ---------------------------------------------------------------------------


def test_joint_view_sums_rewards_and_keeps_the_agents_apart_in_info() -> None:
    view = to_gymnasium(RockPaperScissors(), joint=True)
    assert view.reset(seed=0) == ({"player1": 0, "player2": 0}, {"agent_infos": {}})
    obs, reward, terminated, truncated, info = view.step({"player1": 1, "player2": 0})
    assert obs == {"player1": 0, "player2": 1} and reward == 0.0
    assert info["individual_rewards"] == {"player1": 1.0, "player2": -1.0}
    assert info["terminateds"] == {ALL: False} and (terminated, truncated) == (False, False)


def test_joint_view_keeps_finished_copies_last_observation_and_ignores_their_actions() -> None:
    hub = make_multi_agent("CartPole-v1")({"num_agents": 2, "max_episode_steps": 200})
    view = to_gymnasium(hub, joint=True)
    view.reset(seed=0)
    t = 0
    while 0 in hub.agents:  # copy 0 topples, copy 1 balances
        obs, *_ = view.step({0: 0, 1: t % 2})
        t += 1
    last = obs[0].copy()
    obs, reward, terminated, _, info = view.step({0: 99, 1: t % 2})  # 99: ignored, copy 0 is done
    np.testing.assert_array_equal(obs[0], last)
    assert obs[0] is not last and set(info["individual_rewards"]) == {1} and not terminated


def test_joint_view_refuses_turn_based_envs_at_their_first_turn_based_step() -> None:
    with pytest.raises(NotParallelizableError, match=r"to_gymnasium\(env, joint=True\) needs every live agent"):
        to_gymnasium(TicTacToe(), joint=True).reset(seed=0)
    with pytest.raises(NotParallelizableError, match="'car_0', 'light' act"):
        to_gymnasium(Traffic(), joint=True).reset(seed=0)


class TurnsLater(MultiAgentEnv):
    """Both agents act for two steps, then only "a"."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.agents = self.possible_agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Discrete(5) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return {"a": 0, "b": 0}, {}

    def step(self, action_dict: dict) -> Any:
        self.t += 1
        actors = ["a", "b"] if self.t < 2 else ["a"]
        done = self.t >= 4
        return ({a: self.t for a in actors}, {a: 0.0 for a in action_dict}, {ALL: done},
                {ALL: False}, {})


def test_joint_view_error_at_the_first_turn_based_step_then_reset_needed() -> None:
    view = to_gymnasium(TurnsLater(), joint=True)
    view.reset(seed=0)
    view.step({"a": 0, "b": 0})
    with pytest.raises(NotParallelizableError, match="Only 'a' act in this step.*'a', 'b'"):
        view.step({"a": 0, "b": 0})
    with pytest.raises(ResetNeededError, match="stopped being simultaneous"):
        view.step({"a": 0, "b": 0})
    assert view.reset(seed=1)[0] == {"a": 0, "b": 0}


def test_joint_view_action_errors_leave_the_env_unchanged() -> None:
    view = to_gymnasium(RockPaperScissors(), joint=True)
    view.reset(seed=0)
    bad = [
        ({"player1": 0}, "Add an action for 'player2'"),
        ({"player1": 0, "player2": 0, "player3": 0}, "'player3' is not an agent"),
        ({"player1": 0, "player2": -1}, r"Bad action for 'player2': got -1"),
        ((0, 0), "a dict with an action for each of"),
    ]
    for action, match in bad:
        with pytest.raises(ActionError, match=match):
            view.step(action)
    assert view.hub_env.num_moves == 0


# -- property: one agent's view gets exactly the agent's rewards ---------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_cars=st.integers(1, 4),
    max_steps=st.integers(3, 40),
    light_every=st.integers(1, 5),
    agent=st.sampled_from(["light", "car_0"]),
    seed=st.integers(0, 10_000),
)
def test_view_return_equals_hub_return(num_cars: int, max_steps: int, light_every: int,
                                       agent: str, seed: int) -> None:
    def make() -> Traffic:
        return Traffic({"num_cars": num_cars, "max_steps": max_steps, "light_every": light_every})

    def mine(obs: Any) -> int:
        return int(np.sum(obs) * 7) % (2 if agent == "light" else 3)

    def others(obs: Any, who: Any) -> int:
        return int(np.sum(obs) * 3) % (2 if who == "light" else 3)

    want, _ = hub_return(make, agent, seed, mine, others)
    got, _, terminated, truncated = view_return(to_gymnasium(make(), agent, others=others), seed, mine)
    assert got == pytest.approx(want)
    assert terminated or truncated


# -- consumers that send any action of the space: masked games pass check_env -----------

MASKED_AGENT_VIEWS = [("openspiel/chess", "player_0"), ("openspiel/backgammon", "player_1"),
                      ("openspiel/leduc_poker", "player_1"),
                      ("pettingzoo/classic/texas_holdem-v4", "player_1"),
                      ("pettingzoo/classic/connect_four-v3", "player_0")]


@pytest.mark.parametrize(("env_id", "agent"), MASKED_AGENT_VIEWS,
                         ids=[e for e, _ in MASKED_AGENT_VIEWS])
def test_masked_games_pass_gymnasiums_check_env_with_the_default_policy(env_id: str,
                                                                       agent: str) -> None:
    pytest.importorskip("pyspiel" if env_id.startswith("openspiel") else "pettingzoo")
    view = to_gymnasium(marlhub.make(env_id), agent)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # check_env's advice on spaces and render modes
        check_env(view, skip_render_check=True)
    assert view.illegal_action == "terminate"


def test_an_illegal_action_terminates_with_the_penalty_and_masks_reach_the_learner() -> None:
    pytest.importorskip("pyspiel")
    view = to_gymnasium(marlhub.make("openspiel/tic_tac_toe"), "player_0",
                        others=lambda obs, agent: int(np.flatnonzero(obs["action_mask"])[0]))
    obs, info = view.reset(seed=0)
    assert view.action_masks().dtype == bool and view.action_masks().all()
    assert (info["action_mask"] == obs["action_mask"]).all()
    view.step(4)  # the other takes square 0
    assert not view.action_masks()[0] and not view.action_masks()[4]
    _, reward, terminated, truncated, info = view.step(0)  # taken
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info["illegal_action"] == 0
    raising = to_gymnasium(marlhub.make("openspiel/tic_tac_toe"), "player_0",
                           illegal_action="raise")
    raising.reset(seed=0)
    raising.step(4)
    with pytest.raises(ActionError, match="expected a legal action"):
        raising.step(4)


JOINT_VIEWS = ["pettingzoo/butterfly/pistonball-v6", "pettingzoo/sisl/pursuit",
               "pettingzoo/butterfly/knights_archers_zombies", "rock_paper_scissors"]


@pytest.mark.parametrize("env_id", JOINT_VIEWS)
def test_joint_views_pass_check_env_and_hand_out_fresh_infos(env_id: str) -> None:
    config = {}
    if env_id.startswith("pettingzoo"):
        pytest.importorskip("pettingzoo")
        config = {"api": "parallel"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(to_gymnasium(marlhub.make(env_id, config), joint=True), skip_render_check=True)
