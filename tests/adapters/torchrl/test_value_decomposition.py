"""A value-decomposition learner trains through the hub: TorchRL's QMIX (and VDN) on MPE2.

TorchRL's own components, as its ``examples/multiagent/qmix_vdn.py`` wires them: a shared
per-agent Q network (``MultiAgentMLP``, ``QValueModule``, epsilon-greedy), a mixer
(``QMixer``, conditioned on the global state that the hub's TorchRL view carries at the
root under ``"state"``: MPE2's own ``state()``; or ``VDNMixer``), ``QMixerLoss`` with a
target network, its single-process collector and a replay buffer. A short run: it collects,
the mixer and the agents' network change, and the episode returns the collector saw are
the hub env's (a plain replay of the same actions through ``marlhub.make``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")
pytest.importorskip("mpe2")

from tensordict.nn import TensorDictModule  # noqa: E402
import torchrl.collectors  # noqa: E402
from torchrl.data import TensorDictReplayBuffer  # noqa: E402
from torchrl.data.replay_buffers.storages import LazyTensorStorage  # noqa: E402
from torchrl.envs import InitTracker, TransformedEnv  # noqa: E402
from torchrl.modules import EGreedyModule, QValueModule, SafeSequential  # noqa: E402
from torchrl.modules.models.multiagent import MultiAgentMLP, QMixer, VDNMixer  # noqa: E402
from torchrl.objectives import SoftUpdate, ValueEstimators  # noqa: E402
from torchrl.objectives.multiagent.qmixer import QMixerLoss  # noqa: E402

from marlhub.adapters.torchrl import to_torchrl  # noqa: E402

#: TorchRL 0.14 names its single-process collector ``Collector`` (0.13: ``SyncDataCollector``).
Collector = getattr(torchrl.collectors, "Collector", None) or getattr(torchrl.collectors,
                                                                       "SyncDataCollector")

ENV_ID, CONFIG = "mpe2/simple_spread-v3", {"api": "parallel", "max_cycles": 25}


def _parameters(module: Any) -> list[Any]:
    return [p.detach().clone() for p in module.parameters()]


# tensordict 0.13 (the oldest end) announces a change of its own to_module() when QMixerLoss
# builds its target network: its noise, not ours.
@pytest.mark.filterwarnings("ignore:TensorDict.to_module\\(\\) is replacing:FutureWarning")
@pytest.mark.parametrize("mixer_type", ["qmix", "vdn"])
def test_qmix_and_vdn_train_on_the_hubs_torchrl_view_with_its_global_state(mixer_type: str) -> None:
    torch.manual_seed(0)
    hub = marlhub.make(ENV_ID, CONFIG)
    # InitTracker: TorchRL's Q-value modules ask for the "is_init" key it writes
    env = TransformedEnv(to_torchrl(hub), InitTracker())
    env.set_seed(0)
    n_agents = len(env.group_map["agents"])
    assert env.observation_spec["state"].shape == hub.state_space.shape  # the hub's state

    net = MultiAgentMLP(n_agent_inputs=env.observation_spec["agents", "observation"].shape[-1],
                        n_agent_outputs=env.full_action_spec["agents", "action"].space.n,
                        n_agents=n_agents, centralised=False, share_params=True, depth=1,
                        num_cells=32)
    qnet = SafeSequential(
        TensorDictModule(net, in_keys=[("agents", "observation")],
                         out_keys=[("agents", "action_value")]),
        QValueModule(action_value_key=("agents", "action_value"),
                     out_keys=[env.action_key, ("agents", "action_value"),
                               ("agents", "chosen_action_value")],
                     spec=env.full_action_spec, action_space=None,
                     # TorchRL 0.13 checks the per-agent actions against the group's batch
                     # twice over ([3] vs [3, 3]) and warns; 0.14 checks them right
                     strict_shape=False))
    explore = SafeSequential(qnet, EGreedyModule(eps_init=0.5, eps_end=0.1,
                                                 annealing_num_steps=400,
                                                 action_key=env.action_key,
                                                 spec=env.full_action_spec))
    if mixer_type == "qmix":
        mixer = TensorDictModule(QMixer(state_shape=hub.state_space.shape, mixing_embed_dim=8,
                                        n_agents=n_agents, device="cpu"),
                                 in_keys=[("agents", "chosen_action_value"), "state"],
                                 out_keys=["chosen_action_value"])
    else:
        mixer = TensorDictModule(VDNMixer(n_agents=n_agents, device="cpu"),
                                 in_keys=[("agents", "chosen_action_value")],
                                 out_keys=["chosen_action_value"])
    loss = QMixerLoss(qnet, mixer, delay_value=True)
    loss.set_keys(action_value=("agents", "action_value"),
                  local_value=("agents", "chosen_action_value"),
                  global_value="chosen_action_value", action=env.action_key)
    loss.make_value_estimator(ValueEstimators.TD0, gamma=0.9)
    target = SoftUpdate(loss, eps=0.95)
    optim = torch.optim.Adam(loss.parameters(), 1e-3)
    before, mixer_before = _parameters(qnet), _parameters(mixer)

    collector = Collector(env, explore, frames_per_batch=100, total_frames=300)
    buffer = TensorDictReplayBuffer(storage=LazyTensorStorage(300), batch_size=32)
    batches = []
    for data in collector:
        batches.append(data.clone())
        data["next", "reward"] = data["next", env.reward_key].mean(-2)  # the team's reward
        del data["next", env.reward_key]
        buffer.extend(data.reshape(-1))
        for _ in range(4):
            values = loss(buffer.sample())
            values["loss"].backward()
            optim.step()
            optim.zero_grad()
            target.step()
    collector.shutdown()
    assert any((a != b).any() for a, b in zip(before, qnet.parameters()))
    if mixer_type == "qmix":  # the mixer's hypernetworks read the state, and they learned
        assert mixer_before and any((a != b).any()
                                    for a, b in zip(mixer_before, mixer.parameters()))

    # The returns the collector saw are the hub env's: replay its actions on a plain env.
    steps = torch.cat(batches)
    rewards = steps["next", "agents", "reward"].squeeze(-1).numpy()
    actions = steps["agents", "action"].numpy()
    ends = steps["next", "done"].squeeze(-1).numpy()
    plain = marlhub.make(ENV_ID, CONFIG)
    plain.reset(seed=0)
    agents = list(env.group_map["agents"])
    episode_returns, hub_returns = np.zeros(n_agents), []
    for t in range(len(steps)):
        _, r, terminated, truncated, _ = plain.step({a: int(actions[t, k])
                                                     for k, a in enumerate(agents)})
        np.testing.assert_allclose(rewards[t], [r[a] for a in agents], rtol=1e-5, atol=1e-6)
        episode_returns += rewards[t]
        if ends[t]:
            assert terminated["__all__"] or truncated["__all__"]
            hub_returns.append(episode_returns.copy())
            episode_returns = np.zeros(n_agents)
            plain.reset()
    assert len(hub_returns) == 300 // 25
