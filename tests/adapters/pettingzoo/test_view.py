"""Hub -> PettingZoo: to_pettingzoo passes PettingZoo's own tests, both APIs, and round trips."""

from __future__ import annotations

import sys
from collections import defaultdict
from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np
import pytest

import marlhub

pettingzoo = pytest.importorskip("pettingzoo")
import warnings  # noqa: E402

from gymnasium.utils.env_checker import data_equivalence  # noqa: E402

from marlhub.adapters.pettingzoo import (  # noqa: E402
    HubAECEnv,
    HubParallelEnv,
    ParallelPettingZooEnv,
    PettingZooEnv,
    compare_with_native,
    from_pettingzoo,
    to_pettingzoo,
)
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402
from marlhub.adapters.pettingzoo.catalogue import registries
from marlhub.conformance import check  # noqa: E402
from marlhub.core import ALL, MultiAgentEnv  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ActionError,
    EnvContractError,
    MissingDependencyError,
    NotParallelizableError,
    ResetNeededError,
)
from marlhub.spaces import ActionSampler, find_action_mask  # noqa: E402
from tests.adapters.pettingzoo.test_custom_envs import Herd, Relay, _quietly  # noqa: E402
from tests.versions import kaz_dying  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from pettingzoo.test import api_test, parallel_api_test, seed_test  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")

REFERENCE = {
    "TicTacToe": lambda: TicTacToe(),
    "RockPaperScissors": lambda: RockPaperScissors(),
    "Traffic": lambda: Traffic({"num_cars": 4, "max_steps": 40}),
}
SIMULTANEOUS = ["RockPaperScissors"]


def check_parallel_deterministic(make: Callable[[], Any], *, seed: int = 42, episodes: int = 3,
                                 max_steps: int = 1000) -> None:
    """What PettingZoo's ``parallel_seed_test`` should check (1.27's stops after one step).

    Two envs from ``make``, reset with the same seeds, play whole episodes with the
    same seeded legal actions (masks respected); every output of every step must
    be equal, agent lists included.

    Raises:
        AssertionError: the first difference.
    """
    env1, env2 = make(), make()
    for episode in range(episodes):
        out1 = env1.reset(seed=seed + episode)
        out2 = env2.reset(seed=seed + episode)
        assert data_equivalence(out1, out2), f"episode {episode}: reset differs"
        (obs1, infos1), (obs2, infos2) = out1, out2
        samplers = ActionSampler(episode), ActionSampler(episode)
        for step in range(max_steps):
            assert env1.agents == env2.agents, f"episode {episode} step {step}: agents differ"
            if not env1.agents:
                break
            actions = [
                {a: sampler.sample(a, env.action_space(a), find_action_mask(obs[a], infos.get(a)))
                 for a in env.agents}
                for sampler, env, obs, infos in zip(samplers, (env1, env2), (obs1, obs2),
                                                    (infos1, infos2))
            ]
            assert data_equivalence(actions[0], actions[1]), "action sampling differs"
            res1, res2 = env1.step(actions[0]), env2.step(actions[1])
            for name, x, y in zip(("obs", "rewards", "terminations", "truncations", "infos"),
                                  res1, res2):
                assert data_equivalence(x, y), f"episode {episode} step {step}: {name} differ"
            obs1, infos1, obs2, infos2 = res1[0], res1[4], res2[0], res2[4]
        else:
            raise AssertionError(f"episode {episode} did not end in {max_steps} steps")
    env1.close()
    env2.close()


# -- PettingZoo's own tests on hub envs ---------------------------------------------


@pytest.mark.parametrize("name", list(REFERENCE))
def test_api_test_and_seed_test_pass_on_reference_envs(name: str) -> None:
    make = REFERENCE[name]
    _quietly(api_test, to_pettingzoo(make()), num_cycles=300)
    _quietly(seed_test, lambda: to_pettingzoo(make()), num_cycles=300)


@pytest.mark.parametrize("name", SIMULTANEOUS)
def test_parallel_api_test_passes_on_simultaneous_reference_envs(name: str) -> None:
    _quietly(parallel_api_test, to_pettingzoo(REFERENCE[name](), api="parallel"), num_cycles=300)
    check_parallel_deterministic(lambda: to_pettingzoo(REFERENCE[name](), api="parallel"))


