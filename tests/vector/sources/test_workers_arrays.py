"""The array face from the workers (``array_face=True``): the same arrays as the face built
from the copies' dicts, every autoreset mode, checks before any copy moves, faults."""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors
from marlhub.errors import ActionError, VectorEnvError, WorkerError
from marlhub.vector import (
    AgentSlotVectorEnv,
    AsyncVectorMultiAgentEnv,
    SyncVectorMultiAgentEnv,
)
from tests.vector.envs import (
    RaisesAtStep,
    left_of,
    no_worker_left_behind,  # noqa: F401 (autouse)
)

TIMEOUT = 60.0
IDS = ["openspiel/kuhn_poker", "tic_tac_toe", "traffic", "rock_paper_scissors",
       # simultaneous moves; two groups of agents; PettingZoo's masks in dict observations
       "openspiel/goofspiel", "mpe2/simple_tag-v3", "pettingzoo/classic/connect_four-v3"]


def _pair(env_id: str, n: int, mode: str, **kwargs: Any) -> tuple[Any, Any]:
    fns = marlhub.registry.vector.env_fns_for(env_id, n, None)
    shared = AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT, autoreset_mode=mode,
                                      array_face=True, **kwargs)
    return shared, SyncVectorMultiAgentEnv(fns, autoreset_mode=mode)


def _random_actions(envs: Any, batch: Any, rng: np.random.Generator) -> dict[str, Any]:
    actions = {}
    for name, members in envs.groups.items():
        space = envs.get_action_space(members[0])
        shape = batch.acting[name].shape
        if name in batch.action_mask:
            mask = batch.action_mask[name]
            actions[name] = np.array([[rng.choice(np.flatnonzero(mask[i, j])) if mask[i, j].any()
                                       else 0 for j in range(shape[1])]
                                      for i in range(shape[0])])
        else:
            space.seed(int(rng.integers(1 << 30)))
            actions[name] = np.array([[space.sample() for _ in range(shape[1])]
                                      for _ in range(shape[0])])
    return actions


def _same(got: Any, want: Any) -> Any:
    return why_different(dataclasses.asdict(got), dataclasses.asdict(want))


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("env_id", IDS)
def test_the_workers_arrays_are_the_face_built_from_the_copies_dicts(env_id: str,
                                                                     mode: str) -> None:
    shared, built = _pair(env_id, 5, mode)
    rng = np.random.default_rng(0)
    with shared, built:
        got, want = shared.reset_arrays(seed=3), built.reset_arrays(seed=3)
        assert _same(got, want) is None
        for t in range(40):
            actions = _random_actions(built, want, rng)
            got, want = shared.step_arrays(actions), built.step_arrays(actions)
            assert _same(got, want) is None, f"step {t}"
            ended = want.episode_terminated | want.episode_truncated
            if mode == "disabled" and ended.any():
                options = {"reset_mask": ended}
                got = shared.reset_arrays(options=options)
                want = built.reset_arrays(options=options)
                assert _same(got, want) is None, f"reset_mask after step {t}"


def test_bad_action_arrays_are_refused_before_any_copy_moves() -> None:
    shared, built = _pair("openspiel/kuhn_poker", 4, "next_step")
    with shared, built:
        batch = shared.reset_arrays(seed=0)
        built.reset_arrays(seed=0)
        with pytest.raises(VectorEnvError, match=r"group 'agents' have shape \(4, 1\), not "
                                                 r"\(4, 2\)"):
            shared.step_arrays({"agents": np.zeros((4, 1), np.int64)})
        with pytest.raises(VectorEnvError, match="not one action array per group"):
            shared.step_arrays({"others": np.zeros((4, 2), np.int64)})
        legal = _random_actions(built, batch, np.random.default_rng(1))
        bad = legal["agents"].copy()
        acting = np.argwhere(batch.acting["agents"])
        i, j = (int(k) for k in acting[-1])
        bad[i, j] = 5
        with pytest.raises(ActionError, match=f"in copy {i}") as caught:
            shared.step_arrays({"agents": bad})
        assert caught.value.copy_index == i
        # no copy moved: the legal step gives what the untouched twin gives
        assert _same(shared.step_arrays(legal), built.step_arrays(legal)) is None


