"""JumanjiHubEnv: Jumanji's own functions and keys, spaces from the specs, ends, waits, copies.

Every test of an env uses one config of it (``CLEANER``, ``LBF``), so the registry makes
one Jumanji env of each and JAX compiles its functions once.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium as gym
import numpy as np
import pytest

jumanji = pytest.importorskip("jumanji")
jax = pytest.importorskip("jax")

import marlhub  # noqa: E402
from marlhub.adapters.jumanji import from_jumanji, is_jumanji_env  # noqa: E402
from marlhub.adapters.jumanji.lockstep import compare_with_native  # noqa: E402
from marlhub.contract.compare import why_different  # noqa: E402
from marlhub.errors import ActionError, ConfigError, ResetNeededError  # noqa: E402

CLEANER = {"time_limit": 4}
LBF = {"time_limit": 3}


def _legal(obs: dict, rng: np.random.Generator) -> dict:
    return {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}


def test_an_episode_replays_with_jumanji_alone() -> None:
    hub = marlhub.make("jumanji/Cleaner-v0", CLEANER)
    env = hub.jumanji_env
    assert is_jumanji_env(env) and not is_jumanji_env(hub)
    obs, infos = hub.reset(seed=7)
    key = jax.random.PRNGKey(7)  # the documented discipline, with Jumanji alone
    key, k = jax.random.split(key)
    state, timestep = jax.jit(env.reset)(k)
    rng = np.random.default_rng(0)
    for _ in range(4):
        native = jax.device_get(timestep.observation)
        for i, agent in enumerate(hub.possible_agents):
            assert (obs[agent]["action_mask"] == native.action_mask[i]).all()
            assert (infos[agent]["action_mask"] == native.action_mask[i]).all()
            assert (obs[agent]["grid"] == native.grid).all()  # the team's, whole
        actions = _legal(obs, rng)
        state, timestep = jax.jit(env.step)(state, np.array(list(actions.values()), np.int32))
        obs, rewards, terminateds, truncateds, infos = hub.step(actions)
        assert rewards == dict.fromkeys(hub.possible_agents, float(timestep.reward))  # a team's
    assert timestep.last() and float(timestep.discount) == 0.0  # Cleaner's limit: discount 0
    assert terminateds == {**dict.fromkeys(hub.possible_agents, True), "__all__": True}
    assert sorted(infos["__common__"]) == sorted(timestep.extras)
    with pytest.raises(ResetNeededError):
        hub.step(actions)


def test_spaces_and_masks_come_from_the_specs() -> None:
    hub = marlhub.make("jumanji/Cleaner-v0", CLEANER)
    space = hub.get_observation_space("agent_0")
    assert sorted(space.spaces) == ["action_mask", "agents_locations", "grid", "step_count"]
    assert space["action_mask"].shape == (4,) and space["action_mask"].dtype == np.int8
    assert space["step_count"].high == 4  # the spec's bounds
    assert hub.get_action_space("agent_2") == gym.spaces.Discrete(4)
    rescue = from_jumanji(jumanji.make("SearchAndRescue-v0"))  # continuous, no masks
    box = rescue.get_action_space("agent_1")
    assert box.shape == (2,) and box.low.min() == -1.0 and box.high.max() == 1.0
    assert "action_mask" not in rescue.get_observation_space("agent_0").spaces
    with pytest.raises(ConfigError, match="reports no num_agents .a single-agent env."):
        from_jumanji(jumanji.make("Snake-v1"))
    obs, _ = hub.reset(seed=0)
    illegal = int(np.flatnonzero(obs["agent_0"]["action_mask"] == 0)[0])
    legal = _legal(obs, np.random.default_rng(0))
    with pytest.raises(ActionError, match="masked out"):
        hub.step({**legal, "agent_0": illegal})
    with pytest.raises(ActionError, match="agent_2"):
        hub.step({"agent_0": legal["agent_0"], "agent_1": legal["agent_1"]})
    assert hub.step(legal)[0].keys() == legal.keys()  # nothing moved before


def test_per_agent_rewards_discounts_and_a_truncating_time_limit() -> None:
    hub = marlhub.make("jumanji/LevelBasedForaging-v0", LBF)
    obs, infos = hub.reset(seed=1)
    assert infos["agent_0"]["discount"] == 1.0  # one discount per agent, from the reset on
    rng = np.random.default_rng(1)
    for _ in range(3):
        obs, rewards, terminateds, truncateds, infos = hub.step(_legal(obs, rng))
    # LBF ends at its time limit with Jumanji's truncation: discount 1, so truncated
    assert truncateds["__all__"] and not terminateds["__all__"]
    assert [infos[a]["discount"] for a in hub.possible_agents] == [1.0, 1.0]
    assert set(rewards) == {"agent_0", "agent_1"} and "action_mask" not in infos["agent_0"]


@pytest.mark.parametrize(("name", "config"), [("Cleaner-v0", CLEANER),
                                              ("LevelBasedForaging-v0", LBF)])
def test_lockstep_with_jumanjis_own_reset_and_step(name: str, config: dict) -> None:
    hub = marlhub.make(f"jumanji/{name}", config)
    assert compare_with_native(hub, lambda: hub.jumanji_env, episodes=3) == []


def test_an_agent_without_a_legal_action_waits_and_is_still_paid() -> None:
    generator = jumanji.environments.routing.mmst.generator.SplitRandomGenerator(
        num_nodes=8, num_edges=10, max_degree=4, num_agents=2, num_nodes_per_agent=2,
        max_step=12)
    hub = marlhub.make("jumanji/MMST-v0", {"time_limit": 12, "generator": generator})
    rng = np.random.default_rng(0)
    for seed in range(20):  # MMST's agents finish at random: until one waits
        obs, _ = hub.reset(seed=seed)
        done = False
        while not done:
            obs, rewards, terminateds, truncateds, _ = hub.step(_legal(obs, rng))
            done = terminateds["__all__"] or truncateds["__all__"]
            if not done and len(obs) == 1:
                (waiting,) = set(hub.possible_agents) - set(obs)
                assert waiting in rewards and waiting in hub.agents  # paid, not done
                assert compare_with_native(hub, lambda: hub.jumanji_env, episodes=1,
                                           seed=seed) == []
                return
    pytest.fail("no MMST agent finished early in 20 episodes")


def test_copies_and_pickles_play_on_as_the_original() -> None:
    env = marlhub.make("jumanji/Cleaner-v0", CLEANER)
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(3)
    obs, *_ = env.step(_legal(obs, rng))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    assert twins[1].jumanji_env is env.jumanji_env  # made again by name: compiled once
    for _ in range(3):
        actions = _legal(obs, rng)
        want = env.step(actions)
        for twin in twins:
            assert why_different(twin.step(actions), want) is None
        obs = want[0]