@pytest.mark.parametrize("name", list(REFERENCE))
def test_padded_parallel_views_pass_parallel_api_test(name: str) -> None:
    make = REFERENCE[name]
    _quietly(parallel_api_test, to_pettingzoo(make(), api="parallel", turn_based="pad"),
             num_cycles=300)
    check_parallel_deterministic(lambda: to_pettingzoo(make(), api="parallel", turn_based="pad"))


class GlobalRandomRPS(RockPaperScissors):
    """Observations from the unseeded global RNG: not reproducible."""

    def step(self, action_dict: Any) -> Any:
        obs, *rest = super().step(action_dict)
        return {a: int(np.random.randint(3)) for a in obs}, *rest


def test_the_parallel_determinism_check_can_fail() -> None:
    with pytest.raises(AssertionError, match="obs differ"):
        check_parallel_deterministic(lambda: to_pettingzoo(GlobalRandomRPS(), api="parallel"))


# -- round trips of real PettingZoo envs -------------------------------------------

ROUND_TRIPS = [
    ("classic/tictactoe-v3", {}),
    ("classic/connect_four-v3", {}),
    ("classic/texas_holdem-v4", {}),
    ("classic/leduc_holdem-v4", {}),
    ("classic/rps-v2", {"max_cycles": 10}),
    ("butterfly/pistonball-v6", {"n_pistons": 4, "max_cycles": 10}),
    ("butterfly/knights_archers_zombies",
     {"max_cycles": 30, **kaz_dying()}),
]


@pytest.mark.parametrize(("env_id", "kwargs"), ROUND_TRIPS, ids=[i for i, _ in ROUND_TRIPS])
def test_round_trip_through_the_hub_passes_api_and_seed_tests(env_id: str, kwargs: dict) -> None:
    def make() -> Any:
        return HubAECEnv(PettingZooEnv(pettingzoo_make("aec", env_id, **kwargs)))

    _quietly(api_test, make(), num_cycles=60)
    _quietly(seed_test, make, num_cycles=60)


PARALLEL_ROUND_TRIPS = [i for i in ROUND_TRIPS if i[0] in registries()[1]]


@pytest.mark.parametrize(("env_id", "kwargs"), PARALLEL_ROUND_TRIPS,
                         ids=[i for i, _ in PARALLEL_ROUND_TRIPS])
def test_parallel_round_trip_passes_parallel_api_test(env_id: str, kwargs: dict) -> None:
    def make() -> Any:
        return HubParallelEnv(ParallelPettingZooEnv(pettingzoo_make("parallel", env_id, **kwargs)))

    _quietly(parallel_api_test, make(), num_cycles=60)
    check_parallel_deterministic(make, episodes=2)
    # The parallel env as AEC, through the hub.
    native = pettingzoo_make("parallel", env_id, **kwargs)
    _quietly(api_test, HubAECEnv(ParallelPettingZooEnv(native)), num_cycles=60)


def test_custom_envs_round_trip() -> None:
    _quietly(api_test, HubAECEnv(PettingZooEnv(Relay())), num_cycles=50)
    _quietly(seed_test, lambda: HubAECEnv(PettingZooEnv(Relay())), num_cycles=50)
    _quietly(parallel_api_test, HubParallelEnv(ParallelPettingZooEnv(Herd())), num_cycles=20)
    check_parallel_deterministic(lambda: HubParallelEnv(ParallelPettingZooEnv(Herd())))


@pytest.mark.parametrize("name", list(REFERENCE))
def test_hub_to_aec_to_hub_conforms_and_matches_in_lockstep(name: str) -> None:
    make = REFERENCE[name]
    report = check(lambda: PettingZooEnv(to_pettingzoo(make())), episodes=8, seed=0, strict=True)
    assert report.ok, str(report)
    findings = compare_with_native(lambda: to_pettingzoo(make()), episodes=4, adapt=PettingZooEnv)
    assert findings == [], "\n".join(f.message for f in findings)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_aec_view_returns_equal_hub_returns(name: str) -> None:
    make = REFERENCE[name]

    # Both loops meet the actors in the same order, so one sampler per run gives
    # both the same actions.
    def hub_returns(seed: int) -> dict[str, float]:
        env = make()
        sampler = ActionSampler(seed)
        obs, infos = env.reset(seed=seed)
        returns: dict[str, float] = defaultdict(float)
        while True:
            actions = {
                a: sampler.sample(a, env.get_action_space(a), find_action_mask(o, infos.get(a)))
                for a, o in obs.items()
            }
            obs, rewards, terms, truncs, infos = env.step(actions)
            for agent, reward in rewards.items():
                returns[agent] += reward
            if terms[ALL] or truncs[ALL]:
                return dict(returns)
            obs = {a: o for a, o in obs.items() if not (terms.get(a) or truncs.get(a))}

    def aec_returns(seed: int) -> dict[str, float]:
        env = to_pettingzoo(make())
        sampler = ActionSampler(seed)
        env.reset(seed=seed)
        returns: dict[str, float] = defaultdict(float)
        for agent in env.agent_iter():
            obs, reward, term, trunc, info = env.last()
            returns[agent] += reward
            env.step(None if term or trunc else sampler.sample(
                agent, env.action_space(agent), find_action_mask(obs, info)))
        return dict(returns)

    for seed in range(4):
        assert aec_returns(seed) == pytest.approx(hub_returns(seed))


