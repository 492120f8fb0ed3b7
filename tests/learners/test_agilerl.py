"""``to_agilerl``: AgileRL's vector env of agent slots, against plain envs, and IPPO through it.

Every agent's rows are the ones a plain replay of ``marlhub.make(id)`` gives
(:class:`tests.learners.replay.SlotReplay`), an absent agent terminated (AgileRL ends a
copy's episode when every agent is done); then AgileRL's own IPPO and on-policy trainer train on a
simultaneous env, a turn-based game with masks and traffic (a mixed team whose cars leave
and join), and the episode scores its trainer computes are the returns the hub paid.

The newest AgileRL requires PettingZoo before 1.27: CI runs this module in the job of the
oldest supported versions (.ci/oldest), which installs it.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.wrappers import IllegalActionWrapper
from tests.adapters.recording import ReturnsRecorder
from tests.learners.replay import SlotReplay

pytest.importorskip("agilerl")
torch = pytest.importorskip("torch")

from marlhub.learners import to_agilerl  # noqa: E402
from marlhub.vector import SyncVectorMultiAgentEnv  # noqa: E402

def _copy(env_id: str, key: str, masked: bool) -> Any:
    env = ReturnsRecorder(marlhub.make(env_id), key)
    return IllegalActionWrapper(env, "substitute") if masked else env


CASES = [("traffic", True), ("openspiel/tic_tac_toe", False), ("rock_paper_scissors", False)]


@pytest.mark.parametrize("env_id, one_space", CASES)
def test_every_agent_shows_what_a_plain_replay_gives(env_id: str, one_space: bool) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    env = to_agilerl(env_id, 3, one_space=one_space)
    replay = SlotReplay(env_id, 3, env.slots.agents, one_space, seed=0)
    obs, _ = env.reset(seed=0)
    replay.reset()
    per_agent = len(env.agents)
    for step in range(100):
        expected = replay.expected
        masks = replay.masks(env.slots.mask_size)
        for k, agent in enumerate(env.agents):
            np.testing.assert_array_equal(env.action_masks()[agent],
                                          masks[k::per_agent].astype(np.int8))
            for i in range(3):
                row = expected["obs"][i * per_agent + k]
                if row is not None:
                    np.testing.assert_allclose(np.asarray(obs[agent][i], np.float64),
                                               np.asarray(row, np.float64),
                                               err_msg=f"step {step}, copy {i}, {agent}")
        actions = replay.slot_actions()
        was_alive = list(expected["alive"])  # the episode this step plays
        replay.step(actions)
        table = actions.reshape(3, per_agent)
        obs, rewards, terminated, truncated, _ = env.step(
            {a: table[:, k] for k, a in enumerate(env.agents)})
        for k, agent in enumerate(env.agents):
            for i in range(3):
                slot = i * per_agent + k
                done = slot in replay.expected["done"]
                absent = not done and not was_alive[slot]
                flags = bool(terminated[agent][i]) or bool(truncated[agent][i])
                assert flags == (done or absent), (step, slot)
                assert rewards[agent][i] == pytest.approx(replay.expected_rewards[slot])
    assert replay.episodes
    env.close()


@pytest.mark.filterwarnings("ignore:MakeEvolvable will be deprecated:DeprecationWarning")
@pytest.mark.parametrize("env_id, one_space", CASES)
def test_agilerl_ippo_trains_and_its_scores_are_the_hubs_returns(env_id: str,
                                                                 one_space: bool) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    from agilerl.algorithms import IPPO
    from agilerl.training.train_multi_agent_on_policy import train_multi_agent_on_policy

    key = f"agilerl-{env_id}"
    ReturnsRecorder.FINISHED[key] = []
    masked = env_id.startswith("openspiel")  # AgileRL takes no array masks: substitute
    make = functools.partial(_copy, env_id, key, masked)
    vector_env = SyncVectorMultiAgentEnv([make], autoreset_mode="same_step",
                                         check_masks=not masked)
    env = to_agilerl(vector_env, one_space=one_space, seed=0)
    torch.manual_seed(0)
    agent = IPPO(observation_spaces=[env.single_observation_space(a) for a in env.agents],
                 action_spaces=[env.single_action_space(a) for a in env.agents],
                 agent_ids=list(env.agents), learn_step=64, batch_size=32, update_epochs=2)
    scores: list[Any] = []
    add_scores = agent.add_scores

    def recording(rows: Any) -> None:  # what AgileRL's trainer computed, as it hands it on
        scores.extend(rows)
        add_scores(rows)

    agent.add_scores = recording  # type: ignore[method-assign]
    before = [p.detach().clone() for p in agent.actors.parameters()]
    train_multi_agent_on_policy(env, env_id, "IPPO", [agent], sum_scores=False,
                                max_steps=192, evo_steps=192, eval_steps=50, eval_loop=1,
                                verbose=False)
    assert any(not torch.equal(b, p) for b, p in zip(before, agent.actors.parameters()))
    paid = [[episode[a] for a in vector_env.possible_agents]
            for episode in ReturnsRecorder.FINISHED[key]]
    assert len(scores) >= 3
    np.testing.assert_allclose(np.asarray(scores, np.float64),
                               np.asarray(paid[:len(scores)], np.float64), atol=1e-5)
    env.close()