def test_one_face_per_episode_and_spaces_that_do_not_fit() -> None:
    with AsyncVectorMultiAgentEnv([RockPaperScissors] * 2, num_workers=2, timeout=TIMEOUT,
                                  array_face=True) as envs:
        with pytest.raises(VectorEnvError, match="Call reset_arrays.. first"):
            envs.step_arrays({"agents": np.zeros((2, 2), np.int64)})
        envs.reset_arrays(seed=0)
        with pytest.raises(VectorEnvError, match="the array face holds the episode"):
            envs.step([{"player1": 0, "player2": 0}] * 2)
        envs.reset(seed=0)
        envs.step([{"player1": 0, "player2": 0}] * 2)
        with pytest.raises(VectorEnvError, match="array face holds no episode"):
            envs.step_arrays({"agents": np.zeros((2, 2), np.int64)})
    with pytest.raises(VectorEnvError, match="array_face=True needs fixed-size arrays, but "
                                             "group 'agents' observes Text"):
        AsyncVectorMultiAgentEnv([_Texts] * 2, num_workers=1, timeout=TIMEOUT, array_face=True)


def test_agent_slots_over_the_workers_arrays() -> None:
    shared, built = _pair("openspiel/kuhn_poker", 4, "next_step")
    with AgentSlotVectorEnv(shared) as slots, AgentSlotVectorEnv(built) as twin:
        rng = np.random.default_rng(2)
        got, want = slots.reset(seed=0), twin.reset(seed=0)
        assert why_different(got, want) is None
        infos = want[1]
        for _ in range(10):
            actions = np.array([[rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in row]
                                for row in infos["action_mask"]])
            got, want = slots.step(actions), twin.step(actions)
            assert why_different(got, want) is None
            infos = want[4]


def test_a_copy_that_raises_and_a_killed_worker() -> None:
    envs = AsyncVectorMultiAgentEnv([RockPaperScissors, functools.partial(RaisesAtStep, 2)],
                                    num_workers=2, timeout=TIMEOUT, array_face=True)
    pids = {p.pid for p in envs.processes()}
    envs.reset_arrays(seed=0)
    both = {"agents": np.zeros((2, 2), np.int64)}
    envs.step_arrays(both)
    with pytest.raises(WorkerError, match=r"Copy 1 .* raised RuntimeError: boom in step 2"):
        envs.step_arrays(both)
    envs.reset_arrays(seed=0)
    os.kill(envs.processes()[0].pid, signal.SIGKILL)
    with pytest.raises(WorkerError, match=r"worker 0.*killed by signal 9"):
        envs.step_arrays(both)
    envs.close()
    assert left_of(pids) == set()


class _Texts(RockPaperScissors):
    """Rock-paper-scissors whose observations are text (no fixed-size array)."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_spaces = {a: gym.spaces.Text(8) for a in self.possible_agents}


def test_idle_workers_sleep() -> None:
    """Workers poll their pipe without sleeping only briefly after each answer
    (``SPIN_SECONDS``); idle, they sleep on it."""
    with AsyncVectorMultiAgentEnv([RockPaperScissors] * 2, num_workers=2, timeout=TIMEOUT,
                                  array_face=True) as envs:
        envs.reset_arrays(seed=0)
        envs.step_arrays({"agents": np.zeros((2, 2), np.int64)})
        time.sleep(0.2)
        pids = [p.pid for p in envs.processes()]
        before = [_cpu_seconds(pid) for pid in pids]
        time.sleep(1.0)
        used = [_cpu_seconds(pid) - b for pid, b in zip(pids, before)]
        assert max(used) < 0.1, used


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