# -- semantics of the views ----------------------------------------------------------


def test_turn_based_envs_raise_in_the_parallel_api() -> None:
    with pytest.raises(NotParallelizableError, match=r"Only 'player\d' act in this step"):
        to_pettingzoo(TicTacToe(), api="parallel").reset(seed=0)
    par = to_pettingzoo(Traffic({"num_cars": 3, "max_steps": 30}), api="parallel")
    with pytest.raises(NotParallelizableError, match="turn_based='pad'"):
        obs, infos = par.reset(seed=1)
        for _ in range(30):
            obs, *_ = par.step({a: 0 for a in par.agents})
    with pytest.raises(ResetNeededError, match="turn-based"):
        par.step({a: 0 for a in par.agents})


def test_padding_gives_idle_agents_their_last_observation() -> None:
    par = to_pettingzoo(TicTacToe(), api="parallel", turn_based="pad")
    obs, infos = par.reset(seed=0)
    mover = next(a for a in infos if infos[a]["is_acting"])
    idle = next(a for a in infos if not infos[a]["is_acting"])
    assert obs[idle].tolist() == [0.0] * 9  # nothing seen yet: zeros, inside Box(-1, 1)
    obs, rewards, terms, truncs, infos = par.step({mover: 4, idle: 12345})  # idle action ignored
    assert infos[idle]["is_acting"] and not infos[mover]["is_acting"]
    assert obs[idle][4] != 0  # the new mover sees the move
    assert obs[mover].tolist() == [0.0] * 9  # the now idle player keeps its last observation
    assert rewards == {mover: 0.0, idle: 0.0}


def test_padding_ignores_actions_for_every_possible_agent_that_does_not_act() -> None:
    """As native parallel envs do, and as learners with fixed agent slots (skrl) need."""
    par = to_pettingzoo(Traffic({"num_cars": 3}), api="parallel", turn_based="pad")
    twin = Traffic({"num_cars": 3})
    obs, infos = par.reset(seed=0)
    twin_obs, _ = twin.reset(seed=0)
    terminateds: dict = {}
    seen_gone = False
    while par.agents:
        actors = [a for a in par.agents if infos[a].get("is_acting", True)]
        assert sorted(actors) == sorted(marlhub.actors(twin_obs, terminateds, {}))
        every = {a: 1 for a in par.possible_agents}  # cars not come yet and gone ones too
        obs, rewards, terms, truncs, infos = par.step(every)
        twin_obs, twin_rewards, terminateds, _, _ = twin.step({a: 1 for a in actors})
        assert rewards == {a: twin_rewards.get(a, 0) for a in rewards}
        seen_gone = seen_gone or any(terms.values())
    assert seen_gone
    with pytest.raises(ActionError, match="'nobody' is not an agent"):  # unknown: refused
        par.reset(seed=0)
        par.step({"nobody": 1, **{a: 1 for a in par.possible_agents}})
    strict = to_pettingzoo(Traffic({"num_cars": 3}), api="parallel")  # turn_based="raise"
    strict.reset(seed=0)
    with pytest.raises(ActionError, match="'car_1' did not receive an observation"):
        strict.step({a: 1 for a in strict.possible_agents})


def test_aec_view_walks_the_actors_and_buffers_actions() -> None:
    env = to_pettingzoo(RockPaperScissors())
    env.reset(seed=0)
    assert env.agent_selection == "player1" and env.agents == ["player1", "player2"]
    env.step(RockPaperScissors.PAPER)
    assert env.agent_selection == "player2" and env.rewards == {"player1": 0, "player2": 0}
    env.step(RockPaperScissors.ROCK)  # the hub env steps now
    assert env.rewards == {"player1": 1.0, "player2": -1.0}
    assert env.observe("player1") == RockPaperScissors.ROCK
    assert isinstance(env.observe("player1"), np.int64)  # PettingZoo's tests check dtypes


