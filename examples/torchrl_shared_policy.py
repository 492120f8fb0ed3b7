"""TorchRL and VMAS through the hub: a shared-policy PPO loop, and a VMAS scenario as PettingZoo.

1. **TorchRL training loop** (IPPO with one shared policy, as TorchRL's
   multi-agent PPO tutorial): a hub env (``vmas/navigation``, or any registry id
   with Box or Discrete actions) becomes a TorchRL env with
   ``to_torchrl(env, group_map=ALL_IN_ONE_GROUP)``: every agent in group
   ``"agents"``, one stacked tensor, one network whose parameters all agents
   share. TorchRL's ``Collector``, ``GAE`` and ``ClipPPOLoss`` do the rest;
   each iteration prints the mean reward per agent-step.
2. **A VMAS scenario used through PettingZoo's API**: ``marlhub.make("vmas/balance",
   to="pettingzoo.parallel")`` is a PettingZoo ``ParallelEnv``, and PettingZoo's own
   ``parallel_api_test`` passes on it.

Run it with ``python examples/torchrl_shared_policy.py [--iterations 10]`` (needs
``pip install 'marlhub[torchrl,vmas]'``).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import marlhub  # noqa: E402
from marlhub.adapters.torchrl import to_torchrl  # noqa: E402


def shared_policy_ppo(env_id: str, config: dict, iterations: int, frames: int) -> list[float]:
    """Train one policy shared by every agent of ``env_id``; return the mean reward per iteration."""
    import torch
    from tensordict.nn import TensorDictModule
    from tensordict.nn.distributions import NormalParamExtractor
    from torchrl.collectors import Collector
    from torchrl.envs.utils import MarlGroupMapType
    from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    torch.manual_seed(0)
    env = to_torchrl(marlhub.make(env_id, config), group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    env.set_seed(0)
    n_agents = len(env.group_map["agents"])
    obs_size = env.observation_spec["agents", "observation"].shape[-1]
    action_spec = env.full_action_spec["agents", "action"]
    # One network for all agents: share_params=True, no centralised input (IPPO).
    policy_net = torch.nn.Sequential(
        MultiAgentMLP(obs_size, 2 * action_spec.shape[-1], n_agents, centralised=False,
                      share_params=True, depth=2, num_cells=64, activation_class=torch.nn.Tanh),
        NormalParamExtractor())
    policy = ProbabilisticActor(
        TensorDictModule(policy_net, in_keys=[("agents", "observation")],
                         out_keys=[("agents", "loc"), ("agents", "scale")]),
        spec=action_spec, in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")], distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True, log_prob_key=("agents", "sample_log_prob"))
    critic = TensorDictModule(
        MultiAgentMLP(obs_size, 1, n_agents, centralised=False, share_params=True, depth=2,
                      num_cells=64, activation_class=torch.nn.Tanh),
        in_keys=[("agents", "observation")], out_keys=[("agents", "state_value")])
    collector = Collector(env, policy, frames_per_batch=frames,
                                  total_frames=frames * iterations,
                                  auto_register_policy_transforms=False)
    loss = ClipPPOLoss(actor_network=policy, critic_network=critic, entropy_coeff=1e-3)
    loss.set_keys(reward=("agents", "reward"), action=("agents", "action"),
                  sample_log_prob=("agents", "sample_log_prob"), value=("agents", "state_value"),
                  done=("agents", "done"), terminated=("agents", "terminated"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.9)
    optimizer = torch.optim.Adam(loss.parameters(), 3e-4)
    means = []
    for batch in collector:
        # The agents' done flags, for GAE: the root's, expanded over the agent dimension.
        for key in ("done", "terminated"):
            batch.set(("next", "agents", key), batch.get(("next", key)).unsqueeze(-1).expand(
                batch.get(("next", "agents", "reward")).shape))
        with torch.no_grad():
            loss.value_estimator(batch, params=loss.critic_network_params,
                                 target_params=loss.target_critic_network_params)
        for _ in range(4):
            losses = loss(batch.reshape(-1))
            total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
            total.backward()
            torch.nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
        collector.update_policy_weights_()
        means.append(float(batch.get(("next", "agents", "reward")).mean()))
        print(f"iteration {len(means)}: mean reward per agent-step {means[-1]:+.4f}")
    collector.shutdown()
    return means


def vmas_as_pettingzoo() -> Any:
    """A VMAS scenario through the hub as a PettingZoo parallel env, checked by PettingZoo."""
    from pettingzoo.test import parallel_api_test

    env = marlhub.make("vmas/balance", {"max_steps": 30}, to="pettingzoo.parallel")
    parallel_api_test(env, num_cycles=40)
    print(f"PettingZoo's parallel_api_test passed on vmas/balance: agents {env.possible_agents}")
    return env


def main(argv: Optional[list[str]] = None) -> int:
    """Train briefly with a shared policy, then check VMAS through PettingZoo; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--frames", type=int, default=1000, help="frames per iteration")
    args = parser.parse_args(argv)
    logging.getLogger("torchrl").setLevel(logging.WARNING)
    shared_policy_ppo("vmas/navigation", {"n_agents": 3, "max_steps": 100}, args.iterations,
                      args.frames)
    vmas_as_pettingzoo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
