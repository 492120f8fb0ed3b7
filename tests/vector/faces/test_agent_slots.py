"""AgentSlotVectorEnv: arrays of (num_envs, num_agents, ...) with acting and alive masks."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, VectorEnv

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors, Traffic
from marlhub.errors import ActionError, VectorEnvError
from marlhub.vector import (
    AgentSlotVectorEnv,
    AsyncVectorMultiAgentEnv,
    SyncVectorMultiAgentEnv,
)
from tests.conformance.valid_envs import LateJoiners, MasksInInfos
from tests.vector.envs import no_worker_left_behind  # noqa: F401 (autouse)


def _rps_once() -> RockPaperScissors:
    return RockPaperScissors({"num_moves": 1})


def test_a_gymnasium_vector_env_of_copies_by_slots() -> None:
    envs = AgentSlotVectorEnv(SyncVectorMultiAgentEnv([_rps_once] * 2))
    assert isinstance(envs, VectorEnv) and envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert envs.agents == ["player1", "player2"] and envs.observation_space.shape == (2, 2)
    obs, infos = envs.reset(seed=0)
    assert obs.shape == (2, 2) and infos["acting"].all() and infos["alive"].all()
    obs, rewards, terminations, truncations, infos = envs.step(np.array([[0, 1], [2, 2]]))
    assert rewards.tolist() == [[-1.0, 1.0], [0.0, 0.0]]
    assert terminations.all() and not truncations.any()
    assert not infos["acting"].any() and not infos["alive"].any()  # reset in the next call
    obs, rewards, terminations, _, infos = envs.step(envs.action_space.sample())
    assert not rewards.any() and not terminations.any() and infos["acting"].all()
    envs.close()
    assert envs.vector_env.closed


def test_agents_that_join_are_not_alive_before_and_their_slots_hold_zeros() -> None:
    envs = AgentSlotVectorEnv(SyncVectorMultiAgentEnv([LateJoiners] * 2))
    obs, infos = envs.reset(seed=0)
    assert infos["alive"].tolist() == [[True, False, False]] * 2
    assert (obs[:, 1:] == 0).all()
    for _ in range(2):
        obs, rewards, _, _, infos = envs.step(np.ones((2, 3), np.int64))  # b's and c's ignored
    assert infos["acting"].tolist() == [[True, True, False]] * 2
    # The slots hold what the dicts of the vector env hold.
    dict_obs = envs.vector_env._book.obs
    for i in range(2):
        for j, agent in enumerate(envs.agents):
            want = dict_obs[i].get(agent, np.zeros(1, np.float32))
            assert why_different(obs[i, j], want) is None


def test_masks_come_as_an_array_and_illegal_actions_are_refused() -> None:
    envs = AgentSlotVectorEnv(SyncVectorMultiAgentEnv([MasksInInfos] * 2))
    _, infos = envs.reset(seed=0)
    assert infos["action_mask"].shape == (2, 2, 3)
    assert infos["action_mask"][:, 1].tolist() == [[0, 1, 1]] * 2
    with pytest.raises(ActionError, match="for 'b' in copy 1"):
        envs.step(np.array([[0, 1], [1, 0]]))
    with pytest.raises(VectorEnvError, match=r"actions of shape \(2,\), not \(2, 2\)"):
        envs.step(np.array([1, 1]))


def test_dict_observations_become_dicts_of_arrays_and_async_works_alike() -> None:
    pytest.importorskip("pyspiel")
    fns = marlhub.registry.vector.env_fns_for("openspiel/kuhn_poker", 3)
    with AgentSlotVectorEnv(AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=60)) as envs, \
            AgentSlotVectorEnv(SyncVectorMultiAgentEnv(fns)) as twin:
        got, want = envs.reset(seed=1), twin.reset(seed=1)
        assert set(got[0]) == {"observation", "action_mask"}
        assert got[0]["observation"].shape[:2] == (3, 2)
        for _ in range(6):
            masks = want[-1]["action_mask"]
            actions = masks.argmax(axis=-1)  # a legal action for every acting slot
            got, want = envs.step(actions), twin.step(actions)
            assert why_different([got[0], *got[1:4]], [want[0], *want[1:4]]) is None


def test_agents_need_one_space() -> None:
    with pytest.raises(VectorEnvError, match="observation spaces differ"):
        AgentSlotVectorEnv(SyncVectorMultiAgentEnv([Traffic]))
    venv = SyncVectorMultiAgentEnv([_rps_once])
    with pytest.raises(VectorEnvError, match="not the slots'"):
        AgentSlotVectorEnv(venv, agents=["player1"])
    assert AgentSlotVectorEnv(venv, agents=["player2", "player1"]).agents == ["player2", "player1"]


def test_same_step_ends_the_slots_and_plays_on() -> None:
    envs = AgentSlotVectorEnv(SyncVectorMultiAgentEnv([_rps_once], autoreset_mode="same_step"))
    envs.reset(seed=0)
    _, rewards, terminations, _, infos = envs.step(np.array([[1, 0]]))
    assert rewards.tolist() == [[1.0, -1.0]] and terminations.all()
    assert infos["acting"].all() and infos["alive"].all()  # the next episode's
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP


def test_images_are_stacked() -> None:
    pytest.importorskip("pettingzoo.butterfly")
    fns = marlhub.registry.vector.env_fns_for(
        "pettingzoo/butterfly/pistonball-v6", 2, {"api": "parallel", "n_pistons": 3,
                                                  "max_cycles": 3})
    with AgentSlotVectorEnv(AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=60)) as envs:
        obs, _ = envs.reset(seed=0)
        assert obs.shape[:2] == (2, 3) and obs.dtype == np.uint8
        ended = np.zeros((2, 3), np.bool_)
        for _ in range(3):  # max_cycles: every copy ends within 3 steps
            obs, _, terminations, truncations, _ = envs.step(np.zeros((2, 3, 1), np.float32))
            assert obs.shape == (2, 3, *envs.agent_observation_space.shape)
            ended |= terminations | truncations
        assert ended.all()