def test_conversions_unwrap() -> None:
    hub = TicTacToe()
    assert from_pettingzoo(to_pettingzoo(hub)) is hub
    assert from_pettingzoo(to_pettingzoo(hub, api="parallel", turn_based="pad")) is hub
    aec = to_pettingzoo(hub)
    assert to_pettingzoo(aec) is aec
    par_view = to_pettingzoo(aec, api="parallel", turn_based="pad")
    assert type(par_view) is HubParallelEnv and par_view.hub_env is hub
    native = pettingzoo_make("parallel", "classic/rps-v2")
    assert type(to_pettingzoo(native)) is HubAECEnv  # parallel -> AEC goes through the hub


def test_the_unwrap_identity_holds_for_native_envs_and_views_unwrap_to_their_hub_env() -> None:
    """What the README says of ``to_pettingzoo(from_pettingzoo(e)) is e``, case by case."""
    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    assert to_pettingzoo(from_pettingzoo(native)) is native
    view = marlhub.make("tic_tac_toe", to="pettingzoo.aec")  # a view of a hub env
    hub = from_pettingzoo(view)
    assert hub is view.hub_env
    again = to_pettingzoo(hub)  # a new view of the same env, which shares its state
    assert again is not view and again.hub_env is view.hub_env


# -- errors ------------------------------------------------------------------------


def test_aec_view_errors() -> None:
    env = to_pettingzoo(RockPaperScissors({"num_moves": 1}))
    with pytest.raises(ResetNeededError, match=r"reset\(\) has not been called yet"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"'player1': got 7, expected an action in Discrete\(3\)"):
        env.step(7)
    assert env.agent_selection == "player1" and env._actions == {}
    env.step(0)
    env.step(1)
    assert env.terminations == {"player1": True, "player2": True}
    with pytest.raises(ActionError, match="is done; PettingZoo steps done agents with None"):
        env.step(0)
    env.step(None)
    env.step(None)
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step(None)


def test_parallel_view_errors() -> None:
    par = to_pettingzoo(RockPaperScissors({"num_moves": 1}), api="parallel")
    with pytest.raises(ResetNeededError):
        par.step({})
    par.reset(seed=0)
    with pytest.raises(ActionError, match="Add an action for 'player2'"):
        par.step({"player1": 0})
    with pytest.raises(ActionError, match="'player3' is not an agent of RockPaperScissors"):
        par.step({"player1": 0, "player2": 0, "player3": 0})
    with pytest.raises(ActionError, match=r"for 'player2': got 3"):
        par.step({"player1": 0, "player2": 3})
    obs, rewards, terms, truncs, infos = par.step({"player1": 0, "player2": 1})
    assert terms == {"player1": True, "player2": True} and par.agents == []
    with pytest.raises(ResetNeededError, match="no agents are left"):
        par.step({})


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"api": "gym"}, "api must be 'aec' or 'parallel', got 'gym'"),
    ({"turn_based": "skip"}, "turn_based must be 'raise' or 'pad', got 'skip'"),
])
def test_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        to_pettingzoo(RockPaperScissors(), **kwargs)


class Leaver(MultiAgentEnv):
    """'a' terminates in the first step; the broken variant still rewards it afterwards."""

    def __init__(self, broken: bool = True) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.observation_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}
        self.action_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}
        self.broken = broken

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        self.agents = ["a", "b"]
        return {"a": 0, "b": 0}, {}

    def step(self, action_dict: Any) -> Any:
        self.t += 1
        if self.t == 1:
            self.agents = ["b"]
            return ({"a": 1, "b": 1}, {"a": 1.0, "b": 0.0}, {"a": True, ALL: False},
                    {ALL: False}, {})
        rewards = {"a": 1.0, "b": 1.0} if self.broken else {"b": 1.0}
        self.agents = []
        return {"b": 1}, rewards, {ALL: True}, {ALL: False}, {}


@pytest.mark.parametrize("api", ["aec", "parallel"])
def test_rewards_for_finished_agents_are_a_contract_error(api: str) -> None:
    env = to_pettingzoo(Leaver(), api=api)
    if api == "aec":
        env.reset(seed=0)
        env.step(0)
        env.step(0)  # a terminated
        env.step(None)  # a removed
        with pytest.raises(EnvContractError, match="gave the reward 1.0 to 'a', which was done"):
            env.step(0)
    else:
        env.reset(seed=0)
        env.step({"a": 0, "b": 0})
        with pytest.raises(EnvContractError, match="'a', which was done earlier"):
            env.step({"b": 0})
    ok = to_pettingzoo(Leaver(broken=False), api=api)
    ok.reset(seed=0)
    if api == "parallel":
        ok.step({"a": 0, "b": 0})
        assert ok.step({"b": 0})[1] == {"b": 1.0}


