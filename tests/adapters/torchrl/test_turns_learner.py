"""TorchRL's VDN trains through the hub on a turn-based game with masks and on traffic.

TorchRL's own components, as its ``examples/multiagent/qmix_vdn.py`` wires them (a shared
per-agent Q network, masked ``QValueModule`` and epsilon-greedy, ``VDNMixer``,
``QMixerLoss``, its collector), over ``to_torchrl`` of a turn-based game (tic-tac-toe:
one group, the non-acting player's ``mask`` False and its action ignored, the legal
moves in ``action_mask``) and of ``traffic`` (a mixed team: VDN trains the ``car`` group,
whose cars leave and join, and the light plays random moves). The rewards the collector
saw, step by step, are a plain ``marlhub.make`` replay's of the same actions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from tensordict.nn import TensorDictModule  # noqa: E402
import torchrl.collectors  # noqa: E402
from torchrl.data import Composite  # noqa: E402
from torchrl.envs import InitTracker, TransformedEnv  # noqa: E402
from torchrl.modules import EGreedyModule, QValueModule, SafeSequential  # noqa: E402
from torchrl.modules.models.multiagent import MultiAgentMLP, VDNMixer  # noqa: E402
from torchrl.objectives import SoftUpdate, ValueEstimators  # noqa: E402
from torchrl.objectives.multiagent.qmixer import QMixerLoss  # noqa: E402

from marlhub.adapters.torchrl import to_torchrl  # noqa: E402

Collector = getattr(torchrl.collectors, "Collector", None) or getattr(torchrl.collectors,
                                                                       "SyncDataCollector")


class RandomMoves(torch.nn.Module):
    """The other groups' moves: uniformly random (traffic's light has no mask)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, observation: Any) -> Any:
        return torch.randint(0, self.n, observation.shape[:-1])


@pytest.mark.filterwarnings("ignore:TensorDict.to_module\\(\\) is replacing:FutureWarning")
@pytest.mark.parametrize("env_id, group", [("openspiel/tic_tac_toe", "agents"),
                                           ("traffic", "car")])
def test_vdn_trains_on_turns_and_the_collector_sees_the_hubs_rewards(env_id: str,
                                                                      group: str) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    torch.manual_seed(0)
    env = TransformedEnv(to_torchrl(marlhub.make(env_id)), InitTracker())
    env.set_seed(0)
    agents = env.group_map[group]
    spec = env.observation_spec[group, "observation"]
    masked = (group, "action_mask") in env.observation_spec.keys(True)
    n_actions = env.full_action_spec[group, "action"].space.n
    net = MultiAgentMLP(n_agent_inputs=spec.shape[-1], n_agent_outputs=n_actions,
                        n_agents=len(agents), centralised=False, share_params=True, depth=1,
                        num_cells=32)
    mask_key = (group, "action_mask") if masked else None
    as_float = TensorDictModule(lambda x: x.float(), in_keys=[(group, "observation")],
                                out_keys=[(group, "observation_float")])
    qnet = SafeSequential(
        as_float,
        TensorDictModule(net, in_keys=[(group, "observation_float")],
                         out_keys=[(group, "action_value")]),
        QValueModule(action_value_key=(group, "action_value"), action_mask_key=mask_key,
                     out_keys=[(group, "action"), (group, "action_value"),
                               (group, "chosen_action_value")],
                     spec=Composite({group: env.full_action_spec[group]}), action_space=None,
                     strict_shape=False))
    others = [TensorDictModule(RandomMoves(env.full_action_spec[g, "action"].space.n),
                               in_keys=[(g, "observation")], out_keys=[(g, "action")])
              for g in env.group_map if g != group]
    explore = SafeSequential(qnet, EGreedyModule(eps_init=0.5, eps_end=0.1,
                                                 annealing_num_steps=200,
                                                 action_key=(group, "action"),
                                                 action_mask_key=mask_key,
                                                 spec=env.full_action_spec[group, "action"]),
                             *others)
    mixer = TensorDictModule(VDNMixer(n_agents=len(agents), device="cpu"),
                             in_keys=[(group, "chosen_action_value")],
                             out_keys=["chosen_action_value"])
    loss = QMixerLoss(qnet, mixer, delay_value=True)
    loss.set_keys(action_value=(group, "action_value"),
                  local_value=(group, "chosen_action_value"),
                  global_value="chosen_action_value", action=(group, "action"))
    loss.make_value_estimator(ValueEstimators.TD0, gamma=0.9)
    target = SoftUpdate(loss, eps=0.95)
    optim = torch.optim.Adam(loss.parameters(), 1e-3)
    before = [p.detach().clone() for p in net.parameters()]
    collector = Collector(env, explore, frames_per_batch=64, total_frames=192)
    batches = []
    for data in collector:
        batches.append(data.clone())
        data["next", "reward"] = data["next", group, "reward"].mean(-2)
        values = loss(data.reshape(-1))
        values["loss"].backward()
        optim.step()
        optim.zero_grad()
        target.step()
    collector.shutdown()
    assert any((a != b).any() for a, b in zip(before, net.parameters()))

    # Replay the acting agents' actions on a plain env: the same rewards, the same ends.
    steps = torch.cat(batches)
    plain = marlhub.make(env_id)
    plain.reset(seed=0)
    episodes = 0
    for t in range(len(steps)):
        actions = {}
        for g, members in env.group_map.items():
            acting = steps[g, "mask"][t].numpy()
            chosen = steps[g, "action"][t].numpy()
            actions.update({a: int(chosen[k]) for k, a in enumerate(members) if acting[k]})
        _, rewards, terms, truncs, _ = plain.step(actions)
        for g, members in env.group_map.items():
            seen = steps["next", g, "reward"][t].squeeze(-1).numpy()
            np.testing.assert_allclose(seen, [rewards.get(a, 0.0) for a in members],
                                       atol=1e-6, err_msg=f"step {t}, group {g}")
        ended = bool(steps["next", "done"][t].item())
        assert ended == bool(terms["__all__"] or truncs["__all__"])
        if ended:
            episodes += 1
            plain.reset()
    assert episodes >= 3
