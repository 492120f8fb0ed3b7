"""``to_sb3``: SB3's ``VecEnv`` of agent slots, against a plain replay of ``marlhub.make(id)``.

The expected slots come from :class:`tests.learners.replay.SlotReplay` (plain envs, none
of the bridges' code). Then SB3's own ``VecMonitor``
reports the hub's per-agent returns, and SB3 / sb3-contrib learners train on a
simultaneous env, a turn-based game with masks, and traffic (a mixed team whose cars
leave and join).
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.errors import ActionError, MissingDependencyError, VectorEnvError
from tests.learners.replay import SlotReplay, check_slots

pytest.importorskip("stable_baselines3")
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize  # noqa: E402

from marlhub.learners import to_sb3  # noqa: E402


def replay_against(venv: Any, env_id: str, num_envs: int, one_space: bool, steps: int,
                   seed: int = 3, config: Optional[dict[str, Any]] = None,
                   others: Optional[dict[Any, Any]] = None) -> SlotReplay:
    replay = SlotReplay(env_id, num_envs, venv.agents, one_space, seed, config, others=others)
    venv.seed(seed)
    obs = venv.reset()
    replay.reset()
    check_slots(replay, obs, None, None, venv.reset_infos)
    for _ in range(steps):
        if replay.junk:
            np.testing.assert_array_equal(venv.action_masks(), replay.masks(venv.action_space.n))
        actions = replay.slot_actions()
        replay.step(actions)
        obs, rewards, dones, infos = venv.step(actions)
        check_slots(replay, obs, rewards, dones, infos)
    return replay


@pytest.mark.parametrize("env_id, one_space, mode", [
    ("traffic", True, "sync"),  # a mixed team whose cars leave and join
    ("traffic", True, "async"),
    ("openspiel/tic_tac_toe", False, "sync"),  # turn-based, masks
    ("rock_paper_scissors", False, "sync"),  # simultaneous
])
def test_every_slot_shows_what_a_plain_replay_gives(env_id: str, one_space: bool,
                                                    mode: str) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    options = {"vectorization_mode": "async", "num_workers": 2} if mode == "async" else {}
    venv = to_sb3(env_id, 3, one_space=one_space, **options)
    try:
        assert isinstance(venv, VecEnv)
        replay = replay_against(venv, env_id, 3, one_space, steps=120)
        assert replay.episodes  # episodes ended, and agents left before them (traffic)
    finally:
        venv.close()


def test_the_monitor_reports_the_hubs_returns_once_per_agent_episode() -> None:
    venv = VecMonitor(to_sb3("traffic", 2, one_space=True))
    replay = SlotReplay("traffic", 2, venv.venv.agents, True, seed=5)  # type: ignore[attr-defined]
    venv.seed(5)
    venv.reset()
    replay.reset()
    seen: list[tuple[int, float]] = []
    for _ in range(200):
        actions = replay.slot_actions()
        replay.step(actions)
        _, _, _, infos = venv.step(actions)
        seen += [(k, info["episode"]["r"]) for k, info in enumerate(infos) if "episode" in info]
    venv.close()
    assert len(seen) == len(replay.episodes) > 10
    for (k, r), (k_hub, r_hub) in zip(sorted(seen), sorted(replay.episodes)):
        assert k == k_hub and r == pytest.approx(r_hub, abs=1e-5)


def _parameters(model: Any) -> list[Any]:
    return [p.detach().clone() for p in model.policy.parameters()]


@pytest.mark.parametrize("env_id, one_space, maskable", [
    ("rock_paper_scissors", False, False),
    ("rock_paper_scissors", False, True),  # MaskablePPO on a simultaneous env
    ("openspiel/tic_tac_toe", False, True),
    ("openspiel/tic_tac_toe", False, False),  # PPO ignores masks: illegal moves terminate
    ("traffic", True, True),
    ("traffic", True, False),  # PPO: the light's padded action plays its first
])
def test_sb3_learners_train_and_their_monitor_sees_the_hubs_returns(env_id: str, one_space: bool,
                                                                    maskable: bool) -> None:
    pytest.importorskip("torch")
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    if maskable:
        contrib = pytest.importorskip("sb3_contrib")
        algorithm = contrib.MaskablePPO
    else:
        from stable_baselines3 import PPO as algorithm
    options = {} if maskable or not env_id.startswith("openspiel") else \
        {"illegal_action": "terminate"}
    venv = VecMonitor(to_sb3(env_id, 2, one_space=one_space, **options))
    model = algorithm("MlpPolicy", venv, n_steps=32, batch_size=64, n_epochs=2, seed=0,
                      policy_kwargs={"net_arch": [16]}, device="cpu")
    before = _parameters(model)
    model.learn(total_timesteps=3 * 32 * venv.num_envs)
    assert any((a != b).any() for a, b in zip(before, _parameters(model)))
    assert len(model.ep_info_buffer) > 0
    venv.close()


def test_vec_normalize_and_the_vec_env_calls() -> None:
    venv = to_sb3("traffic", 2, one_space=True)
    normalized = VecNormalize(venv)
    obs = normalized.reset()
    assert obs.shape == (10, 17)
    assert normalized.env_method("action_masks")[4].tolist() == [True, True, False]  # the light
    assert venv.get_attr("possible_agents")[5] == venv.vector_env.possible_agents
    assert venv.has_attr("action_masks")
    assert venv.env_is_wrapped(gym.Wrapper) == [False] * 10
    assert venv.seed(7)[:6] == [7, 7, 7, 7, 7, 8]
    venv.set_attr("marker", 3)
    assert venv.get_attr("marker", indices=[9]) == [3]
    with pytest.raises(VectorEnvError, match="some of a copy's slots but not all"):
        venv.set_attr("marker", 1, indices=[0])
    frames = venv.env_method("render")  # each copy's, once per slot
    assert frames[:5] == [frames[0]] * 5 and "crossed" in frames[0]
    normalized.close()


def test_bad_inputs_are_refused_with_what_to_do() -> None:
    with pytest.raises(VectorEnvError, match="one_space=True to pad"):
        to_sb3("traffic", 2)
    venv_env = marlhub.make_vec("rock_paper_scissors", 2)  # next_step
    with pytest.raises(VectorEnvError, match="autoreset_mode='same_step'"):
        to_sb3(venv_env)
    venv_env.close()
    venv = to_sb3("rock_paper_scissors", 2)
    with pytest.raises(VectorEnvError, match="before reset"):
        venv.step(np.zeros(4, np.int64))
    venv.reset()
    with pytest.raises(VectorEnvError, match=r"actions of shape \(3,\)"):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(ActionError, match="copy 1"):
        venv.step(np.array([0, 1, 7, 0]))
    obs, *_ = venv.step(np.zeros(4, np.int64))  # nothing moved: the env goes on
    assert obs.shape == (4,)
    venv.close()
    with pytest.raises(VectorEnvError, match="a vector env and options"):
        to_sb3(marlhub.make_vec("rock_paper_scissors", 1, autoreset_mode="same_step"), 2)


def test_a_batched_simulator_trains_with_box_actions_and_truncates_at_its_step_limit() -> None:
    pytest.importorskip("vmas")
    pytest.importorskip("torch")
    from stable_baselines3 import PPO

    venv = to_sb3("vmas/balance", 4, {"max_steps": 20})  # ONE VMAS env of 4 copies x 3 agents
    assert venv.num_envs == 12 and venv.action_space.shape == (2,)
    venv.seed(0)
    venv.reset()
    for t in range(1, 21):
        _, _, dones, infos = venv.step(np.stack([venv.action_space.sample()] * 12))
        assert dones.all() == (t == 20)  # every slot ends at the step limit, none before
    assert all(info["TimeLimit.truncated"] for info in infos)  # so PPO bootstraps it
    assert all(info["terminal_observation"].shape == (16,) for info in infos)
    model = PPO("MlpPolicy", VecMonitor(venv), n_steps=16, batch_size=64, n_epochs=1,
                device="cpu", seed=0)
    model.learn(2 * 16 * 12)
    assert len(model.ep_info_buffer) > 0
    venv.close()


def test_supersuit_the_legacy_path_refuses_the_mixed_team_that_to_sb3_takes() -> None:
    supersuit = pytest.importorskip("supersuit")
    env = marlhub.make("traffic", to="pettingzoo.parallel", turn_based="pad")
    with pytest.raises(AssertionError, match="observation spaces not consistent"):
        supersuit.pettingzoo_env_to_vec_env_v1(env)
    to_sb3("traffic", 1, one_space=True).close()  # the hub's bridge takes it


def test_one_group_gets_the_slots_and_the_others_act_by_their_policy() -> None:
    """As TorchRL's group_map by kind: the cars train, the light plays a policy of its own."""
    always_one = lambda obs, masks, space: np.ones(masks.shape[:2], np.int64)  # noqa: E731
    venv = to_sb3("traffic", 3, group="car", others={"light": always_one})
    try:
        assert venv.agents == ["car_0", "car_1", "car_2", "car_3"]
        assert str(venv.observation_space) == "MultiDiscrete([7 6 2])"  # the cars' own
        replay = replay_against(venv, "traffic", 3, False, steps=120,
                                others={"light": 1})  # the plain envs' light plays 1 too
        assert replay.episodes
    finally:
        venv.close()
    contrib = pytest.importorskip("sb3_contrib")
    pytest.importorskip("torch")
    light = VecMonitor(to_sb3("traffic", 2, group="light"))  # the cars: random legal moves
    model = contrib.MaskablePPO("MlpPolicy", light, n_steps=32, batch_size=64, n_epochs=1,
                                seed=0, device="cpu", policy_kwargs={"net_arch": [16]})
    model.learn(2 * 32 * light.num_envs)
    assert len(model.ep_info_buffer) > 0
    light.close()


