"""Gymnasium -> hub: make_multi_agent, from_gymnasium, the gymnasium/ family, lockstep comparison."""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

import marlhub
from marlhub import ALL
from marlhub.adapters import to_hub
from marlhub.adapters.gymnasium import (
    GymnasiumMultiEnv,
    compare_with_native,
    from_gymnasium,
    is_gymnasium_env,
    make_multi_agent,
    to_gymnasium,
)
from marlhub.adapters.gymnasium.family import GymnasiumFamily
from marlhub.conformance import check
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.envs import RockPaperScissors
from marlhub.errors import (
    ActionError,
    AgentIdError,
    ConfigError,
    EnvCreationError,
    ProtocolError,
    ResetNeededError,
    UnknownEnvError,
)
from marlhub.registry import EnvContext, Registry
from tests.versions import gymnasium_id


class StatelessCartPole(CartPoleEnv):
    """CartPole without the velocities, built from a config (as in RLlib's examples)."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.config = config
        high = np.array([self.x_threshold * 2, self.theta_threshold_radians * 2], np.float32)
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        obs, info = super().reset(seed=seed, options=options)
        return obs[[0, 2]], info

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs[[0, 2]], reward, terminated, truncated, info


def play(env: Any, seed: int, steps: int) -> list[Any]:
    """Step every live agent with action 1 and record what the env returns."""
    obs, _ = env.reset(seed=seed)
    trace: list[Any] = [obs]
    for _ in range(steps):
        result = env.step({a: 1 for a in env.agents})
        trace.append(result)
        if result[2][ALL] or result[3][ALL]:
            break
    return trace


# -- RLlib's documented examples, with marlhub's imports ------------------------------


def test_rllib_docs_make_multi_agent_by_gym_string() -> None:
    ma_cartpole_cls = make_multi_agent("CartPole-v1")
    ma_cartpole = ma_cartpole_cls({"num_agents": 2})
    obs, infos = ma_cartpole.reset()
    assert sorted(obs) == [0, 1] and sorted(infos) == [0, 1]
    assert ma_cartpole.possible_agents == [0, 1]
    assert isinstance(ma_cartpole, GymnasiumMultiEnv) and len(ma_cartpole.envs) == 2


def test_rllib_docs_make_multi_agent_by_creator_gets_config_without_num_agents() -> None:
    ma_stateless_cartpole_cls = make_multi_agent(lambda config: StatelessCartPole(config))
    user_config = {"num_agents": 3, "flavour": "plain"}
    ma_stateless_cartpole = ma_stateless_cartpole_cls(user_config)
    obs, _ = ma_stateless_cartpole.reset(seed=0)
    assert sorted(obs) == [0, 1, 2] and obs[0].shape == (2,)
    configs = [env.config for env in ma_stateless_cartpole.envs]
    assert all(isinstance(c, EnvContext) and dict(c) == {"flavour": "plain"} for c in configs)
    assert user_config == {"num_agents": 3, "flavour": "plain"}  # RLlib pops from it; we do not


def test_num_agents_defaults_to_one_and_keeps_worker_attributes() -> None:
    seen: list[EnvContext] = []

    def creator(config: EnvContext) -> gym.Env:
        seen.append(config)
        return gym.make("FrozenLake-v1")

    env = make_multi_agent(creator)(EnvContext({"num_agents": 2}, worker_index=3))
    assert len(env.envs) == 2 and [c.worker_index for c in seen] == [3, 3]
    assert make_multi_agent("FrozenLake-v1")().possible_agents == [0]


# -- seeding: copy i is seeded seed + i ---------------------------------------------------


def test_copies_play_different_episodes_under_one_seed() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 3})
    trace = play(env, seed=7, steps=5)
    first = trace[0]
    assert not np.array_equal(first[0], first[1]) and not np.array_equal(first[1], first[2])
    later = trace[-1][0]
    assert not np.array_equal(later[0], later[1])


def test_copy_i_is_the_native_env_seeded_seed_plus_i() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 3})
    obs, _ = env.reset(seed=10)
    for i in range(3):
        native_obs, _ = gym.make("CartPole-v1").reset(seed=10 + i)
        np.testing.assert_array_equal(obs[i], native_obs)


def test_same_seed_same_actions_same_episode() -> None:
    make = make_multi_agent("CartPole-v1")
    a, b = play(make({"num_agents": 2}), 3, 30), play(make({"num_agents": 2}), 3, 30)
    assert len(a) == len(b)
    for x, y in zip(a[1:], b[1:]):
        for i in (0, 1):
            if i in x[0]:
                np.testing.assert_array_equal(x[0][i], y[0][i])
        assert x[1:4] == y[1:4]


# -- config keys reach gymnasium.make -----------------------------------------------------


def test_config_keys_reach_gymnasium_make() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2, "max_episode_steps": 3})
    trace = play(env, seed=0, steps=10)
    assert len(trace) == 4
    _, rewards, terminateds, truncateds, _ = trace[-1]
    assert truncateds == {0: True, 1: True, ALL: True} and terminateds[ALL] is False
    lake = make_multi_agent("FrozenLake-v1")({"num_agents": 2, "is_slippery": False, "map_name": "8x8"})
    assert [e.spec.kwargs["map_name"] for e in lake.envs] == ["8x8", "8x8"]
    assert lake.get_observation_space(1) == gym.spaces.Discrete(64)


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"num_agents": 0}, "num_agents must be an integer >= 1, got 0"),
        ({"num_agents": "2"}, "num_agents must be an integer >= 1, got '2'"),
        ({"num_agents": True}, "got True"),
        ({"num_agents": 2, "bogus": 1}, r"gymnasium.make rejected the key 'bogus'. Accepted keys: .*'max_episode_steps'"),
        ([("num_agents", 2)], "config must be a dict"),
    ],
)
def test_bad_config_is_a_config_error(config: Any, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_multi_agent("CartPole-v1")(config)


def test_unknown_gym_id_suggests_close_ones() -> None:
    with pytest.raises(UnknownEnvError, match="'CartPol-v1'.*Did you mean 'CartPole-v1'"):
        make_multi_agent("CartPol-v1")({"num_agents": 2})


def test_make_multi_agent_refuses_non_creators_and_multi_agent_creations() -> None:
    with pytest.raises(TypeError, match="takes a Gymnasium env id or a creator"):
        make_multi_agent(42)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match="single-agent gymnasium.Env"):
        make_multi_agent(lambda config: RockPaperScissors())({"num_agents": 2})


# -- stepping ---------------------------------------------------------------------------


def test_agents_leave_when_their_copy_ends_and_all_comes_when_every_copy_is_done() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    env.reset(seed=0)
    # Pushing left forever topples copy by copy.
    gone: list[int] = []
    while True:
        obs, rewards, terminateds, truncateds, infos = env.step({a: 0 for a in env.agents})
        gone += [a for a in obs if terminateds[a]]
        assert set(obs) == set(rewards) == set(infos)  # every stepped copy reports, final obs included
        if terminateds[ALL]:
            break
        assert env.agents == [a for a in (0, 1) if a not in gone]
    assert sorted(gone) == [0, 1] and truncateds[ALL] is False and env.agents == []
    with pytest.raises(ResetNeededError, match="episode is over"):
        env.step({})


def test_step_errors_leave_every_copy_unchanged() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called"):
        env.step({0: 0, 1: 0})
    env.reset(seed=0)
    states = [np.array(e.unwrapped.state) for e in env.envs]
    bad = [
        ({0: 0}, "Add an action for 1"),
        ({0: 0, 1: 0, 2: 0}, "2 is not an agent of MultiEnv; its agents are \\[0, 1\\]"),
        ({0: 0, 1: 5}, r"Bad action for 1: got 5, expected an action in Discrete\(2\)"),
        ([0, 0], "expected a dict mapping each actor of \\[0, 1\\]"),
    ]
    for actions, match in bad:
        with pytest.raises(ActionError, match=match):
            env.step(actions)
    for env_i, state in zip(env.envs, states):
        np.testing.assert_array_equal(np.array(env_i.unwrapped.state), state)


def test_action_for_a_finished_copy_is_refused() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2, "max_episode_steps": 50})
    env.reset(seed=0)
    # Copy 0 pushes left and topples; copy 1 balances by alternating.
    t = 0
    while 0 in env.agents:
        _, _, terminateds, _, _ = env.step({0: 0, 1: t % 2})
        t += 1
    assert terminateds[0] and not terminateds[ALL]
    with pytest.raises(ActionError, match="0: its env already terminated or truncated"):
        env.step({0: 0, 1: 0})


# -- conformance -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    [
        "gymnasium/CartPole-v1",
        "gymnasium/FrozenLake-v1",
        "gymnasium/" + gymnasium_id("Taxi"),
        "gymnasium/Blackjack-v1",
    ],
)
def test_registry_ids_conform(target: str) -> None:
    report = check(target, episodes=4, strict=True)
    assert report.ok, str(report)


@pytest.mark.parametrize(
    "target",
    [
        lambda: make_multi_agent("CartPole-v1")({"num_agents": 3}),
        lambda: make_multi_agent("FrozenLake-v1")({"num_agents": 2, "map_name": "8x8"}),
        lambda: make_multi_agent(StatelessCartPole)({"num_agents": 2}),
        lambda: from_gymnasium(gym.make("MountainCar-v0", max_episode_steps=60), "car"),
        lambda: gym.make(gymnasium_id("CliffWalking"), max_episode_steps=40),  # to_hub adapts it
    ],
)
def test_adapted_envs_conform(target: Any) -> None:
    report = check(target, episodes=4, strict=True, max_steps=600)
    assert report.ok, str(report)


# -- from_gymnasium and round trips ------------------------------------------------------


def test_from_gymnasium_wraps_one_env_as_one_agent() -> None:
    native = gym.make("FrozenLake-v1", is_slippery=False)
    hub = from_gymnasium(native, agent_id="walker")
    assert hub.possible_agents == ["walker"] and hub.envs[0] is native
    assert hub.reset(seed=0) == ({"walker": 0}, {"walker": {"prob": 1}})
    obs, rewards, terminateds, truncateds, _ = hub.step({"walker": 2})
    assert obs == {"walker": 1} and rewards == {"walker": 0.0}
    assert terminateds == {"walker": False, ALL: False}


def test_from_gymnasium_refuses_what_is_no_gymnasium_env() -> None:
    with pytest.raises(ProtocolError, match="gymnasium.Env"):
        from_gymnasium(object())
    with pytest.raises(AgentIdError, match="'__all__' is reserved"):
        from_gymnasium(gym.make("CartPole-v1"), agent_id=ALL)
    hub = RockPaperScissors()
    assert from_gymnasium(hub) is hub


def test_round_trips_unwrap() -> None:
    native = gym.make("CartPole-v1")
    assert to_gymnasium(from_gymnasium(native)) is native
    assert to_gymnasium(native) is native
    single = make_multi_agent("Acrobot-v1")({"num_agents": 1})
    assert to_gymnasium(single) is single.envs[0]
    rps = RockPaperScissors()
    assert from_gymnasium(to_gymnasium(rps, joint=True)) is rps
    one_agent = from_gymnasium(gym.make("FrozenLake-v1"), "walker")
    view = to_gymnasium(one_agent, others=lambda obs, agent: 0)
    assert from_gymnasium(view) is one_agent
    # One agent's view of a several-agent env keeps its policies: wrapped, not unwrapped.
    wrapped = from_gymnasium(to_gymnasium(rps, "player1"))
    assert wrapped is not rps and wrapped.possible_agents == ["agent_0"]


def test_detection_and_to_hub() -> None:
    native = gym.make(gymnasium_id("Taxi"))
    assert is_gymnasium_env(native) and not is_gymnasium_env(RockPaperScissors())
    assert not is_gymnasium_env(CartPoleEnv)  # a class is no env
    hub = to_hub(native)
    assert isinstance(hub, GymnasiumMultiEnv) and hub.envs[0] is native
    assert hub.possible_agents == ["agent_0"]


# -- the registry family -------------------------------------------------------------------


def test_family_lists_gymnasiums_registry_but_the_ids_that_only_say_they_moved() -> None:
    ids = dict(GymnasiumFamily().ids())
    moved = [i for i, spec in gym.registry.items()
             if getattr(spec.entry_point, "__name__", "") in ("_raise_mujoco_py_error",
                                                             "_raise_shimmy_error")]
    if "Ant-v2" not in moved:
        pytest.skip("Gymnasium before 1.2 registers no MuJoCo v2/v3 or Shimmy ids that only "
                    "say they moved")
    assert "Ant-v5" in gym.registry
    assert len(ids) == len(gym.registry) - len(moved)
    assert "gymnasium/Ant-v2" not in ids and "gymnasium/Ant-v5" in ids
    assert ids["gymnasium/FrozenLake-v1"].startswith("FrozenLakeEnv (gymnasium.envs.toy_text")
    # Made anyway, one says where it went, and that no config is at fault.
    with pytest.warns(DeprecationWarning), pytest.raises(
            EnvCreationError, match=r"moved to the gymnasium-robotics project.*A package the env "
                                    r"needs is missing or moved"):
        marlhub.make("gymnasium/Ant-v2")


def test_family_makes_envs_through_a_registry() -> None:
    registry = Registry()
    registry.register_family(GymnasiumFamily())
    env = registry.make("gymnasium/CartPole-v1", {"num_agents": 2, "max_episode_steps": 5})
    assert env.possible_agents == [0, 1] and env.envs[0].spec.max_episode_steps == 5
    assert "gymnasium/CartPole-v1" in registry.registered("gymnasium/Cart*")
    with pytest.raises(UnknownEnvError, match="Did you mean 'gymnasium/CartPole-v1'"):
        registry.make("gymnasium/CartPole-v9")
    with pytest.raises(ConfigError, match="gymnasium.make rejected the key 'slipery'.*'is_slippery'"):
        registry.make("gymnasium/FrozenLake-v1", {"slipery": True})


def test_family_lockstep_and_against_native() -> None:
    family = GymnasiumFamily()
    assert family.lockstep("CartPole-v1", EnvContext({"num_agents": 2}), episodes=2, seed=0,
                           max_steps=200) == []
    report = check("gymnasium/FrozenLake-v1", episodes=2, against_native=True)
    assert report.ok and not report.findings, str(report)


class _Unseeded(gym.Env):
    """Ignores the seed: each new instance counts its resets from a shared counter."""

    resets = 0
    observation_space = gym.spaces.Discrete(1000)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        type(self).resets += 1
        return type(self).resets, {}

    def step(self, action: Any) -> Any:
        return 0, 1.0, True, False, {}


def test_compare_with_native_reports_differences() -> None:
    findings = compare_with_native(lambda config: _Unseeded(), {"num_agents": 2}, episodes=2)
    assert findings and all(f.rule == EQUIV_TRAJECTORY for f in findings)
    assert "observations differ" in findings[0].message and findings[0].reproducer.seed == 0
