"""Many copies of a multi-agent env in one call: lists of dicts, agent-slot arrays, RLlib.

1. ``marlhub.make_vec("traffic", 4, vectorization_mode="async")``: four copies of
   an env where cars enter and leave, in two worker processes. Each call takes
   and returns one dict per copy, exactly what four separate envs seeded
   ``seed + i`` would; a copy whose episode ends is reset in the next call.
2. ``AgentSlotVectorEnv``: the same kind of vector env (OpenSpiel's Kuhn poker)
   as arrays of shape ``(copies, agents, ...)``, with ``acting`` and
   ``action_mask`` arrays, as array learners take them.
3. ``--rllib``: one PPO iteration of RLlib sampling from the async vector env
   (``marlhub.learners.rllib_runner.VectorEnvRunner``, ``gym_env_vectorize_mode="async"``).

Run it with ``python examples/vector_envs.py [--steps 200] [--rllib]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import marlhub  # noqa: E402
from marlhub.episode import random_actions  # noqa: E402
from marlhub.spaces import ActionSampler  # noqa: E402
from marlhub.vector import AgentSlotVectorEnv  # noqa: E402


def lists_of_dicts(steps: int) -> dict[str, float]:
    """Play random legal actions in 4 async copies of traffic; return each agent's total reward."""
    sampler = ActionSampler(0)
    totals: dict[str, float] = {}
    with marlhub.make_vec("traffic", 4, vectorization_mode="async", num_workers=2) as envs:
        obs, infos = envs.reset(seed=0)
        episodes = 0
        for _ in range(steps):
            # envs.actors: who acts in each copy ([] for a copy being reset in this call).
            actions = [random_actions(actors, obs[i], infos[i], envs.envs[i].get_action_space,
                                      sampler) for i, actors in enumerate(envs.actors)]
            obs, rewards, terminateds, truncateds, infos = envs.step(actions)
            for copy_rewards in rewards:
                for agent, reward in copy_rewards.items():
                    totals[agent] = totals.get(agent, 0.0) + float(reward)
            episodes += sum(t["__all__"] or u["__all__"] for t, u in zip(terminateds, truncateds))
    print(f"traffic x4 (async): {steps} steps, {episodes} episodes, light's total reward "
          f"{totals.get('light', 0.0):+.1f}")
    return totals


def agent_slots(steps: int) -> int:
    """Play Kuhn poker as (copies, agents) arrays; return how many actions were taken."""
    with AgentSlotVectorEnv(marlhub.make_vec("openspiel/kuhn_poker", 8)) as envs:
        obs, infos = envs.reset(seed=0)
        rng = np.random.default_rng(0)
        taken = 0
        for _ in range(steps):
            # One action per slot: a random legal one where a slot acts, anything elsewhere.
            masks = infos["action_mask"]
            scores = rng.random(masks.shape) * masks
            obs, rewards, terminations, truncations, infos = envs.step(scores.argmax(axis=-1))
            taken += int(infos["acting"].sum())
        print(f"kuhn_poker x8 as slots: observation {obs['observation'].shape}, "
              f"rewards {rewards.shape}, {taken} actions taken")
    return taken


def rllib_iteration() -> dict[str, Any]:
    """One PPO iteration of RLlib sampling through the async vector env."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig

    from marlhub.registry import register_with_ray
    from marlhub.learners.rllib_runner import VectorEnvRunner

    (name,) = register_with_ray("tic_tac_toe")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = (
        PPOConfig()
        .environment(name, env_config={"max_steps": 20})
        .env_runners(num_env_runners=0, num_envs_per_env_runner=4,
                     env_runner_cls=VectorEnvRunner.with_options(num_workers=2),
                     gym_env_vectorize_mode="async", rollout_fragment_length=50)
        .multi_agent(policies={"player1", "player2"},
                     policy_mapping_fn=lambda agent_id, episode, **kwargs: str(agent_id))
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=1)
        .rl_module(model_config={"fcnet_hiddens": [16]})
    )
    algo = config.build_algo()
    try:
        runners = algo.train()["env_runners"]
    finally:
        algo.stop()
        if started:
            ray.shutdown()
    print(f"RLlib PPO on tic_tac_toe x4 (async): {runners['num_env_steps_sampled_lifetime']} "
          f"env steps, {runners['num_episodes_lifetime']} episodes")
    return dict(runners)


def main(argv: Optional[list[str]] = None) -> int:
    """Run the parts; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rllib", action="store_true", help="also run one PPO iteration")
    args = parser.parse_args(argv)
    lists_of_dicts(args.steps)
    agent_slots(args.steps)
    if args.rllib:
        rllib_iteration()
    return 0


if __name__ == "__main__":
    sys.exit(main())