def test_magent2_tiger_deer_trains_as_one_space() -> None:
    """Tigers and deer observe and act differently: one padded space, kinds masked."""
    pytest.importorskip("magent2")
    contrib = pytest.importorskip("sb3_contrib")
    pytest.importorskip("torch")
    config = {"max_cycles": 10}
    venv = to_sb3("magent2/tiger_deer-v4", 1, config, one_space=True)
    try:
        kinds = venv.slots.groups
        assert set(kinds) == {"deer", "tiger"}
        from marlhub.registry import simultaneous_config

        replay_against(venv, "magent2/tiger_deer-v4", 1, True, steps=12,
                       config=dict(simultaneous_config("magent2/tiger_deer-v4", config)))
        model = contrib.MaskablePPO("MlpPolicy", VecMonitor(venv), n_steps=16, batch_size=256,
                                    n_epochs=1, seed=0, device="cpu",
                                    policy_kwargs={"net_arch": [16]})
        model.learn(16 * venv.num_envs)
        assert len(model.ep_info_buffer) > 0
    finally:
        venv.close()


def test_a_group_choice_the_slots_cannot_take_is_refused() -> None:
    with pytest.raises(VectorEnvError, match=r"group='bus' is no group.*\['car', 'light'\]"):
        to_sb3("traffic", 1, group="bus")
    with pytest.raises(VectorEnvError, match="others= names \\['car'\\]"):
        to_sb3("traffic", 1, group="car", others={"car": print})
    with pytest.raises(VectorEnvError, match="group=NAME to give slots to one group"):
        to_sb3("traffic", 1)


