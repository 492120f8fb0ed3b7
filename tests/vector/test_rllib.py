"""RLlib samples from marlhub's async vector env: VectorEnvRunner, one PPO iteration."""

from __future__ import annotations

import gc
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402
from ray.rllib.env.vector.vector_multi_agent_env import VectorMultiAgentEnv  # noqa: E402

import marlhub  # noqa: E402
from marlhub.registry import register_with_ray  # noqa: E402
from marlhub.vector import AsyncVectorMultiAgentEnv  # noqa: E402
from marlhub.learners.rllib_runner import VectorEnvRunner  # noqa: E402
from tests.adapters.rllib.ray_session import assert_both_policies_learned, by_player  # noqa: E402
from tests.vector.envs import children, left_of  # noqa: E402


def _config(name: str, runner: type, mode: str) -> Any:
    return (
        PPOConfig()
        .environment(name, env_config={"max_steps": 20})
        .env_runners(num_env_runners=0, env_runner_cls=runner, num_envs_per_env_runner=4,
                     gym_env_vectorize_mode=mode, rollout_fragment_length=32)
        .multi_agent(policies={"first", "second"}, policy_mapping_fn=by_player)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )


def test_one_ppo_iteration_samples_from_the_async_vector_env(ray_instance: None) -> None:
    (name,) = register_with_ray("tic_tac_toe")
    before = children()
    algo = _config(name, VectorEnvRunner.with_options(num_workers=2, timeout=120),
                   "async").build_algo()
    try:
        env = algo.env_runner.env
        assert isinstance(env, AsyncVectorMultiAgentEnv) and isinstance(env, VectorMultiAgentEnv)
        assert env.num_envs == 4 and env.num_workers == 2
        workers = {p.pid for p in env.processes()}
        result = algo.train()
    finally:
        algo.stop()
    assert_both_policies_learned(result)
    gc.collect()
    assert left_of(workers) == set() and left_of(children() - before) == set()


def test_sync_mode_builds_marlhubs_sync_vector_env(ray_instance: None) -> None:
    (name,) = register_with_ray("tic_tac_toe")
    config = (PPOConfig().environment(name)
              .env_runners(num_env_runners=0, env_runner_cls=VectorEnvRunner,
                           num_envs_per_env_runner=2)
              .multi_agent(policies={"p"}, policy_mapping_fn=lambda *a, **k: "p"))
    runner = VectorEnvRunner(config=config)
    try:
        assert type(runner.env).__name__ == "SyncVectorMultiAgentEnv"
        episodes = runner.sample(num_timesteps=20, random_actions=True)
        assert sum(len(e) for e in episodes) >= 20
    finally:
        runner.stop()
    assert marlhub.make_vec is not None
