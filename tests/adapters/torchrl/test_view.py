"""Hub -> TorchRL: TorchRL's own checker, rollouts, batched envs, masks, rewards and seeds."""

from __future__ import annotations

import functools
import pickle
from collections import defaultdict
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("torchrl")

import torch  # noqa: E402
import torchrl._utils  # noqa: E402
from torchrl.envs import EnvBase, ParallelEnv, SerialEnv  # noqa: E402
from torchrl.envs.utils import MarlGroupMapType, check_env_specs  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.torchrl import to_torchrl  # noqa: E402
from marlhub.core import ALL, MultiAgentEnv  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic  # noqa: E402
from marlhub.errors import ActionError, ConfigError  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning"),
    # TorchRL's check_env_specs logs its verdict; PettingZoo's pistonball warns about pygame.
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

ALL_IN_ONE = MarlGroupMapType.ALL_IN_ONE_GROUP
PER_AGENT = MarlGroupMapType.ONE_GROUP_PER_AGENT
PISTONBALL = ("pettingzoo/butterfly/pistonball-v6",
              {"api": "parallel", "n_pistons": 4, "max_cycles": 20})

#: (id, config, group maps the spaces allow): every reference env and one of each family.
CHECKED: list[tuple[str, Optional[dict[str, Any]], tuple[Any, ...]]] = [
    ("rock_paper_scissors", None, (None, ALL_IN_ONE, PER_AGENT)),
    ("tic_tac_toe", None, (None, ALL_IN_ONE, PER_AGENT)),
    ("traffic", None, (None, PER_AGENT)),  # cars and the light observe different kinds
    ("openspiel/kuhn_poker", None, (None, ALL_IN_ONE, PER_AGENT)),
    ("openspiel/kuhn_poker", {"action_mask": "info"}, (None, PER_AGENT)),
    ("openspiel/tic_tac_toe", None, (None, ALL_IN_ONE, PER_AGENT)),
    ("openspiel/leduc_poker", None, (None, ALL_IN_ONE, PER_AGENT)),
    ("pettingzoo/classic/tictactoe-v3", None, (None, ALL_IN_ONE, PER_AGENT)),
    (*PISTONBALL, (ALL_IN_ONE, PER_AGENT)),
    ("gymnasium/CartPole-v1", {"num_agents": 2}, (None, PER_AGENT)),
]
CASES = [pytest.param(env_id, config, group_map, id=f"{env_id}{config or ''}-{group_map}")
         for env_id, config, maps in CHECKED for group_map in maps]


def _backend_or_skip(env_id: str) -> None:
    backend = {"pettingzoo": "pettingzoo", "openspiel": "pyspiel"}.get(env_id.split("/")[0])
    if backend:
        pytest.importorskip(backend)


def _make(env_id: str, config: Optional[dict[str, Any]], **options: Any) -> Any:
    _backend_or_skip(env_id)
    return to_torchrl(marlhub.make(env_id, config), **options)


@pytest.mark.parametrize(("env_id", "config", "group_map"), CASES)
def test_check_env_specs_passes(env_id: str, config: Any, group_map: Any) -> None:
    env = _make(env_id, config, group_map=group_map)
    assert isinstance(env, EnvBase)
    check_env_specs(env, seed=0, break_when_any_done="both")


def test_default_group_maps() -> None:
    assert to_torchrl(TicTacToe()).group_map == {"agents": ["player1", "player2"]}
    assert to_torchrl(Traffic({"num_cars": 2})).group_map == {
        "car": ["car_0", "car_1"], "light": ["light"]}
    env = to_torchrl(marlhub.make("gymnasium/CartPole-v1", {"num_agents": 2}), group_map=PER_AGENT)
    assert env.group_map == {"0": [0], "1": [1]}  # agent ids need not be strings
    check_env_specs(env, seed=0)


