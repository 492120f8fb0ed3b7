"""TorchRL -> hub: any TorchRL multi-agent EnvBase, checked against the env it came from.

* Views made by to_torchrl, read back generically (not unwrapped), replay the
  hub env's own episodes exactly: observations, rewards, done flags, turn order.
* TorchRL's VmasEnv read through its tensordicts matches native VMAS in lockstep
  (VMAS's own reset/step), and the fast path through VMAS does too.
* TorchRL's PettingZooWrapper around real PettingZoo envs keeps every agent's
  return (to float32, TorchRL's reward dtype) against PettingZoo's own loop.
* The hub contract holds (the conformance suite), and bad inputs get clear errors.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torchrl")
vmas = pytest.importorskip("vmas")
pettingzoo = pytest.importorskip("pettingzoo")

import torch  # noqa: E402
from torchrl.envs.libs.gym import GymEnv  # noqa: E402
from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402
from torchrl.envs.libs.vmas import VmasEnv  # noqa: E402
from torchrl.envs.utils import MarlGroupMapType  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402
from marlhub.adapters.torchrl import from_torchrl, to_torchrl  # noqa: E402
from marlhub.adapters.torchrl.adapter import TorchRLHubEnv  # noqa: E402
from marlhub.adapters.vmas.adapter import VmasHubEnv  # noqa: E402
from marlhub.adapters.vmas.lockstep import compare_with_native  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.episode.play import RandomEpisode  # noqa: E402
from marlhub.errors import ActionError, ConfigError, ProtocolError, ResetNeededError  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested:UserWarning"),
]

HUB_IDS = ["tic_tac_toe", "rock_paper_scissors", "traffic", "openspiel/leduc_poker",
           "pettingzoo/classic/connect_four-v3"]


def _trajectory(env: Any, seed: int) -> list[tuple[Any, ...]]:
    """Who acts, what they see, the rewards paid and who is done, step by step.

    TorchRL has one reward slot per agent, so "no entry" and "0" are one thing there:
    rewards are compared by their nonzero entries, as float32 (TorchRL's reward dtype).
    """
    run = RandomEpisode(env, seed, max_steps=300)
    return [(list(s.obs), s.obs, {a: np.float32(r) for a, r in sorted(s.rewards.items()) if r},
             {a: f for a, f in s.terminateds.items() if f or a == "__all__"},
             {a: f for a, f in s.truncateds.items() if f or a == "__all__"}) for s in run]


def _unmasked(obs: dict) -> dict:
    return {a: {k: v for k, v in o.items() if k != "action_mask"} if isinstance(o, dict) else o
            for a, o in obs.items()}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


@pytest.mark.parametrize("env_id", HUB_IDS)
def test_a_view_read_back_generically_replays_the_hub_env(env_id: str) -> None:
    for group_map in (None, MarlGroupMapType.ONE_GROUP_PER_AGENT):
        read_back = TorchRLHubEnv(to_torchrl(marlhub.make(env_id), group_map=group_map))
        hub = marlhub.make(env_id)
        assert read_back.possible_agents == hub.possible_agents
        for seed in range(3):
            ours, theirs = _trajectory(read_back, seed), _trajectory(hub, seed)
            # Rewards cross TorchRL as float32, so both sides are compared as float32.
            assert _same(ours[:-1], theirs[:-1]), (env_id, group_map, seed)
            # At the end TorchRL holds every agent's last observation and done flags, so
            # every agent that was live gets them (as PettingZoo's agents do); the ones
            # the hub env named are the same.
            (_, obs, rewards, terms, truncs), (_, hub_obs, hub_rewards, hub_terms, hub_truncs) = (
                ours[-1], theirs[-1])
            # (Its action masks there are all True: TorchRL's specs need a legal action.)
            assert _same(_unmasked({a: obs[a] for a in hub_obs}), _unmasked(hub_obs))
            assert rewards == hub_rewards
            assert (terms["__all__"], truncs["__all__"]) == (hub_terms["__all__"],
                                                             hub_truncs["__all__"])


@pytest.mark.parametrize("scenario,config", [
    ("balance", {}), ("navigation", {"n_agents": 2}), ("simple_tag", {}),
    ("simple_crypto", {"continuous_actions": False}), ("football", {}),
])
def test_vmas_through_torchrl_matches_native_vmas(scenario: str, config: dict) -> None:
    cfg = {"max_steps": 15, **config}
    generic = from_torchrl(VmasEnv(scenario, num_envs=1, **cfg), through_vmas=False)
    fast = from_torchrl(VmasEnv(scenario, num_envs=1, **cfg))
    assert isinstance(generic, TorchRLHubEnv) and isinstance(fast, VmasHubEnv)
    assert generic.possible_agents == fast.possible_agents
    assert generic.action_spaces == fast.action_spaces
    for env in (generic, fast):
        assert compare_with_native(env, lambda: vmas.make_env(scenario, num_envs=1, **cfg),
                                   episodes=2) == []


def test_vmas_time_limit_is_truncation_on_the_fast_path() -> None:
    """TorchRL's VmasEnv reports VMAS's max_steps as terminated; the hub says truncated."""
    fast = from_torchrl(VmasEnv("balance", num_envs=1, max_steps=3))
    generic = from_torchrl(VmasEnv("balance", num_envs=1, max_steps=3), through_vmas=False)
    last_fast = list(RandomEpisode(fast, 0))[-1]
    last_generic = list(RandomEpisode(generic, 0))[-1]
    assert last_fast.truncateds["__all__"] and not last_fast.terminateds["__all__"]
    assert last_generic.terminateds["__all__"]  # what TorchRL itself reports


def _native_returns(make: Any, api: str, seed: int, actions: list[dict]) -> dict[str, float]:
    """Replay ``actions`` in PettingZoo's own loop, seeded as PettingZooWrapper seeds.

    PettingZooWrapper.set_seed(s) resets with s, and the episode is the next reset's
    (TorchRL's convention: set_seed, then reset): a reset(seed=s) then a reset().
    """
    env = make()
    sums: dict[str, float] = defaultdict(float)
    env.reset(seed=seed)
    if api == "parallel":
        env.reset()
        for joint in actions:
            _, rewards, *_ = env.step(joint)
            for agent, reward in rewards.items():
                sums[agent] += reward
        return dict(sums)
    env.reset()
    pending = iter(a for joint in actions for a in joint.items())
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
        else:
            acting, action = next(pending)
            assert acting == agent
            env.step(action)
        for who, reward in env.rewards.items():
            sums[who] += reward
    return dict(sums)


@pytest.mark.parametrize("api,name,kwargs", [
    ("aec", "classic/tictactoe-v3", {}), ("aec", "classic/leduc_holdem-v4", {}),
    ("aec", "classic/texas_holdem-v4", {}), ("parallel", "classic/rps-v2", {}),
    ("parallel", "butterfly/pistonball-v6", {"max_cycles": 15}),
])
def test_pettingzoo_wrapper_into_the_hub_keeps_every_return(api: str, name: str,
                                                            kwargs: dict) -> None:
    def make() -> Any:
        return pettingzoo_make(api, name, **kwargs)

    env = from_torchrl(PettingZooWrapper(make(), use_mask=True))
    assert isinstance(env, TorchRLHubEnv)
    for seed in range(3):
        run = RandomEpisode(env, seed, max_steps=500)
        sums: dict[str, float] = defaultdict(float)
        for step in run:
            for agent, reward in step.rewards.items():
                sums[agent] += reward
        native = _native_returns(make, api, seed, run.actions)
        assert sums.keys() == native.keys()
        for agent, value in native.items():
            assert sums[agent] == pytest.approx(value, rel=1e-5, abs=1e-5), (seed, agent)


@pytest.mark.parametrize("make", [
    lambda: from_torchrl(VmasEnv("navigation", num_envs=1, max_steps=20), through_vmas=False),
    lambda: TorchRLHubEnv(to_torchrl(marlhub.make("traffic"))),
    lambda: from_torchrl(PettingZooWrapper(pettingzoo_make("aec", "classic/tictactoe-v3"),
                                           use_mask=True)),
], ids=["vmas", "traffic_view", "pettingzoo_tictactoe"])
def test_conforms_to_the_contract(make: Any) -> None:
    report = check(make, episodes=4, name="from_torchrl")
    assert report.ok, str(report)


def test_bad_actions_are_refused_and_change_nothing() -> None:
    env = TorchRLHubEnv(to_torchrl(marlhub.make("openspiel/tic_tac_toe")))
    with pytest.raises(ResetNeededError):
        env.step({"player_0": 0})
    obs, _ = env.reset(seed=0)
    (mover,) = obs
    idle = next(a for a in env.possible_agents if a != mover)
    with pytest.raises(ActionError, match="expected actions only for the actors"):
        env.step({idle: 0})
    with pytest.raises(ActionError, match="expected an action in Discrete"):
        env.step({mover: 9})
    env.step({mover: 4})
    (mover, idle) = (idle, mover)
    with pytest.raises(ActionError, match="action 4 is masked out"):
        env.step({mover: 4})
    with pytest.raises(ActionError, match="an action for every actor"):
        env.step({})
    obs2, *_ = env.step({mover: 0})  # the refused steps applied nothing
    assert list(obs2) == [idle] and obs2[idle]["action_mask"].tolist() == [0, 1, 1, 1, 0, 1, 1, 1, 1]


def test_batched_envs_are_vector_envs_and_single_agent_envs_are_refused_clearly() -> None:
    from torchrl.envs import SerialEnv

    from marlhub.vector import BatchedVectorEnv

    assert isinstance(from_torchrl(VmasEnv("balance", num_envs=3)), BatchedVectorEnv)
    nested = SerialEnv(2, lambda: VmasEnv("balance", num_envs=2))  # batch_size [2, 2]
    with pytest.raises(ConfigError, match=r"batch_size=\[2, 2\]; a vector env has one batch "
                                          "dimension"):
        from_torchrl(nested)
    nested.close()
    with pytest.raises(ProtocolError, match="group_map"):
        from_torchrl(GymEnv("CartPole-v1"))
    with pytest.raises(ProtocolError, match="Expected a TorchRL multi-agent env"):
        from_torchrl(object())


def test_make_and_to_hub_reach_it() -> None:
    native = VmasEnv("balance", num_envs=1, max_steps=5)
    assert isinstance(marlhub.convert(native, to="marlhub"), VmasHubEnv)
    aec = marlhub.convert(PettingZooWrapper(pettingzoo_make("parallel", "classic/rps-v2")),
                          to="pettingzoo.parallel")
    obs, _ = aec.reset(seed=0)
    assert sorted(obs) == ["player_0", "player_1"]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a CUDA device"))])
def test_a_batched_torchrl_env_takes_torch_actions_on_its_device(device: str) -> None:
    """Through TorchRL's own step (not VMAS's), torch actions on the env's device step the
    copies as the same numpy actions do."""
    def make() -> Any:
        return from_torchrl(VmasEnv("balance", num_envs=3, max_steps=4, device=device),
                            through_vmas=False)

    with make() as envs, make() as twin:
        envs.reset_arrays(seed=0)
        twin.reset_arrays(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(3):
            actions = rng.uniform(-1, 1, (3, 3, 2)).astype(np.float32)
            ours = envs.step_arrays({"agents": torch.as_tensor(actions, device=device)})
            theirs = twin.step_arrays({"agents": actions})
            assert np.array_equal(ours.obs["agents"], theirs.obs["agents"])
            assert np.array_equal(ours.rewards["agents"], theirs.rewards["agents"])