def test_vector_rewards_are_refused_until_scalarized_with_weights() -> None:
    """A learner's batch holds one reward per slot: MOMAland's two objectives are refused,
    and paid as their weighted sum once scalarized (compared with a plain env)."""
    pytest.importorskip("momaland")
    from marlhub.errors import VectorRewardError
    from marlhub.wrappers import ScalarizeRewards

    with pytest.raises(VectorRewardError, match="ScalarizeRewards"):
        to_sb3("momaland/catch-v0", 2)
    weights = np.array([0.25, 2.0])
    parallel = {"api": "parallel"}  # every agent acts in every step
    venv = to_sb3(lambda: ScalarizeRewards(marlhub.make("momaland/catch-v0", parallel), weights),
                  1)
    plain = marlhub.make("momaland/catch-v0", parallel)
    try:
        venv.seed(3)
        venv.reset()
        plain.reset(seed=3)
        venv.action_space.seed(0)
        for _ in range(4):
            actions = np.stack([venv.action_space.sample() for _ in range(venv.num_envs)])
            _, rewards, _, _ = venv.step(actions)
            _, paid, *_ = plain.step(dict(zip(plain.possible_agents, actions)))
            np.testing.assert_allclose(rewards, [paid[a] @ weights for a in plain.possible_agents],
                                       rtol=1e-6)
    finally:
        venv.close()
        plain.close()


@pytest.mark.parametrize("family", ["mamujoco", "momaland", "dmc_soccer"])
def test_ppo_trains_on_the_families_of_round_two(family: str) -> None:
    """MaMuJoCo's continuous joints, MOMAland's objectives once weighted and dm_control's
    soccer players train with PPO (short episodes: a few of them end inside the run)."""
    from stable_baselines3 import PPO

    if family == "dmc_soccer":
        pytest.importorskip("dm_control")
        try:
            venv = VecMonitor(to_sb3("dmc_soccer/1vs1", 2, {"time_limit": 0.5}))
        except MissingDependencyError as exc:  # dm_control 1.0.20 on NumPy 2 (oldest end)
            pytest.skip(str(exc))
    elif family == "mamujoco":
        pytest.importorskip("gymnasium_robotics")
        venv = VecMonitor(to_sb3("mamujoco/HalfCheetah-2x3", 2, {"max_episode_steps": 24}))
    else:
        pytest.importorskip("momaland")
        from marlhub.wrappers import ScalarizeRewards

        venv = VecMonitor(to_sb3(lambda: ScalarizeRewards(marlhub.make(
            "momaland/mobeach-v0", {"api": "parallel", "num_timesteps": 24}), [0.5, 0.5]), 2))
    policy = "MultiInputPolicy" if isinstance(venv.observation_space, gym.spaces.Dict) \
        else "MlpPolicy"  # soccer's players see a dict of arrays
    model = PPO(policy, venv, n_steps=32, batch_size=64, n_epochs=2, seed=0,
                policy_kwargs={"net_arch": [16]}, device="cpu")
    before = _parameters(model)
    model.learn(total_timesteps=2 * 32 * venv.num_envs)
    assert any((a != b).any() for a, b in zip(before, _parameters(model)))
    assert len(model.ep_info_buffer) > 0
    venv.close()
