"""Learners train on the PettingZoo views, each on its own documented multi-agent path.

Short real trainings (a few hundred env steps): each asserts that it ran, that the
learner updated its networks, and the env-side invariants: every action reached the
hub env legal (a hub env raises on any other, which would stop the training), and
the episode returns the learner saw are the hub env's own. Each learner is skipped
where it is not installed (the ``learners`` extra installs them).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import marlhub
from marlhub.adapters.pettingzoo import HubParallelEnv, to_pettingzoo
from tests.adapters.recording import ReturnsRecorder
from tests.skrl_learner import skrl_learner



@pytest.mark.parametrize("algorithm", ["IPPO", "MAPPO"])
def test_skrl_trains_on_a_parallel_view_mappo_with_the_global_state(algorithm: str,
                                                                    tmp_path: Any) -> None:
    pytest.importorskip("mpe2")
    torch = pytest.importorskip("torch")
    pytest.importorskip("skrl")
    from skrl.envs.wrappers.torch import wrap_env
    from skrl.memories.torch import RandomMemory
    from skrl.trainers.torch import SequentialTrainer

    logging.getLogger("skrl").setLevel(logging.WARNING)  # its info lines outlive pytest's capture

    hub = marlhub.make("mpe2/simple_spread-v3", {"api": "parallel", "max_cycles": 25})
    env = wrap_env(HubParallelEnv(hub), wrapper="pettingzoo")  # skrl's own wrapper
    agents = env.possible_agents
    assert env.state_space(agents[0]) == hub.state_space  # MAPPO's critic sees the state
    agent, models = skrl_learner(env, algorithm, {a: RandomMemory(
        memory_size=32, num_envs=env.num_envs, device=env.device) for a in agents}, tmp_path)
    trainer_cfg = {"headless": True, "disable_progressbar": True}
    SequentialTrainer(env=env, agents=agent, cfg={**trainer_cfg, "timesteps": 1}).train()
    before = {a: {k: v.clone() for k, v in models[a]["policy"].state_dict().items()}
              for a in agents}
    SequentialTrainer(env=env, agents=agent, cfg={**trainer_cfg, "timesteps": 128}).train()
    for a in agents:  # every agent's policy was updated
        after = models[a]["policy"].state_dict()
        assert any(not torch.equal(before[a][k], after[k]) for k in after), a
    env.close()


# SuperSuit's ConcatVecEnv has no get_attr, so SB3 cannot read render_mode through it
# (with native PettingZoo envs too).
@pytest.mark.filterwarnings("ignore:The `render_mode` attribute is not defined:UserWarning")
def test_sb3_ppo_trains_through_supersuits_vector_env_and_sees_the_hubs_returns() -> None:
    ss = pytest.importorskip("supersuit")
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecMonitor

    key = "sb3-ppo-supersuit-rps"
    ReturnsRecorder.FINISHED[key] = []
    hub = ReturnsRecorder(marlhub.make("rock_paper_scissors"), key)
    vec = ss.pettingzoo_env_to_vec_env_v1(to_pettingzoo(hub, api="parallel"))
    # num_cpus=0: in this process (SuperSuit copies the env into its vector env).
    vec = VecMonitor(ss.concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="stable_baselines3"))
    model = PPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=2, verbose=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(1280)
    assert any(not (b == p).all() for b, p in zip(before, model.policy.parameters()))
    finished = ReturnsRecorder.FINISHED[key]
    assert len(finished) >= 60  # 1280 steps of 2 copies x 2 agents, 10 rounds an episode
    # VecMonitor's slots are copy 0's player1, player2, then copy 1's; copies end together
    # (10 rounds), copy 0 first. The last episodes it kept are the hub's, in that order.
    seen = [float(e["r"]) for e in model.ep_info_buffer]
    paid = [episode[agent] for episode in finished for agent in hub.possible_agents]
    assert len(seen) == 100 and seen == paid[-len(seen):]
    vec.close()


def test_tianshou_trains_masked_dqn_on_the_aec_view_of_a_masked_game(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Tianshou's own multi-agent path: its PettingZooEnv over the AEC view, masks in obs."""
    pytest.importorskip("pyspiel")
    torch = pytest.importorskip("torch")
    numba = pytest.importorskip("numba", reason="Tianshou needs numba (the learners extra)")
    # Tianshou's replay buffer and return helpers are numba functions: compiling them takes
    # longer (~8 s) than the few hundred steps here take them as plain Python. Set before
    # Tianshou is first imported, when its decorators run.
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
    from tianshou.env.pettingzoo_env import PettingZooEnv
    from tianshou.trainer import OffPolicyTrainerParams
    from tianshou.utils.net.common import Net

    key = "tianshou-dqn-tic-tac-toe"
    ReturnsRecorder.FINISHED[key] = []

    def make_env() -> Any:
        hub = ReturnsRecorder(marlhub.make("openspiel/tic_tac_toe"), key)
        return PettingZooEnv(marlhub.convert(hub, to="pettingzoo.aec"))

    env = make_env()
    net = Net(state_shape=env.observation_space["observation"].shape,
              action_shape=int(env.action_space.n), hidden_sizes=[32])
    learner = DQN(policy=DiscreteQLearningPolicy(model=net, action_space=env.action_space,
                                                 eps_training=0.1, eps_inference=0.05),
                  optim=AdamOptimizerFactory(lr=1e-3), n_step_return_horizon=1, gamma=0.9,
                  target_update_freq=20)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)
    torch.manual_seed(0)
    training = Collector[CollectStats](algorithm, DummyVectorEnv([make_env, make_env]),
                                       VectorReplayBuffer(2000, 2), exploration_noise=True)
    training.reset()
    before = [p.detach().clone() for p in net.parameters()]
    algorithm.run_training(OffPolicyTrainerParams(
        training_collector=training, max_epochs=2, epoch_num_steps=100,
        collection_step_num_env_steps=10, batch_size=32,
        update_step_num_gradient_steps_per_sample=0.1))
    assert any(not torch.equal(b, p) for b, p in zip(before, net.parameters()))
    ReturnsRecorder.FINISHED[key] = []
    stats = Collector[CollectStats](algorithm, DummyVectorEnv([make_env])).collect(
        n_episode=5, reset_before_collect=True)
    paid = [[episode[a] for a in ("player_0", "player_1")] for episode in ReturnsRecorder.FINISHED[key]]
    assert stats.returns.tolist() == paid  # each player's return, as the hub paid it


