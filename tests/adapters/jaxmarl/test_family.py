"""The jaxmarl/ family: JaxMARL's registry, config, errors, batches, and every target's checker."""

from __future__ import annotations

import numpy as np
import pytest

jaxmarl = pytest.importorskip("jaxmarl")

import marlhub  # noqa: E402
from marlhub.adapters.jaxmarl.batched import JaxMarlBatch  # noqa: E402
from marlhub.conformance.suite import check  # noqa: E402
from marlhub.conformance.vector import check_vector  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402
from marlhub.vector import BatchedVectorEnv  # noqa: E402


def test_the_ids_are_jaxmarls_registry_less_what_cannot_be_made_here() -> None:
    listed = set(marlhub.registered("jaxmarl/*"))
    assert {"jaxmarl/MPE_simple_spread_v3", "jaxmarl/hanabi", "jaxmarl/SMAX",
            "jaxmarl/overcooked", "jaxmarl/coin_game", "jaxmarl/switch_riddle"} <= listed
    assert not any(i.startswith(("jaxmarl/storm", "jaxmarl/JaxRobotarium")) for i in listed)
    with pytest.raises(UnknownEnvError, match="jaxmarl/MPE_simple_spread_v3"):
        marlhub.make("jaxmarl/MPE_simple_spred_v3")
    with pytest.raises(ConfigError, match="not one per agent"):
        marlhub.make("jaxmarl/storm")
    with pytest.raises(ConfigError, match=r"takes no keys \[.num_agentz.\]"):
        marlhub.make("jaxmarl/MPE_simple_spread_v3", {"num_agentz": 4})
    env = marlhub.make("jaxmarl/MPE_simple_spread_v3", {"num_agents": 4})
    assert len(env.possible_agents) == 4


@pytest.mark.parametrize("env_id", ["jaxmarl/MPE_simple_spread_v3", "jaxmarl/hanabi"])
def test_every_targets_own_checker_and_the_native_lockstep_pass(env_id: str) -> None:
    report = check(env_id, episodes=3, against_native=True,
                   interop=("pettingzoo.aec", "openspiel", "gymnasium", "torchrl"))
    assert report.ok, report.findings
    assert all(c.status in ("pass", "refused") for c in report.conversions), report.conversions


@pytest.mark.parametrize("env_id", ["jaxmarl/MPE_simple_spread_v3", "jaxmarl/hanabi"])
def test_a_batch_under_vmap_is_its_copies_seeded_seed_plus_i(env_id: str) -> None:
    with marlhub.make_vec(env_id, 3) as envs:
        assert isinstance(envs, BatchedVectorEnv) and isinstance(envs.source, JaxMarlBatch)
        assert "seed + i" in envs.seeding
    report = check_vector(env_id, 3, episodes=2, vectorization_modes=["batched"])
    assert report.ok and report.episodes >= 6, report.findings


def test_the_array_face_of_a_batch_and_to_torchrl() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.utils import check_env_specs

    from marlhub.adapters.torchrl import to_torchrl

    envs = marlhub.make_vec("jaxmarl/MPE_simple_spread_v3", 8, {"max_steps": 4})
    batch = envs.reset_arrays(seed=0)
    assert batch.obs["agents"].shape == (8, 3, 18)
    for _ in range(5):
        batch = envs.step_arrays({"agents": np.ones((8, 3), np.int64)})
    assert not batch.acting["agents"].any() or batch.acting["agents"].all()
    env = to_torchrl(envs)
    check_env_specs(env)
    td = env.rollout(12, break_when_any_done=False)
    assert td["next", "done"].any() and td.shape == (8, 12)
    env.close()
