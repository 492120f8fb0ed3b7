"""Workers forked from a parent that has run torch: their torch ops must not block."""

from __future__ import annotations

import multiprocessing

import pytest

import marlhub
from marlhub.vector import AsyncVectorMultiAgentEnv
from tests.vector.envs import no_worker_left_behind  # noqa: F401 (autouse)

torch = pytest.importorskip("torch")
pytest.importorskip("vmas")

CONFIG = {"max_steps": 5, "continuous_actions": False}


def _navigation() -> object:
    return marlhub.make("vmas/navigation", CONFIG)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the platform cannot fork")
def test_vmas_copies_build_and_step_after_the_parent_ran_torch_on_two_threads() -> None:
    """The parent steps VMAS on two threads (as ``marlhub check`` does before ``--vector``),
    then forks workers that build VMAS copies. Without one torch thread in each worker,
    the first parallel op of a copy blocked for ever (GNU OpenMP is not fork-safe), and the
    start-up ran out its time."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        env = _navigation()
        env.reset(seed=0)
        for _ in range(3):
            env.step({agent: env.get_action_space(agent).sample() for agent in env.agents})
        env.close()
        with AsyncVectorMultiAgentEnv([_navigation] * 4, num_workers=2, context="fork",
                                      timeout=30) as envs:
            obs, _ = envs.reset(seed=0)
            assert len(obs) == 4 and set(obs[0]) == set(envs.possible_agents)
            envs.step([{agent: 0 for agent in o} for o in obs])
    finally:
        torch.set_num_threads(threads)
