"""VMAS -> hub: VmasHubEnv over vmas.make_env(num_envs=1), its semantics and its errors."""

from __future__ import annotations

import numpy as np
import pytest

vmas = pytest.importorskip("vmas")

import marlhub  # noqa: E402
from marlhub.adapters.vmas import from_vmas, is_vmas_env  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.episode.play import RandomEpisode  # noqa: E402
from marlhub.errors import ActionError, ConfigError, ResetNeededError  # noqa: E402


def _still(env: marlhub.MultiAgentEnv) -> dict:
    return {a: np.zeros(env.action_spaces[a].shape, np.float32) for a in env.possible_agents}


@pytest.mark.parametrize("scenario,config", [
    ("balance", {}), ("simple_adversary", {"continuous_actions": False}),
    ("navigation", {"n_agents": 3, "multidiscrete_actions": True, "continuous_actions": False}),
    ("flocking", {"dict_spaces": True}), ("give_way", {"terminated_truncated": True}),
])
def test_conforms_to_the_contract(scenario: str, config: dict) -> None:
    def make() -> marlhub.MultiAgentEnv:
        return from_vmas(vmas.make_env(scenario, num_envs=1, max_steps=25, **config))

    report = check(make, episodes=3, name=scenario)
    assert report.ok, str(report)


def test_seeds_give_vmas_episodes() -> None:
    env = marlhub.make("vmas/balance", {"max_steps": 10})
    first = [s.obs for s in RandomEpisode(env, 7)]
    again = [s.obs for s in RandomEpisode(env, 7)]
    other = [s.obs for s in RandomEpisode(env, 8)]
    assert all(np.array_equal(a["agent_0"], b["agent_0"]) for a, b in zip(first, again))
    assert not np.array_equal(first[0]["agent_0"], other[0]["agent_0"])


def test_values_are_numpy_and_floats_with_vmas_infos() -> None:
    env = marlhub.make("vmas/balance", {"max_steps": 2})
    obs, infos = env.reset(seed=0)
    assert all(o.dtype == np.float32 and o.shape == (16,) for o in obs.values())
    assert sorted(infos["agent_0"]) == ["ground_rew", "pos_rew"]
    obs, rewards, terminateds, truncateds, infos = env.step(_still(env))
    assert all(type(r) is float for r in rewards.values())
    assert terminateds == truncateds == {**dict.fromkeys(env.possible_agents, False),
                                         "__all__": False}
    *_, terminateds, truncateds, _ = env.step(_still(env))
    assert truncateds["__all__"] and not terminateds["__all__"] and env.agents == []
    with pytest.raises(ResetNeededError):
        env.step(_still(env))


def test_bad_actions_are_refused_and_change_nothing() -> None:
    env = marlhub.make("vmas/balance")
    obs, _ = env.reset(seed=0)
    with pytest.raises(ActionError, match="an action for every actor"):
        env.step({"agent_0": np.zeros(2, np.float32)})
    with pytest.raises(ActionError, match="above the high bound"):
        env.step({**_still(env), "agent_1": np.array([0.0, 5.0], np.float32)})
    with pytest.raises(ActionError, match="not an agent"):
        env.step({**_still(env), "agent_9": np.zeros(2, np.float32)})
    assert int(env.vmas_env.steps[0]) == 0  # VMAS never stepped


def test_many_copies_are_refused_with_a_pointer() -> None:
    native = vmas.make_env("balance", num_envs=4)
    assert is_vmas_env(native)
    with pytest.raises(ConfigError, match="num_envs=4 copies.*make_vec"):
        from_vmas(native)


@pytest.mark.parametrize("scenario", ["asym_joint", "football"])
def test_two_envs_stepped_in_turn_each_keep_their_seeded_stream(scenario: str) -> None:
    """VMAS shares one random state between all its envs in a process, so these scenarios,
    which draw in step, fail PettingZoo's seed_test natively (two envs, stepped in turn);
    each hub env keeps its own stream and passes."""
    from pettingzoo.test import seed_test

    from marlhub.adapters.pettingzoo import to_pettingzoo

    seed_test(lambda: to_pettingzoo(marlhub.make(f"vmas/{scenario}", {"max_steps": 20})),
              num_cycles=20)
    envs = [vmas.make_env(scenario, num_envs=1) for _ in range(2)]
    import torch

    actions = [torch.full((1, 2), 0.3) for _ in envs[0].agents]
    for env in envs:
        env.reset(seed=42)
    natively = [[env.step(actions)[0][0].tolist() for env in envs] for _ in range(5)]
    assert any(a != b for a, b in natively)
