"""Train RLlib's PPO on a marlhub env by name: one policy per player, returns per policy.

1. ``register_with_ray("tic_tac_toe")`` registers the marlhub id with Ray's
   registry as ``"marlhub/tic_tac_toe"``. The creator is picklable and resolves
   the id on each env runner, so the same line works on a Ray cluster.
2. ``PPOConfig().environment("marlhub/tic_tac_toe").multi_agent(...)`` maps each
   player to its own policy; RLlib's env runners build the env by name and run
   RLlib's own env checker on it.
3. A few training iterations; each prints every policy's mean episode return.

Any registry id works with ``--env``, e.g. ``--env traffic`` or
``--env openspiel/leduc_poker --env-config '{"illegal_action": "substitute",
"action_mask": "info"}'`` (RLlib's default model takes array observations and
ignores action masks: ``action_mask="info"`` moves the mask out of the
observation, ``illegal_action="substitute"`` plays a legal action in place of
an illegal one).

Run it with ``python examples/rllib_ppo_tic_tac_toe.py [--iterations 3]``
(needs ``pip install 'marlhub[rllib]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import marlhub  # noqa: E402
from marlhub.registry import register_with_ray  # noqa: E402


def build_config(env_id: str, env_config: dict[str, Any], *, num_env_runners: int) -> Any:
    """Return a small PPO config training one policy per agent of ``env_id``."""
    from ray.rllib.algorithms.ppo import PPOConfig

    (name,) = register_with_ray(env_id)
    agents = marlhub.make(env_id, env_config).possible_agents
    policies = {str(a) for a in agents}
    return (
        PPOConfig()
        .environment(name, env_config=env_config)
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=100)
        .multi_agent(policies=policies, policy_mapping_fn=_policy_of)
        .training(train_batch_size_per_learner=200, minibatch_size=100, num_epochs=2, lr=3e-4)
        .rl_module(model_config={"fcnet_hiddens": [32, 32]})
        .debugging(seed=0)
    )


def _policy_of(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    return str(agent_id)  # one policy per agent, named after it


def main(argv: Optional[list[str]] = None) -> int:
    """Train and print per-policy returns; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="tic_tac_toe", help="a marlhub registry id")
    parser.add_argument("--env-config", default="{}", help="the env's config, as JSON")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--env-runners", type=int, default=1)
    args = parser.parse_args(argv)

    import ray

    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    algo = build_config(
        args.env, json.loads(args.env_config), num_env_runners=args.env_runners
    ).build_algo()
    try:
        for iteration in range(1, args.iterations + 1):
            runners = algo.train()["env_runners"]
            returns = runners.get("module_episode_returns_mean", {})
            shown = ", ".join(f"{p}={float(r):+.2f}" for p, r in sorted(returns.items()))
            print(
                f"iteration {iteration}: {int(runners.get('num_episodes_lifetime', 0))} episodes "
                f"so far; mean return per policy: {shown}"
            )
    finally:
        algo.stop()
        if started_ray:
            ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
