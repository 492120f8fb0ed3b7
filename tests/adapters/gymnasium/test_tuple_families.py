"""The lbforaging/ and rware/ families: EPyMARL's benchmarks in lockstep with the packages' envs."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("lbforaging", reason="the lbforaging/ family needs marlhub[epymarl]")
pytest.importorskip("rware", reason="the rware/ family needs marlhub[epymarl]")

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

import marlhub  # noqa: E402
from marlhub import ALL  # noqa: E402
from marlhub.adapters.gymnasium import (  # noqa: E402
    TupleAgentsEnv,
    TupleView,
    to_gymnasium_tuple,
)
from marlhub.adapters.gymnasium.family_tuple import LbforagingFamily, RwareFamily  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.context import EnvContext  # noqa: E402
from marlhub.contract.rules import SEED_REPRODUCIBLE  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402

#: (family id, Gymnasium id, config): short rware episodes (its own limit is 500 steps).
CASES = [
    ("lbforaging/Foraging-8x8-2p-3f-v3", "Foraging-8x8-2p-3f-v3", {}),
    ("lbforaging/Foraging-2s-10x10-3p-3f-coop-v3", "Foraging-2s-10x10-3p-3f-coop-v3", {}),
    ("rware/rware-tiny-2ag-v2", "rware-tiny-2ag-v2", {"max_steps": 40}),
    ("rware/rware-small-4ag-hard-v2", "rware-small-4ag-hard-v2", {"max_steps": 30}),
]


def play_both(hub: Any, native: gym.Env, seed: int) -> int:
    """Step the hub env and the package's own env with one seed and the same random actions.

    Observations, rewards and the end must be equal at every step; returns the steps.
    """
    agents = hub.possible_agents
    obs, _ = hub.reset(seed=seed)
    native_obs, _ = native.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for step in range(10_000):
        assert all(np.array_equal(obs[a], native_obs[i]) for i, a in enumerate(agents)), step
        actions = [int(rng.integers(space.n)) for space in native.action_space.spaces]
        obs, rewards, terminateds, truncateds, _ = hub.step(dict(zip(agents, actions)))
        native_obs, native_rewards, terminated, truncated, _ = native.step(tuple(actions))
        assert [rewards[a] for a in agents] == [float(r) for r in native_rewards], step
        assert (terminateds[ALL], truncateds[ALL]) == (bool(terminated), bool(truncated))
        if terminated or truncated:
            assert all(np.array_equal(obs[a], native_obs[i]) for i, a in enumerate(agents))
            return step + 1
    raise AssertionError("no end")


@pytest.mark.parametrize(("env_id", "gym_id", "config"), CASES, ids=[c[0] for c in CASES])
def test_the_family_steps_as_the_package_does(env_id: str, gym_id: str,
                                              config: dict[str, Any]) -> None:
    hub = marlhub.make(env_id, config or None)
    assert isinstance(hub, TupleAgentsEnv)
    native = gym.make(gym_id, disable_env_checker=True, **config)
    assert hub.possible_agents == [f"agent_{i}" for i in range(native.unwrapped.n_agents)]
    for seed in (0, 1):  # fresh envs each time (lbforaging: see its known fault)
        hub, native = marlhub.make(env_id, config or None), gym.make(
            gym_id, disable_env_checker=True, **config)
        assert play_both(hub, native, seed) > 1


@pytest.mark.parametrize(("env_id", "config"), [(c[0], c[2]) for c in CASES[::2]],
                         ids=[c[0] for c in CASES[::2]])
def test_registry_ids_conform_and_match_the_native_env(env_id: str, config: dict[str, Any]) -> None:
    report = check(env_id, episodes=2, against_native=True, config=config or None,
                   interop=("pettingzoo.parallel", "gymnasium"))
    assert report.ok and not [f for f in report.findings if f.severity == "error"], str(report)
    assert all(c.status in ("pass", "known-fault") for c in report.conversions), str(report)


def test_lbforagings_reset_is_known_not_to_reproduce_an_episode_on_a_used_env() -> None:
    native = gym.make("Foraging-8x8-2p-3f-v3", disable_env_checker=True)
    first, _ = native.reset(seed=0)
    rng = np.random.default_rng(0)
    terminated = False
    while not terminated:
        terminated = native.step(tuple(int(a) for a in rng.integers(0, 6, 2)))[2]
    again, _ = native.reset(seed=0)
    assert not all(np.array_equal(a, b) for a, b in zip(first, again))  # lbforaging's own doing
    assert SEED_REPRODUCIBLE in LbforagingFamily().known_faults("Foraging-8x8-2p-3f-v3")


def test_ids_come_from_the_packages_registrations() -> None:
    ids = dict(LbforagingFamily().ids())
    assert "lbforaging/Foraging-8x8-2p-3f-v3" in ids and "field_size=(8, 8)" in ids[
        "lbforaging/Foraging-8x8-2p-3f-v3"]
    assert "rware/rware-tiny-2ag-v2" in dict(RwareFamily().ids())
    assert "rware/rware-tiny-2ag-v2" in marlhub.registered("rware/*tiny-2ag*")
    with pytest.raises(UnknownEnvError, match="Did you mean 'rware/rware-tiny-2ag-v2'"):
        marlhub.make("rware/rware-tiny-2ag-v9")
    with pytest.raises(ConfigError, match=r"rejected the key 'sensor'.*'sensor_range'") as raised:
        marlhub.make("rware/rware-tiny-2ag-v2", {"sensor": 2})
    assert "num_agents" not in raised.value.accepted
    # Ids the package registers only when asked are registered when made.
    image = RwareFamily().make("rware-img-tiny-2ag-v2", EnvContext())
    assert image.get_observation_space("agent_0").shape[0] > 1


def test_the_gymnasium_family_and_from_gymnasium_see_the_team() -> None:
    assert marlhub.make("gymnasium/Foraging-8x8-2p-3f-v3").possible_agents == [
        "agent_0", "agent_1"]
    assert marlhub.make("gymnasium/rware-tiny-2ag-v2", {"agents": "copies"}).possible_agents \
        == [0]
    native = gym.make("rware-tiny-2ag-v2", disable_env_checker=True)
    hub = marlhub.convert(native)
    assert isinstance(hub, TupleAgentsEnv) and hub.env is native
    assert to_gymnasium_tuple(hub) is native and marlhub.convert(native, to="gymnasium.tuple") \
        is native


@pytest.mark.parametrize(("env_id", "gym_id", "config"), [CASES[0], CASES[2]],
                         ids=[CASES[0][0], CASES[2][0]])
def test_round_trip_through_the_tuple_view_steps_as_the_package_does(
        env_id: str, gym_id: str, config: dict[str, Any]) -> None:
    trip = TupleAgentsEnv(TupleView(marlhub.make(env_id, config or None)))
    native = gym.make(gym_id, disable_env_checker=True, **config)
    assert play_both(trip, native, seed=3) > 1
