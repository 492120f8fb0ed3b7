"""``to_pufferlib``: a native PufferEnv that PufferLib's own vector envs run, against a plain replay.

``pufferlib.vector.Serial`` and ``Multiprocessing`` (real worker processes) run
``to_pufferlib`` envs; every row of their buffers is compared with
:class:`tests.learners.replay.SlotReplay` (plain envs), and the agent returns in their
infos with the plain envs' returns. PufferLib's own trainer needs its CUDA extension, so a
short PPO loop of its kind (masked logits, GAE over the buffers' terminals) trains through
``Multiprocessing`` on CPU instead.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

from marlhub.learners import to_pufferlib
from tests.learners.replay import SlotReplay

pufferlib = pytest.importorskip("pufferlib")
vector = pytest.importorskip("pufferlib.vector")


def backends() -> list[Any]:
    return [pytest.param(vector.Serial, {}, id="Serial"),
            pytest.param(vector.Multiprocessing, {"num_workers": 2}, id="Multiprocessing")]


@pytest.mark.parametrize("backend, options", backends())
@pytest.mark.parametrize("env_id", ["traffic", "openspiel/tic_tac_toe"])
def test_pufferlibs_vector_envs_hold_what_a_plain_replay_gives(env_id: str, backend: Any,
                                                               options: dict[str, Any]) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    envs = 4
    venv = vector.make(functools.partial(to_pufferlib, env_id), backend=backend,
                       num_envs=envs, seed=0, **options)
    driver = to_pufferlib(env_id)
    # PufferLib's seeds: Serial resets env i with seed + i; Multiprocessing resets worker w's
    # envs with seed + w + (their index in the worker)
    per_worker = envs // options.get("num_workers", 1)
    seeds = [i if backend is vector.Serial else i // per_worker + i % per_worker
             for i in range(envs)]
    replay = SlotReplay(env_id, envs, driver.slots.agents, True, seed=0, seeds=seeds)
    size = driver.mask_size
    driver.close()
    try:
        venv.async_reset(0)
        replay.reset()
        obs, rewards, terminals, truncations, _, infos, _, masks = venv.recv()
        returns: list[float] = []
        for _ in range(150):
            expected = replay.expected
            for k, row in enumerate(expected["obs"]):
                np.testing.assert_allclose(obs[k, :-size], row, err_msg=f"row {k}")
            np.testing.assert_array_equal(obs[:, -size:], replay.masks(size))
            assert set(np.flatnonzero(terminals | truncations)) == expected.get("done", set())
            np.testing.assert_array_equal(masks, np.array(expected["alive"])
                                          | (terminals | truncations))
            actions = replay.slot_actions()
            replay.step(actions)
            venv.send(actions.astype(np.int32))
            obs, rewards, terminals, truncations, _, infos, _, masks = venv.recv()
            np.testing.assert_allclose(rewards, replay.expected_rewards, atol=1e-6)
            returns += [info["episode_return"] for info in infos]
        hub = [r for _, r in replay.episodes]
        assert len(returns) == len(hub) > 4
        assert sorted(returns) == pytest.approx(sorted(hub), abs=1e-4)
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", ["traffic", "openspiel/tic_tac_toe", "rock_paper_scissors"])
def test_a_ppo_loop_trains_through_multiprocessing(env_id: str) -> None:
    """A mixed team whose agents come and go, a turn-based game with masks, a simultaneous
    game: the policy reads each row's mask from its observation, so every action is legal."""
    torch = pytest.importorskip("torch")
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    torch.manual_seed(0)
    # one worker: PufferLib's workers poll without sleeping, and this machine may have 2 cores
    venv = vector.make(functools.partial(to_pufferlib, env_id), backend=vector.Multiprocessing,
                       num_envs=2, num_workers=1, seed=0)
    n, size = venv.single_action_space.n, venv.single_observation_space.shape[0]
    policy = torch.nn.Sequential(torch.nn.Linear(size, 32), torch.nn.Tanh(),
                                 torch.nn.Linear(32, n + 1))
    before = [p.detach().clone() for p in policy.parameters()]
    optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)
    horizon, rows = 16, venv.num_agents
    returns: list[float] = []
    try:
        venv.async_reset(0)
        obs = venv.recv()[0]
        for _ in range(2):
            batch: dict[str, list[Any]] = {k: [] for k in ("obs", "act", "logp", "val", "rew",
                                                            "done")}
            for _ in range(horizon):
                x = torch.as_tensor(obs.copy())
                out = policy(x)
                logits = out[:, :n].masked_fill(x[:, -n:] == 0, -1e9)  # the mask in the obs
                dist = torch.distributions.Categorical(logits=logits)
                action = dist.sample()
                venv.send(action.numpy().astype(np.int32))
                obs, rewards, terminals, truncations, _, infos, _, _ = venv.recv()
                returns += [info["episode_return"] for info in infos]
                for key, value in (("obs", x), ("act", action), ("logp", dist.log_prob(action)),
                                   ("val", out[:, n]), ("rew", torch.as_tensor(rewards.copy())),
                                   ("done", torch.as_tensor(terminals | truncations).float())):
                    batch[key].append(value.detach())
            data = {k: torch.stack(v) for k, v in batch.items()}
            advantages = torch.zeros(horizon, rows)
            last = torch.zeros(rows)
            for t in reversed(range(horizon)):
                following = data["val"][t + 1] if t + 1 < horizon else torch.zeros(rows)
                delta = data["rew"][t] + 0.99 * following * (1 - data["done"][t]) - data["val"][t]
                last = delta + 0.99 * 0.95 * (1 - data["done"][t]) * last
                advantages[t] = last
            for _ in range(2):
                out = policy(data["obs"].reshape(-1, size))
                x = data["obs"].reshape(-1, size)
                logits = out[:, :n].masked_fill(x[:, -n:] == 0, -1e9)
                logp = torch.distributions.Categorical(logits=logits).log_prob(
                    data["act"].reshape(-1))
                ratio = (logp - data["logp"].reshape(-1)).exp()
                adv = advantages.reshape(-1)
                loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean() + 0.5 * (
                    (out[:, n] - (adv + data["val"].reshape(-1))) ** 2).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        venv.close()
    assert any((a != b).any() for a, b in zip(before, policy.parameters()))
    assert returns  # agent episodes ended, every action legal (an illegal one would raise)