def _replay(hub: MultiAgentEnv, env: Any, td: Any, seed: int) -> dict[Any, float]:
    """Play the rollout's actions (of the agents whose mask was True) on ``hub``; sum rewards."""
    paid: dict[Any, float] = defaultdict(float)
    obs, _ = hub.reset(seed=seed)
    for t in range(td.shape[0]):
        actions = {}
        for group, members in env.group_map.items():
            for i, agent in enumerate(members):
                if td[group, "mask"][t][i]:
                    value = td[group, "action"][t][i].numpy()
                    space = hub.get_action_space(agent)
                    actions[agent] = (np.int64(value) if isinstance(space, gym.spaces.Discrete)
                                      else value.astype(space.dtype))
        assert sorted(map(str, actions)) == sorted(map(str, obs))
        obs, rewards, terminateds, truncateds, _ = hub.step(actions)
        for agent, reward in rewards.items():
            paid[agent] += float(reward)
        done = {a for a in obs if terminateds.get(a) or truncateds.get(a)}
        obs = {a: o for a, o in obs.items() if a not in done}
        assert bool(td["next", "done"][t]) == (terminateds[ALL] or truncateds[ALL])
        if terminateds[ALL] or truncateds[ALL]:
            obs, _ = hub.reset()  # TorchRL's auto-reset passes no seed either
    return paid


def _seen(env: Any, td: Any) -> dict[Any, float]:
    return {agent: float(td["next", group, "reward"][:, i].sum())
            for group, members in env.group_map.items() for i, agent in enumerate(members)}


REPLAYED = [("rock_paper_scissors", None), ("tic_tac_toe", None),
            ("traffic", {"num_cars": 3, "max_steps": 30}), ("openspiel/kuhn_poker", None),
            ("openspiel/leduc_poker", None), ("pettingzoo/classic/tictactoe-v3", None),
            PISTONBALL, ("gymnasium/CartPole-v1", {"num_agents": 2})]


@pytest.mark.parametrize(("env_id", "config"), REPLAYED, ids=[r[0] for r in REPLAYED])
@pytest.mark.parametrize("break_when_any_done", [True, False])
def test_rollout_rewards_are_what_the_hub_pays(env_id: str, config: Any,
                                               break_when_any_done: bool) -> None:
    for seed in range(2):
        env = _make(env_id, config, illegal_action="raise")
        env.set_seed(seed)
        torch.manual_seed(seed)
        td = env.rollout(40, break_when_any_done=break_when_any_done)
        paid = _replay(marlhub.make(env_id, config), env, td, seed)
        seen = _seen(env, td)
        assert set(paid) <= set(seen)
        for agent, total in seen.items():
            assert np.isclose(total, paid.get(agent, 0.0), atol=1e-4), (seed, agent, seen, paid)


def test_turn_based_envs_mask_who_acts() -> None:
    env = to_torchrl(TicTacToe(), group_map=PER_AGENT)
    td = env.rollout(200, break_when_any_done=True)
    assert td["next", "done"][-1].item()
    masks = torch.cat([td[g, "mask"].reshape(len(td), -1) for g in env.group_map], 1)
    assert masks.sum(1).tolist() == [1] * len(td)  # one mover a step
    final = td["next"][-1]
    assert not any(final[g, "mask"].any() for g in env.group_map)  # nobody acts after the end
    assert all(final[g, "done"].all() for g in env.group_map)


def test_agents_come_and_go() -> None:
    hub = Traffic({"num_cars": 3, "max_steps": 60})
    env = to_torchrl(hub)
    td = env.reset(seed=1)
    assert td["car", "mask"].tolist() == [True, False, False]  # car_1, car_2 not there yet
    assert td["car", "observation"][1:].eq(0).all()  # zeros until their first observation
    td = env.rollout(60, break_when_any_done=True, auto_reset=False, tensordict=td)
    done = td["next", "car", "done"].squeeze(-1)
    left = [i for i in range(3) if done[:-1, i].any()]
    assert left, "no car left early in this seeded episode"
    for i in left:  # a car that left stays done, never acts again, and keeps its final obs
        first = int(done[:, i].int().argmax())
        assert done[first:, i].all() and not td["next", "car", "mask"][first:, i].any()
        final = td["next", "car", "observation"][first, i]
        assert final[0] == hub.road_length
        assert (td["next", "car", "observation"][first:, i] == final).all()


def test_idle_agents_are_paid_too() -> None:
    env = to_torchrl(Traffic({"num_cars": 3, "max_steps": 30}))
    env.set_seed(0)
    td = env.rollout(30, break_when_any_done=True)
    idle = ~td["car", "mask"] & (td["next", "car", "reward"].squeeze(-1) != 0)
    assert idle.any()  # waiting cars pay -0.1 in steps where only the light acts


