"""sb3-contrib's MaskablePPO trains on one agent's Gymnasium view, reading its action masks.

A short real training: it ran, the policy was updated, no illegal action reached
the hub env (the view raises on one: ``illegal_action="raise"``), and the episode
returns the learner's ``Monitor`` saw are the agent's returns as the hub env paid
them. Skipped where sb3-contrib is not installed (the ``learners`` extra installs it).
"""

from __future__ import annotations

import pytest

import marlhub
from tests.adapters.recording import ReturnsRecorder


def test_maskable_ppo_trains_on_one_agents_view_of_a_masked_game() -> None:
    pytest.importorskip("pyspiel")
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor

    key = "maskable-ppo-tic-tac-toe"
    ReturnsRecorder.FINISHED[key] = []
    hub = ReturnsRecorder(marlhub.make("openspiel/tic_tac_toe"), key)
    view = marlhub.convert(hub, to="gymnasium", agent_id="player_0", illegal_action="raise")
    env = Monitor(view)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=128, batch_size=64, n_epochs=2, seed=0,
                        verbose=0)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(512)  # action_masks() of the view keep every move legal
    assert any(not (b == p).all() for b, p in zip(before, model.policy.parameters()))
    seen = env.get_episode_rewards()
    paid = [episode["player_0"] for episode in ReturnsRecorder.FINISHED[key]]
    assert len(seen) >= 50 and seen == paid[:len(seen)]
    env.close()
