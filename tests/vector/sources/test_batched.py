"""BatchedVectorEnv: ONE natively batched simulator (VMAS, a batched TorchRL env) as a vector env."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.errors import ActionError, ProtocolError, ResetNeededError, VectorEnvError
from marlhub.vector import AgentSlotVectorEnv, BatchedVectorEnv

vmas = pytest.importorskip("vmas")
torch = pytest.importorskip("torch")

BALANCE = {"max_steps": 4, "continuous_actions": False}


def _balance(n: int, **kwargs: Any) -> BatchedVectorEnv:
    envs = marlhub.make_vec("vmas/balance", n, BALANCE, **kwargs)
    assert isinstance(envs, BatchedVectorEnv)
    return envs


def _still(envs: BatchedVectorEnv) -> dict[str, np.ndarray]:
    """Every agent of every copy plays Discrete action 0 (stay)."""
    return {name: np.zeros((envs.num_envs, len(agents)), np.int64)
            for name, agents in envs.groups.items()}


def test_make_vec_of_vmas_holds_one_vmas_env_of_n_copies() -> None:
    with _balance(7) as envs:
        assert envs.envs == [] and envs.source.vmas_env.num_envs == 7
        assert envs.groups == {"agents": ["agent_0", "agent_1", "agent_2"]}
        batch = envs.reset_arrays(seed=0)
        assert batch.obs["agents"].shape == (7, 3, 16) and batch.obs["agents"].dtype == np.float32
        assert batch.acting["agents"].all() and batch.alive["agents"].all()
        assert envs.single_action_spaces["agent_0"] == marlhub.make(
            "vmas/balance", BALANCE).action_spaces["agent_0"]
    with marlhub.make_vec("vmas/balance", 3, BALANCE, vectorization_mode="sync") as copies:
        assert len(copies.envs) == 3  # sync still makes one env per copy, when asked


@pytest.mark.parametrize(("scenario", "config"), [
    ("balance", BALANCE),
    ("navigation", {"max_steps": 5, "n_agents": 2}),  # continuous actions
    ("transport", {"max_steps": 3, "multidiscrete_actions": True, "continuous_actions": False}),
    ("simple_spread", {"max_steps": 6, "terminated_truncated": True}),
])
def test_the_array_face_is_vmas_stepping_its_batch_in_lockstep(scenario: str,
                                                                 config: dict[str, Any]) -> None:
    from marlhub.adapters.vmas.family import VmasFamily
    from marlhub.context import EnvContext

    with marlhub.make_vec(f"vmas/{scenario}", 5, config) as envs:
        assert VmasFamily().batched_lockstep(scenario, EnvContext(config), envs, seed=3,
                                             steps=14) == []


def test_a_batch_of_one_is_the_hub_env_in_every_autoreset_mode() -> None:
    from marlhub.conformance.vector import check_vector

    report = check_vector("vmas/balance", 3, episodes=2, vectorization_modes=["batched"],
                          config=BALANCE)
    assert report.ok and report.episodes >= 6, report.findings
    assert {f.rule for f in report.findings} <= {"vector.reset_infos"}  # VMAS's, marked known
    assert all(f.severity == "warning" for f in report.findings)


def test_next_step_same_step_and_disabled_on_the_arrays() -> None:
    with _balance(2, autoreset_mode="same_step") as envs:
        envs.reset_arrays(seed=0)
        for _ in range(3):
            assert envs.step_arrays(_still(envs)).final_obs is None
        batch = envs.step_arrays(_still(envs))  # the 4th step ends both copies, resets them
        assert batch.episode_truncated.all() and batch.truncated["agents"].all()
        assert batch.final_obs is not None and batch.acting["agents"].all()
        assert not np.array_equal(batch.final_obs["agents"], batch.obs["agents"])
        assert "final_obs" in batch.infos[1]["__common__"]
    with _balance(3, autoreset_mode="disabled") as envs:
        envs.reset_arrays(seed=0)
        for _ in range(4):
            batch = envs.step_arrays(_still(envs))
        assert not batch.acting["agents"].any()
        batch = envs.step_arrays(_still(envs))  # ended copies stay ended
        assert not batch.acting["agents"].any() and not batch.rewards["agents"].any()
        before = batch.obs["agents"].copy()
        batch = envs.reset_arrays(options={"reset_mask": np.array([True, False, False])})
        assert batch.acting["agents"].tolist() == [[True] * 3, [False] * 3, [False] * 3]
        assert np.array_equal(batch.obs["agents"][1:], before[1:])
        assert not np.array_equal(batch.obs["agents"][0], before[0])


def test_the_dict_face_and_the_array_face_of_two_batches_agree() -> None:
    with _balance(4) as dicts, _balance(4) as arrays:
        obs, infos = dicts.reset(seed=5)
        batch = arrays.reset_arrays(seed=5)
        assert sorted(infos[2]["agent_1"]) == ["ground_rew", "pos_rew"]
        rng = np.random.default_rng(1)
        for step in range(9):
            actions = rng.integers(0, 9, size=(4, 3))
            per_copy = [{a: int(actions[i, j]) for j, a in enumerate(arrays.groups["agents"])
                         if a in dicts.actors[i]} for i in range(4)]
            obs, rewards, terminateds, truncateds, infos = dicts.step(per_copy)
            batch = arrays.step_arrays({"agents": actions})
            for i in range(4):
                for j, agent in enumerate(arrays.groups["agents"]):
                    assert why_different(obs[i][agent], batch.obs["agents"][i, j]) is None
                    if rewards[i]:
                        assert rewards[i][agent] == pytest.approx(batch.rewards["agents"][i, j])
                assert truncateds[i]["__all__"] == batch.episode_truncated[i]
            if step == 4:  # the call after the end: reset, {} rewards, __all__ False
                assert rewards == [{}] * 4 and terminateds == [{"__all__": False}] * 4


def test_seeds_reproduce_the_whole_batch_and_other_seeds_are_refused() -> None:
    with _balance(3) as one, _balance(3) as two:
        assert why_different(one.reset_arrays(seed=9).obs, two.reset_arrays(seed=9).obs) is None
        assert "whole batch" in one.seeding
        with pytest.raises(VectorEnvError, match="one seed per copy"):
            one.reset(seed=[1, 2, 3])
        with pytest.raises(VectorEnvError, match="seed with a reset_mask"):
            one.reset(seed=1, options={"reset_mask": np.array([True, False, False])})
        with pytest.raises(VectorEnvError, match="does not take"):
            one.reset(options={"render": True})
        with pytest.raises(VectorEnvError, match="3 bools"):
            one.reset(options={"reset_mask": [True]})


def test_bad_action_arrays_name_the_group_copy_and_agent_and_move_nothing() -> None:
    with _balance(2) as envs, _balance(2) as twin:
        with pytest.raises(ResetNeededError):
            envs.step_arrays(_still(envs))
        envs.reset_arrays(seed=0)
        twin.reset_arrays(seed=0)
        with pytest.raises(VectorEnvError, match=r"group 'agents' have shape \(2, 2\), not "
                                                 r"\(2, 3\)"):
            envs.step_arrays({"agents": np.zeros((2, 2), np.int64)})
        with pytest.raises(VectorEnvError, match="dtype float64"):
            envs.step_arrays({"agents": np.zeros((2, 3))})
        with pytest.raises(VectorEnvError, match=r"keys \['agents'\]"):
            envs.step_arrays({"agent": np.zeros((2, 3), np.int64)})
        bad = np.zeros((2, 3), np.int64)
        bad[1, 2] = 9
        with pytest.raises(ActionError, match="for 'agent_2' in copy 1: got 9, expected an "
                                              r"action in Discrete\(9\)") as caught:
            envs.step_arrays({"agents": bad})
        assert caught.value.copy_index == 1 and caught.value.agent_id == "agent_2"
        with pytest.raises(ActionError, match="for 'agent_0' in copy 1"):
            envs.step([{a: 0 for a in envs.possible_agents},
                       {"agent_0": 12, "agent_1": 0, "agent_2": 0}])
        # Nothing moved: both batches still step alike.
        assert why_different(envs.step_arrays(_still(envs)).obs,
                             twin.step_arrays(_still(twin)).obs) is None


def test_torch_arrays_stay_torch_on_the_simulators_device() -> None:
    with _balance(3, as_torch=True) as envs:
        batch = envs.reset_arrays(seed=0)
        assert isinstance(batch.obs["agents"], torch.Tensor)
        batch = envs.step_arrays({"agents": torch.zeros(3, 3, dtype=torch.int64)})
        assert isinstance(batch.rewards["agents"], torch.Tensor)
        assert batch.rewards["agents"].device == torch.device("cpu")
        obs, _ = envs.reset(seed=0)  # the dict face is numpy
        assert isinstance(obs[0]["agent_0"], np.ndarray)


def test_torch_actions_on_the_device_the_simulator_names_otherwise() -> None:
    """A simulator made on ``"cpu:0"`` (as one made on ``"cuda"`` gives tensors on
    ``cuda:0``) takes actions on the device its own tensors are on; another device is
    refused with both named, and no copy moves."""
    with marlhub.make_vec("vmas/balance", 3, {**BALANCE, "device": "cpu:0"},
                          as_torch=True) as envs, _balance(3, as_torch=True) as twin:
        assert str(envs.source.device) == "cpu:0"
        batch = envs.reset_arrays(seed=0)
        twin.reset_arrays(seed=0)
        on_its_device = torch.zeros(3, 3, dtype=torch.int64, device=batch.obs["agents"].device)
        with pytest.raises(VectorEnvError, match="are on meta, and the simulator runs on "
                           "cpu:0.*Move them with .to\\('cpu:0'\\)"):
            envs.step_arrays({"agents": on_its_device.to("meta")})
        batch = envs.step_arrays({"agents": on_its_device})
        assert torch.equal(batch.obs["agents"], twin.step_arrays(_still(twin)).obs["agents"])


def test_agent_slots_read_the_batch_as_it_is() -> None:
    with AgentSlotVectorEnv(_balance(4)) as slots:
        obs, infos = slots.reset(seed=0)
        assert obs.shape == (4, 3, 16) and infos["acting"].all()
        assert obs is slots.vector_env._last.obs["agents"]  # no per-copy copying
        for _ in range(4):
            obs, rewards, terminations, truncations, infos = slots.step(
                slots.action_space.sample())
        assert truncations.all() and not infos["acting"].any()
    with pytest.raises(VectorEnvError, match="not one group"):
        AgentSlotVectorEnv(_balance(2), agents=["agent_2", "agent_1", "agent_0"])


def test_from_torchrl_takes_the_documents_batched_vmas_env() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.vmas import VmasEnv

    from marlhub.adapters.torchrl import from_torchrl

    native = VmasEnv("balance", num_envs=3, n_agents=5)
    envs = from_torchrl(native)
    assert isinstance(envs, BatchedVectorEnv) and envs.num_envs == 3
    assert envs.source.vmas_env is native._env
    obs, infos = envs.reset(seed=0)
    assert len(obs) == 3 and sorted(obs[0]) == [f"agent_{i}" for i in range(5)]
    actions = [{a: np.zeros(2, np.float32) for a in ob} for ob in obs]
    _, rewards, _, truncateds, _ = envs.step(actions)
    assert len(rewards[2]) == 5 and truncateds[0]["__all__"] is False


def test_from_torchrl_reads_other_batched_envs_through_their_tensordicts() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv, SerialEnv

    from marlhub.adapters.torchrl import from_torchrl, to_torchrl

    serial = SerialEnv(2, lambda: to_torchrl(marlhub.make("vmas/balance", BALANCE)))
    with from_torchrl(serial) as envs:
        assert type(envs.source).__name__ == "TorchRLBatch"
        assert envs.groups == {"agents": ["agent_0", "agent_1", "agent_2"]}
        envs.reset(seed=0)
        for step in range(6):  # past the end of the first episode: copies reset by TorchRL
            _, rewards, _, truncateds, _ = envs.step(
                [{a: 1 for a in actors} for actors in envs.actors])
            assert truncateds[0]["__all__"] == (step == 3)
        assert len(rewards[1]) == 3
    single = SerialEnv(2, lambda: GymEnv("CartPole-v1"))
    with pytest.raises(ProtocolError, match="group_map"):
        from_torchrl(single)
    single.close()