def test_masks_reach_the_tensordict_and_the_spec() -> None:
    env = _make("openspiel/tic_tac_toe", None, group_map=PER_AGENT, illegal_action="raise")
    td = env.reset(seed=0)
    (acting,) = [g for g in env.group_map if td[g, "mask"].any()]
    assert td[acting, "action_mask"].sum().item() == 9
    td[acting, "action"] = torch.tensor([4])
    td = env.step(td)["next"]
    (acting,) = [g for g in env.group_map if td[g, "mask"].any()]
    legal = td[acting, "action_mask"].reshape(-1)
    assert legal.sum() == 8 and not legal[4]
    spec = env.full_action_spec[acting, "action"]
    assert all(legal[int(spec.rand()[0])] for _ in range(50))  # the spec samples legal moves
    # {"observation": x, "action_mask": m} observations: x is the observation, m the action_mask.
    assert env.full_observation_spec[acting, "observation"].shape == (1, 27)


@pytest.mark.parametrize("env_id", ["openspiel/kuhn_poker", "openspiel/tic_tac_toe",
                                    "pettingzoo/classic/tictactoe-v3"])
def test_random_rollouts_play_only_legal_actions(env_id: str) -> None:
    # TorchRL's PettingZooWrapper samples in the final state, where nothing is legal, and
    # fails; here rows of agents that do not act are all True, and masks bind the spec.
    for group_map, categorical in ((None, True), (PER_AGENT, True), (None, False)):
        env = _make(env_id, None, group_map=group_map, illegal_action="raise",
                    categorical_actions=categorical)
        env.set_seed(3)
        env.rollout(200, break_when_any_done=False)  # ActionError on any illegal move
        check_env_specs(env, seed=3)


def test_illegal_actions_terminate_by_default() -> None:
    env = _make("openspiel/tic_tac_toe", None, group_map=PER_AGENT)
    td = env.reset(seed=0)
    td["player_0", "action"] = torch.tensor([4])
    td = env.step(td)
    td = env.step_mdp(td)
    td["player_1", "action"] = torch.tensor([4])  # taken
    nxt = env.step(td)["next"]
    assert nxt["done"].item() and nxt["terminated"].item()
    assert nxt["player_1", "reward"].item() == -1.0 and nxt["player_0", "reward"].item() == 0.0
    raising = _make("openspiel/tic_tac_toe", None, group_map=PER_AGENT, illegal_action="raise")
    td = raising.reset(seed=0)
    td["player_0", "action"] = torch.tensor([4])
    td = raising.step_mdp(raising.step(td))
    td["player_1", "action"] = torch.tensor([4])
    with pytest.raises(ActionError, match="masked out"):
        raising.step(td)


def test_seeds_reach_the_hub_env() -> None:
    env = to_torchrl(Traffic())
    hub = Traffic()
    for seed in range(4):
        obs, _ = hub.reset(seed=seed)
        td = env.reset(seed=seed)
        assert np.array_equal(td["light", "observation"][0].numpy(), obs["light"])
        env.set_seed(seed)
        assert np.array_equal(env.reset()["light", "observation"][0].numpy(), obs["light"])
    env.set_seed(5)
    torch.manual_seed(0)
    one = env.rollout(30, break_when_any_done=False)
    env.set_seed(5)
    torch.manual_seed(0)
    two = env.rollout(30, break_when_any_done=False)
    assert (one == two).all()


def test_one_hot_actions_and_observations() -> None:
    env = to_torchrl(RockPaperScissors(), categorical_actions=False)
    assert type(env.full_action_spec["agents", "action"]).__name__ == "OneHot"
    check_env_specs(env, seed=0)
    td = env.rollout(10)
    assert td["agents", "action"].shape == (10, 2, 3)
    assert (td["agents", "action"].sum(-1) == 1).all()


