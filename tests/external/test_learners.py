"""Learners the hub already serves drive simulators that call in: TorchRL, and the array face."""

from __future__ import annotations

import numpy as np
import pytest

from marlhub.external import from_external

from .simulators import TurnGame


def test_torchrl_steps_concurrent_episodes() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.utils import check_env_specs

    from marlhub.adapters.torchrl import to_torchrl

    env = to_torchrl(from_external(TurnGame(seed=0), 2, threads=2, timeout=10))
    assert tuple(env.batch_size) == (2,)
    check_env_specs(env)  # TorchRL's own checker
    rollout = env.rollout(30, break_when_any_done=False)
    assert rollout["next", "agents", "observation"].shape[:2] == (2, 30)
    assert rollout["next", "done"].any()
    env.close()


def test_the_array_face_marks_who_decides() -> None:
    envs = from_external(TurnGame(seed=4, off_policy=0.0), 3, threads=3, timeout=10)
    batch = envs.reset_arrays()
    (group,) = envs.groups
    for _ in range(20):
        acting = batch.acting[group]
        assert acting.shape == (3, 2)
        for i, actors in enumerate(envs.actors):
            assert [a for a, on in zip(envs.groups[group], acting[i]) if on] == actors
        batch = envs.step_arrays({group: np.ones((3, 2), np.int64)})
    envs.close()
