"""The jumanji/ family: the multi-agent envs of Jumanji's registry, config, errors, batches, checks."""

from __future__ import annotations

import numpy as np
import pytest

jumanji = pytest.importorskip("jumanji")

import marlhub  # noqa: E402
from marlhub.adapters.jumanji.batched import JumanjiBatch  # noqa: E402
from marlhub.adapters.jumanji.family import JumanjiFamily  # noqa: E402
from marlhub.conformance.suite import check  # noqa: E402
from marlhub.conformance.vector import check_vector  # noqa: E402
from marlhub.errors import ConfigError, EnvCreationError, UnknownEnvError  # noqa: E402
from marlhub.vector import BatchedVectorEnv  # noqa: E402

from tests.adapters.jumanji.test_adapter import CLEANER, LBF  # noqa: E402


def test_the_ids_are_the_registrys_envs_with_an_agent_dimension() -> None:
    family = JumanjiFamily()
    names = ["Cleaner-v0", "LevelBasedForaging-v0", "Minesweeper-v0", "Snake-v1"]
    # Minesweeper's MultiDiscrete action has no agent rows; Snake declares one choice a step
    assert family.multi_agent(names) == ["Cleaner-v0", "LevelBasedForaging-v0"]


def test_bad_ids_and_configs_are_refused_with_the_fix() -> None:
    with pytest.raises(UnknownEnvError, match="Did you mean 'jumanji/Cleaner-v0'"):
        marlhub.make("jumanji/Cleaner-v9")
    with pytest.raises(ConfigError, match="single-agent env"):
        marlhub.make("jumanji/Minesweeper-v0")
    with pytest.raises(ConfigError, match=r"takes no keys \['num_agents'\].*time_limit"):
        marlhub.make("jumanji/Cleaner-v0", {"num_agents": 2})
    with pytest.raises(EnvCreationError, match="'generator': \\[3\\].*AttributeError"):
        marlhub.make("jumanji/Cleaner-v0", {"generator": [3]})


def test_the_suite_every_targets_checker_and_the_native_lockstep_pass() -> None:
    report = check("jumanji/Cleaner-v0", config=CLEANER, episodes=3, against_native=True,
                   interop=("pettingzoo.aec", "pettingzoo.parallel", "openspiel", "gymnasium"))
    assert report.ok and not report.findings, report.findings
    assert all(c.status == "pass" for c in report.conversions), report.conversions


def test_a_batch_under_vmap_is_its_copies_seeded_seed_plus_i() -> None:
    with marlhub.make_vec("jumanji/LevelBasedForaging-v0", 3, LBF) as envs:
        assert isinstance(envs, BatchedVectorEnv) and isinstance(envs.source, JumanjiBatch)
        assert "seed + i" in envs.seeding
        batch = envs.reset_arrays(seed=0)
        assert batch.obs["agents"]["agents_view"].shape[:2] == (3, 2)
        assert batch.action_mask["agents"].shape == (3, 2, 6)
        batch = envs.step_arrays({"agents": batch.action_mask["agents"].argmax(-1)})
        assert batch.rewards["agents"].shape == (3, 2)
    # every face (arrays, dicts, recv/send), partial resets, every autoreset mode
    report = check_vector("jumanji/LevelBasedForaging-v0", 3, episodes=2,
                          vectorization_modes=["batched"], config=LBF)
    assert report.ok and report.episodes >= 6, report.findings


def test_a_bad_action_in_a_batch_names_the_copy_and_the_agent() -> None:
    with marlhub.make_vec("jumanji/LevelBasedForaging-v0", 3, LBF) as envs:
        batch = envs.reset_arrays(seed=0)
        actions = batch.action_mask["agents"].argmax(-1)
        actions[1, 0] = int(np.flatnonzero(batch.action_mask["agents"][1, 0] == 0)[0])
        with pytest.raises(marlhub.errors.ActionError, match="agent_0.*copy 1|copy 1.*agent_0"):
            envs.step_arrays({"agents": actions})