class Unlike(MultiAgentEnv):
    """Two agents whose observations differ in shape and bounds: one lazily stacked group."""

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = self.agents = ["a", "b"]
        self.observation_spaces = {
            agent: gym.spaces.Dict({
                "pos": gym.spaces.Box(0, size, (size,), np.float32),
                "flags": gym.spaces.MultiBinary(3),
                "t": gym.spaces.Discrete(4, start=1),
                "pair": gym.spaces.Tuple((gym.spaces.Discrete(2),
                                          gym.spaces.Box(-1, 1, (), np.float32))),
            }) for agent, size in (("a", 2), ("b", 5))}
        self.action_spaces = {a: gym.spaces.Discrete(3, start=-1) for a in self.possible_agents}

    def _obs(self, agent: str) -> dict[str, Any]:
        size = self.observation_spaces[agent]["pos"].shape[0]
        return {"pos": np.full(size, self.t % 2, np.float32), "flags": np.array([1, 0, 1], np.int8),
                "t": 1 + self.t % 4, "pair": (self.t % 2, np.float32(-0.5))}

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return {a: self._obs(a) for a in self.possible_agents}, {}

    def step(self, action_dict: Any) -> Any:
        for agent, action in action_dict.items():
            assert self.action_spaces[agent].contains(action)
        self.t += 1
        obs = {a: self._obs(a) for a in self.possible_agents}
        return obs, {a: float(action_dict[a]) for a in action_dict}, {ALL: self.t >= 5}, \
            {ALL: False}, {}


@pytest.mark.parametrize("categorical", [True, False])
def test_unlike_agents_share_a_lazily_stacked_group(categorical: bool) -> None:
    env = to_torchrl(Unlike(), group_map=ALL_IN_ONE, categorical_actions=categorical)
    check_env_specs(env, seed=0, break_when_any_done="both")
    td = env.reset(seed=0)
    agents = td["agents"]
    assert agents[0]["observation", "pos"].shape == (2,)
    assert agents[1]["observation", "pos"].shape == (5,)
    t = agents[1]["observation", "t"]  # Discrete(4, start=1): 1 is index 0
    assert (t.item() if categorical else int(t.argmax())) == 0
    td = env.rollout(5)
    assert set(td["next", "agents", "reward"].reshape(-1).tolist()) <= {-1.0, 0.0, 1.0}


def test_groups_of_unlike_kinds_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"group 'agents' cannot be stacked.*'light': "
                                          r"observation BoundedContinuous"):
        to_torchrl(Traffic(), group_map=ALL_IN_ONE)


def test_text_observations_are_refused() -> None:
    pytest.importorskip("pyspiel")
    with pytest.raises(ConfigError, match=r"the observation space of agent 'player_0' at "
                                          r"\['observation'\] is OpenSpielText"):
        to_torchrl(marlhub.make("openspiel/kuhn_poker", {"observation": "string"}))


def test_runs_in_serial_env() -> None:
    make = functools.partial(marlhub.make, "tic_tac_toe", to="torchrl")
    env = SerialEnv(2, make)
    try:
        check_env_specs(env, seed=0)
        td = env.rollout(12, break_when_any_done=False)
        assert td.shape == (2, 12)
    finally:
        env.close()


def test_runs_in_parallel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Workers are spawned (TorchRL's default), so the factory must pickle: registry ids do.
    monkeypatch.setattr(torchrl._utils, "BATCHED_PIPE_TIMEOUT", 120.0)
    make = functools.partial(marlhub.make, "rock_paper_scissors", to="torchrl")
    assert pickle.loads(pickle.dumps(make)).func is marlhub.make
    try:
        env = ParallelEnv(2, make, shutdown_timeout=5.0)
    except TypeError:  # TorchRL before 0.14 has no shutdown_timeout
        env = ParallelEnv(2, make)
    try:
        check_env_specs(env, seed=0)
        td = env.rollout(12, break_when_any_done=False)
        assert td.shape == (2, 12)
        assert td["next", "done"].sum().item() == 2  # one 10-round game each
    finally:
        env.close()


def test_the_view_pickles() -> None:
    env = to_torchrl(Traffic({"num_cars": 2}))
    env.reset(seed=0)
    copy = pickle.loads(pickle.dumps(env))
    assert type(copy) is type(env) and copy.group_map == env.group_map
    check_env_specs(copy, seed=0)


def test_the_global_state_sits_at_the_root_as_torchrl_puts_it() -> None:
    hub = Traffic({"num_cars": 2})
    env = to_torchrl(hub)
    assert env.full_observation_spec["state"].shape == hub.state_space.shape
    check_env_specs(env, seed=0)
    td = env.reset(seed=1)
    np.testing.assert_array_equal(td["state"].numpy(), hub.state())
    for _ in range(4):
        td = env.step(env.rand_action(td))
        np.testing.assert_array_equal(td["next", "state"].numpy(), hub.state())
        td = td["next"]
    assert "state" not in to_torchrl(RockPaperScissors()).full_observation_spec.keys()