def test_render_close_and_state_pass_through() -> None:
    env = to_pettingzoo(RockPaperScissors())
    env.reset(seed=0)
    assert env.render() == "move 0/10: nobody has moved yet"
    with pytest.raises(NotImplementedError, match="RockPaperScissors has no state"):
        env.state()
    env.close()
    par = to_pettingzoo(RockPaperScissors(), api="parallel")
    par.reset(seed=0)
    assert par.render().startswith("move 0/10")


def test_missing_pettingzoo_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    monkeypatch.delitem(sys.modules, "marlhub.adapters.pettingzoo.view", raising=False)
    with pytest.raises(MissingDependencyError, match=r"pip install 'marlhub\[pettingzoo\]'"):
        to_pettingzoo(RockPaperScissors())


class Bystander(MultiAgentEnv):
    """'b' is live from the start but never observes; it leaves in step 2 without an observation."""

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["a_0", "b_0"]
        self.observation_spaces = {x: gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
                                   for x in self.possible_agents}
        self.action_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        self.agents = ["a_0", "b_0"]
        return {"a_0": np.full(2, 0.5, np.float32)}, {}

    def step(self, action_dict: Any) -> Any:
        self.t += 1
        obs = {"a_0": np.full(2, 0.1 * self.t, np.float32)}
        if self.t == 2:
            self.agents = ["a_0"]
            return obs, {"a_0": 0.0, "b_0": -1.0}, {"b_0": True, ALL: False}, {ALL: False}, {}
        done = self.t >= 4
        if done:
            self.agents = []
        return obs, {"a_0": 1.0}, {ALL: done}, {ALL: False}, {}


def test_agents_that_never_observe_see_a_zero_like_observation() -> None:
    env = to_pettingzoo(Bystander())
    env.reset(seed=0)
    assert env.observe("b_0").tolist() == [0.0, 0.0]
    _quietly(api_test, to_pettingzoo(Bystander()), num_cycles=20)
    _quietly(seed_test, lambda: to_pettingzoo(Bystander()), num_cycles=20)
    report = check(lambda: PettingZooEnv(to_pettingzoo(Bystander())), episodes=2, strict=True)
    assert report.ok, str(report)


# -- what PettingZoo's base classes declare, and learners read (skrl, AgileRL, BenchMARL) --

@pytest.mark.parametrize("api", ["aec", "parallel"])
@pytest.mark.parametrize("env_id", ["rock_paper_scissors", "traffic", "mpe2/simple_spread-v3"])
def test_views_carry_every_attribute_their_base_class_declares(env_id: str, api: str) -> None:
    if env_id.startswith("mpe2/"):
        pytest.importorskip("mpe2")
    hub = marlhub.make(env_id)
    # The view classes themselves (to_pettingzoo would hand a PettingZoo source back unwrapped).
    view = HubAECEnv(hub) if api == "aec" else HubParallelEnv(hub, turn_based="pad")
    base = pettingzoo.AECEnv if api == "aec" else pettingzoo.ParallelEnv
    assert isinstance(view, base) and view.unwrapped is view
    assert view.possible_agents == hub.possible_agents
    assert view.max_num_agents == len(hub.possible_agents)
    assert view.observation_spaces == {a: hub.get_observation_space(a) for a in view.possible_agents}
    assert view.action_spaces == {a: hub.get_action_space(a) for a in view.possible_agents}
    for agent in view.possible_agents:  # the same objects each time
        assert view.observation_spaces[agent] is view.observation_space(agent)
        assert view.action_spaces[agent] is view.action_space(agent)
    assert isinstance(view.metadata, dict) and view.metadata["name"]
    assert view.render_mode == getattr(hub, "render_mode", None)
    view.reset(seed=0)
    assert view.num_agents == len(view.agents) > 0
    if env_id != "rock_paper_scissors":  # a global state (MPE2's own, traffic's): space and value
        assert view.state_space == hub.state_space
        assert view.state() in view.state_space
    else:
        assert not hasattr(view, "state_space")
        with pytest.raises(NotImplementedError, match="has no state"):
            view.state()
