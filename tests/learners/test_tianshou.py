"""``to_tianshou``: Tianshou's multi-agent env over a hub env, against a plain replay.

What every turn shows (who acts, the padded observation, the mask, the reward vector)
is checked against a plain ``marlhub.make(id)`` stepped with the same actions; then
Tianshou's own DQN trains through it on a simultaneous env, a turn-based game with masks
and traffic (a mixed team whose cars leave and join), and the returns its collector
reports are the ones the hub paid.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.core import ALL
from marlhub.learners import to_tianshou
from marlhub.spaces import find_action_mask
from tests.adapters.recording import ReturnsRecorder
from tests.learners.replay import without_mask


@pytest.mark.parametrize("env_id", ["traffic", "openspiel/tic_tac_toe", "rock_paper_scissors"])
def test_every_turn_shows_what_a_plain_replay_gives(env_id: str) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    env, plain = to_tianshou(env_id), marlhub.make(env_id)
    agents = plain.possible_agents
    kinds = sorted({(repr(plain.observation_spaces[a]), repr(plain.action_spaces[a]))
                    for a in agents}, key=[(repr(plain.observation_spaces[a]),
                                            repr(plain.action_spaces[a])) for a in agents].index)
    rng = np.random.default_rng(0)
    returns, paid = np.zeros(len(agents)), np.zeros(len(agents))
    episodes = 0
    obs, _ = env.reset(seed=4)
    hub_obs, hub_infos = plain.reset(seed=4)
    actors = list(hub_obs)
    for _ in range(150):
        actions = {}
        for agent in actors:  # one Tianshou step per actor, in the hub's order
            assert obs["agent_id"] == agent
            space, value = without_mask(plain.observation_spaces[agent], hub_obs[agent])
            flat = gym.spaces.flatten(space, value)
            np.testing.assert_allclose(obs["obs"][:len(flat)], flat)
            assert not obs["obs"][len(flat):len(obs["obs"]) - len(kinds)].any()
            if len(kinds) > 1:
                kind = kinds.index((repr(plain.observation_spaces[agent]),
                                    repr(plain.action_spaces[agent])))
                assert obs["obs"][-len(kinds):].tolist() == np.eye(len(kinds))[kind].tolist()
            own = plain.action_spaces[agent]
            mask = find_action_mask(hub_obs[agent], hub_infos.get(agent))
            legal = np.ones(own.n, bool) if mask is None else np.asarray(mask, bool)
            assert obs["mask"] == legal.tolist() + [False] * (len(obs["mask"]) - own.n)
            actions[agent] = int(rng.choice(np.flatnonzero(legal)))
            obs, rewards, terminated, truncated, _ = env.step(actions[agent])
            returns += rewards
        hub_obs, hub_rewards, terms, truncs, hub_infos = plain.step(actions)
        for agent, reward in hub_rewards.items():
            paid[agents.index(agent)] += reward
        np.testing.assert_allclose(returns, paid, atol=1e-6)
        ended = bool(terms[ALL] or truncs[ALL])
        assert (terminated, truncated) == (bool(terms[ALL]),
                                           bool(truncs[ALL]) and not terms[ALL])
        actors = marlhub.actors(hub_obs, terms, truncs)
        if ended:
            episodes += 1
            obs, _ = env.reset(seed=episodes)
            hub_obs, hub_infos = plain.reset(seed=episodes)
            actors = list(hub_obs)
    assert episodes >= 3


@pytest.mark.parametrize("env_id", ["traffic", "openspiel/tic_tac_toe", "rock_paper_scissors"])
def test_tianshou_dqn_trains_and_its_collector_reports_the_hubs_returns(
        env_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One DQN shared by the agents of the first kind; a random legal policy for the rest."""
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    torch = pytest.importorskip("torch")
    numba = pytest.importorskip("numba", reason="Tianshou needs numba (the learners extra)")
    # Tianshou's buffer helpers are numba functions: compiling them takes longer than the
    # few hundred steps here take them as plain Python (set before Tianshou is imported).
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    pytest.importorskip("tianshou")
    from tianshou.algorithm import (
        DQN,
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    key = f"tianshou-{env_id}"
    ReturnsRecorder.FINISHED[key] = []

    def make_env() -> Any:
        return to_tianshou(ReturnsRecorder(marlhub.make(env_id), key))

    env = make_env()
    first = env.agents[0]
    net = Net(state_shape=env.observation_space["observation"].shape,
              action_shape=int(env.action_space.n), hidden_sizes=[32])
    learner = DQN(policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space,
                                                 eps_training=0.1, eps_inference=0.05),
                  optim=AdamOptimizerFactory(lr=1e-3), n_step_return_horizon=1, gamma=0.9,
                  target_update_freq=20)
    plain = marlhub.make(env_id)  # the learner's agents: those of the first agent's spaces

    def kind(agent: Any) -> str:
        return repr((plain.observation_spaces[agent], plain.action_spaces[agent]))

    learners = [learner if kind(a) == kind(first) else
                MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
                for a in env.agents]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=learners, env=env)
    torch.manual_seed(0)
    training = Collector[CollectStats](algorithm, DummyVectorEnv([make_env, make_env]),
                                       VectorReplayBuffer(2000, 2), exploration_noise=True)
    training.reset()
    before = [p.detach().clone() for p in net.parameters()]
    algorithm.run_training(OffPolicyTrainerParams(
        training_collector=training, max_epochs=1, epoch_num_steps=160,
        collection_step_num_env_steps=10, batch_size=32,
        update_step_num_gradient_steps_per_sample=0.1))
    assert any(not torch.equal(b, p) for b, p in zip(before, net.parameters()))
    ReturnsRecorder.FINISHED[key] = []
    stats = Collector[CollectStats](algorithm, DummyVectorEnv([make_env])).collect(
        n_episode=4, reset_before_collect=True)
    paid = [[episode[a] for a in env.agents] for episode in ReturnsRecorder.FINISHED[key]]
    np.testing.assert_allclose(stats.returns, paid, atol=1e-5)  # each agent's, as paid
