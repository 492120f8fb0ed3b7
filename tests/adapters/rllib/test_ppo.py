"""RLlib trains on marlhub envs by name: one PPO iteration on a turn-based env, and the example.

One small Ray instance for the module (2 CPUs, no dashboard); the env runner is
a remote actor, so the env is built from its registered name in another
process, through the picklable creator of ``register_with_ray``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

from ray.rllib.algorithms.ppo import PPOConfig  # noqa: E402

from marlhub.adapters.rllib import register_with_ray  # noqa: E402
from tests.adapters.rllib.ray_session import (  # noqa: E402
    assert_both_policies_learned,
    by_player,
    flattening_ppo_config,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "rllib_ppo_tic_tac_toe.py"


def test_one_ppo_iteration_on_a_turn_based_env(ray_instance: None) -> None:
    (name,) = register_with_ray("tic_tac_toe")
    config = (
        PPOConfig()
        .environment(name, env_config={"max_steps": 20})
        .env_runners(num_env_runners=1, rollout_fragment_length=64)
        .multi_agent(policies={"first", "second"}, policy_mapping_fn=by_player)
        .training(train_batch_size_per_learner=128, minibatch_size=64, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [8]})
        .debugging(seed=0)
    )
    algo = config.build_algo()
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert_both_policies_learned(result)


def test_example_prints_per_policy_returns(
    ray_instance: None, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = importlib.util.spec_from_file_location("rllib_ppo_tic_tac_toe", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--iterations", "1", "--env-runners", "0"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("iteration 1: ")
    assert "mean return per policy: player1=" in line and ", player2=" in line


def _one_flattening_iteration(config: Any, batch: int) -> dict[str, Any]:
    """One ``train()`` of the guide's flattening PPO config, with batches of ``batch`` steps."""
    algo = (config.env_runners(rollout_fragment_length=batch)
            .training(train_batch_size_per_learner=batch, minibatch_size=batch // 2,
                      num_epochs=1)
            .debugging(seed=0)).build_algo()
    try:
        return algo.train()
    finally:
        algo.stop()


def test_one_ppo_iteration_on_masked_dict_observations(ray_instance: None) -> None:
    # The RLlib guide's config: RLlib's FlattenObservations connector feeds PPO's module.
    pytest.importorskip("pyspiel")
    result = _one_flattening_iteration(flattening_ppo_config("openspiel/kuhn_poker"), 64)
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 64
    assert set(result["learners"]) >= {"player_0", "player_1"}


@pytest.mark.parametrize("env_id", ["traffic", "rock_paper_scissors"])
def test_ppo_trains_and_its_metrics_hold_the_hubs_returns(env_id: str,
                                                          ray_instance: None) -> None:
    """A mixed team whose cars leave and join (one policy per agent), and a simultaneous
    game: one PPO iteration with the local env runner, whose per-agent episode returns (its
    own metrics) are the means of what the hub env paid in the episodes it finished."""
    from ray.tune.registry import register_env

    import marlhub
    from marlhub.adapters.rllib import to_rllib
    from tests.adapters.recording import ReturnsRecorder

    key = f"rllib-ppo-{env_id}"
    ReturnsRecorder.FINISHED[key] = []
    name = f"recorded/{env_id}"
    register_env(name, lambda config: to_rllib(ReturnsRecorder(marlhub.make(env_id), key)))
    result = _one_flattening_iteration(flattening_ppo_config(env_id).environment(name), 128)
    agents = marlhub.make(env_id).possible_agents
    assert set(result["learners"]) >= set(agents)  # every agent's policy learned
    paid = ReturnsRecorder.FINISHED[key]
    assert paid, "no episode finished"
    seen = result["env_runners"]["agent_episode_returns_mean"]
    for agent in agents:
        returns = [episode[agent] for episode in paid]
        assert seen[agent] == pytest.approx(sum(returns) / len(returns), abs=1e-4), agent