@pytest.mark.filterwarnings("ignore:MakeEvolvable will be deprecated:DeprecationWarning")
def test_agilerl_ippo_trains_through_its_pettingzoo_vector_env(tmp_path: Any) -> None:
    """AgileRL's documented path: AsyncPettingZooVecEnv workers and its on-policy trainer.

    The newest AgileRL requires PettingZoo before 1.27: CI installs it in the job that
    tests marlhub's oldest supported versions (.ci/oldest).
    """
    pytest.importorskip("mpe2")
    torch = pytest.importorskip("torch")
    pytest.importorskip("agilerl")
    import json

    import numpy as np
    from agilerl.algorithms import IPPO
    from agilerl.training.train_multi_agent_on_policy import train_multi_agent_on_policy
    from agilerl.vector import AsyncPettingZooVecEnv

    logs = [tmp_path / f"worker{i}.jsonl" for i in range(2)]

    def make_env(log: Any) -> Any:
        hub = marlhub.make("mpe2/simple_spread-v3", {"api": "parallel", "max_cycles": 25})
        return to_pettingzoo(ReturnsRecorder(hub, "agilerl", log), api="parallel")

    env = AsyncPettingZooVecEnv([lambda log=log: make_env(log) for log in logs])
    seen: list[list[dict[str, float]]] = [[], []]  # what AgileRL's trainer received, by copy
    running = [dict.fromkeys(env.possible_agents, 0.0) for _ in logs]
    step = env.step

    def recording_step(actions: Any) -> Any:
        result = step(actions)
        rewards, terminated, truncated = result[1], result[2], result[3]
        for i, totals in enumerate(running):
            for agent in totals:
                totals[agent] += float(np.nan_to_num(rewards[agent][i]))
            if all(terminated[a][i] or truncated[a][i] for a in totals):
                seen[i].append(dict(totals))
                running[i] = dict.fromkeys(totals, 0.0)
        return result

    reset = env.reset

    def recording_reset(**kwargs: Any) -> Any:  # the trainer resets mid-episode too
        running[:] = [dict.fromkeys(env.possible_agents, 0.0) for _ in logs]
        return reset(**kwargs)

    env.step = recording_step  # type: ignore[method-assign]
    env.reset = recording_reset  # type: ignore[method-assign]
    env.reset(seed=0)
    agent = IPPO(observation_spaces=[env.single_observation_space(a) for a in env.agents],
                 action_spaces=[env.single_action_space(a) for a in env.agents],
                 agent_ids=list(env.agents), learn_step=64, batch_size=32, update_epochs=2)
    before = [p.detach().clone() for p in agent.actors.parameters()]
    train_multi_agent_on_policy(env, "mpe2/simple_spread-v3", "IPPO", [agent], sum_scores=False,
                                max_steps=256, evo_steps=128, eval_loop=1, verbose=False)
    assert any(not torch.equal(b, p) for b, p in zip(before, agent.actors.parameters()))
    assert agent.steps >= 256
    for log, episodes in zip(logs, seen):
        paid = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(episodes) >= 5
        for got, hub_paid in zip(episodes, paid):  # float32 rewards summed in two orders
            assert got == pytest.approx(hub_paid)


@pytest.mark.parametrize("source", ["traffic", "mpe2_renamed"])
def test_skrl_reads_the_global_state_through_views_and_wrappers(source: str) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("skrl")
    from skrl.envs.wrappers.torch import wrap_env

    from marlhub.wrappers.rename import RenameAgents

    logging.getLogger("skrl").setLevel(logging.WARNING)
    if source == "traffic":  # turn-based: the padded parallel view
        hub = marlhub.make("traffic")
        view = to_pettingzoo(hub, api="parallel", turn_based="pad")
    else:  # MPE2's own state, behind RenameAgents (skrl stopped there before)
        pytest.importorskip("mpe2")
        hub = marlhub.make("mpe2/simple_spread-v3", {"api": "parallel"})
        view = to_pettingzoo(RenameAgents(hub, {a: a.replace("agent", "runner")
                                                for a in hub.possible_agents}), api="parallel")
    env = wrap_env(view, wrapper="pettingzoo")  # skrl's own wrapper
    agents = env.possible_agents
    assert all(env.state_space(a) == hub.state_space for a in agents)
    env.reset()
    for _ in range(5):
        states = env.state()
        assert set(states) == set(agents)
        expected = torch.as_tensor(hub.state(), dtype=torch.float32).reshape(1, -1)
        assert all(torch.equal(s.cpu(), expected) for s in states.values())
        env.step({a: torch.as_tensor([[env.action_space(a).sample()]]) for a in agents})
