"""Whoever is ready first: ``async_reset``, ``recv`` and ``send`` of the sync and async vector
envs. Each copy's trajectory is proven equal to a separately made copy's by ``check_vector``
(which drives every mode through recv/send with ``batch_size = num_envs // 2`` too); here: the
synchronous call it reduces to, the order of readiness, parked copies, faults and bad input."""

from __future__ import annotations

import functools
import os
import signal
import time
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.conformance.vector import check_vector
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors, TicTacToe
from marlhub.episode import random_actions
from marlhub.errors import ActionError, ResetNeededError, VectorEnvError, WorkerError
from marlhub.spaces import ActionSampler
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv
from tests.vector.envs import (
    RaisesAtStep,
    RecordsChecks,
    Sleeps,
    left_of,
    no_worker_left_behind,  # noqa: F401 (autouse)
)

TIMEOUT = 60.0
BOTH = {"player1": 0, "player2": 1}


def _make(kind: str, fns: Any, **kwargs: Any) -> Any:
    if kind == "sync":
        return SyncVectorMultiAgentEnv(fns, **kwargs)
    return AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT, **kwargs)


def _rps(num_moves: int = 3) -> RockPaperScissors:
    return RockPaperScissors({"num_moves": num_moves})


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_batch_size_num_envs_is_the_synchronous_call(kind: str) -> None:
    with _make(kind, [TicTacToe] * 4) as cycle, SyncVectorMultiAgentEnv([TicTacToe] * 4) as ref:
        assert cycle.batch_size == 4
        cycle.async_reset(seed=5)
        got = cycle.recv()
        obs, infos = ref.reset(seed=5)
        assert got.copy_ids.tolist() == [0, 1, 2, 3] and got.copy_ids.dtype == np.int64
        assert why_different([got.obs, got.infos], [obs, infos]) is None
        assert got.rewards == [{}] * 4 and got.terminateds == [{"__all__": False}] * 4
        sampler = ActionSampler(0)
        for _ in range(12):  # past the end of some episodes (next_step resets them)
            actions = [random_actions(actors, o, info, ref.get_action_space, sampler)
                       for o, info, actors in zip(obs, infos, ref.actors)]
            cycle.send(actions, got.copy_ids)
            got = cycle.recv()
            want = ref.step(actions)
            obs, infos = want[0], want[4]
            assert got.copy_ids.tolist() == [0, 1, 2, 3]
            assert why_different(list(got)[:5], list(want)) is None


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_recv_returns_batch_size_copies_first_in_first_out_and_unpacks(kind: str) -> None:
    with _make(kind, [_rps] * 4, batch_size=2) as envs:
        envs.async_reset(seed=0)
        seen: list[int] = []
        for _ in range(2):
            obs, rewards, terminateds, truncateds, infos, copy_ids = envs.recv()
            assert len(obs) == len(rewards) == len(copy_ids) == 2
            seen += copy_ids.tolist()
        assert sorted(seen) == [0, 1, 2, 3]
        envs.send([BOTH], [seen[2]])
        envs.send([BOTH] * 3, [seen[3], seen[0], seen[1]])
        got = envs.recv()
        assert got.rewards == [{"player1": -1.0, "player2": 1.0}] * 2
        if kind == "sync":  # stepped in the call: the first two sent, in the order of their ids
            assert got.copy_ids.tolist() == sorted([seen[2], seen[3]])
        rest = envs.recv().copy_ids.tolist()  # async: whichever worker answered first
        assert sorted(got.copy_ids.tolist() + rest) == [0, 1, 2, 3]


def test_a_slow_copy_does_not_hold_the_fast_ones_back() -> None:
    """Copy 0 sleeps 2 s per step in worker 0; worker 1's copies come back meanwhile."""
    fns = [functools.partial(Sleeps, 2.0), _rps, _rps, _rps]
    with AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT, batch_size=2) as envs:
        envs.async_reset(seed=0)
        first = envs.recv().copy_ids.tolist() + envs.recv().copy_ids.tolist()
        envs.send([BOTH] * 4, first)
        assert envs.recv().copy_ids.tolist() == [2, 3]  # worker 1 answers first
        envs.send([BOTH] * 2, [2, 3])
        assert envs.recv().copy_ids.tolist() == [2, 3]  # again, while copy 0 sleeps
        assert sorted(envs.recv().copy_ids.tolist()) == [0, 1]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_under_disabled_an_ended_copy_waits_for_a_reset_mask(kind: str) -> None:
    fns = [functools.partial(_rps, 1), functools.partial(_rps, 5)]
    with _make(kind, fns, autoreset_mode="disabled", batch_size=1) as envs:
        envs.async_reset(seed=0)
        ids = [int(envs.recv().copy_ids[0]), int(envs.recv().copy_ids[0])]
        envs.send([BOTH, BOTH], ids)
        ended = {int(envs.recv().copy_ids[0]) for _ in range(2)}
        assert ended == {0, 1}  # copy 0's one-move episode ended: it is parked now
        envs.send([BOTH], [1])
        assert envs.recv().copy_ids.tolist() == [1]
        with pytest.raises(VectorEnvError, match="send.. got copy 0, whose episode ended"):
            envs.send([{}], [0])
        envs.send([BOTH], [1])
        envs.async_reset(options={"reset_mask": np.array([True, False])})
        got = {int(envs.recv().copy_ids[0]) for _ in range(2)}
        assert got == {0, 1}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_bad_sends_are_refused_and_move_no_copy(kind: str) -> None:
    with _make(kind, [RecordsChecks] * 3, batch_size=2) as envs:
        with pytest.raises(VectorEnvError, match="no copy is running or ready"):
            envs.recv()
        envs.async_reset(seed=0)
        ids = envs.recv().copy_ids.tolist()
        other = ({0, 1, 2} - set(ids)).pop()
        for actions, copy_ids, match in [
            ([BOTH], [other], f"copy {other}, (whose results wait for recv|which is running)"),
            ([BOTH, BOTH], [ids[0], ids[0]], f"copy {ids[0]}, twice"),
            ([BOTH], ids, "got 1 action dicts for 2 copy_ids"),
            ([BOTH], [7], "copy 7, but the copies are 0 to 2"),
            (BOTH, ids, "actions of type dict"),
            ([BOTH, BOTH], [[0, 1]], "copy_ids"),
        ]:
            with pytest.raises(VectorEnvError, match=match):
                envs.send(actions, copy_ids)
        with pytest.raises(ActionError, match=f"in copy {ids[1]}") as caught:
            envs.send([BOTH, {"player1": 0, "player2": 9}], ids)
        assert caught.value.copy_index == ids[1]
        envs.send([BOTH, BOTH], ids)  # nothing moved: the same copies take a good send
        got = envs.recv()
        assert sorted(got.copy_ids.tolist() + envs.recv().copy_ids.tolist()) == [0, 1, 2]
        assert [len(p) for p in envs.call("prechecked")] == [
            1 if i in ids else 0 for i in range(3)]
        envs.send([BOTH], [other])
        with pytest.raises(VectorEnvError, match=r"step\(\) was called while a recv\(\)/send"):
            envs.step([BOTH] * 3)
        with pytest.raises(VectorEnvError, match=r"reset\(\) was called while"):
            envs.reset()
        with pytest.raises(VectorEnvError, match="async_reset.. would reset copy"):
            envs.async_reset(options={"reset_mask": np.array([i == other for i in range(3)])})
        envs.recv()
        envs.reset(seed=1)  # nothing under way: the synchronous calls are back
        envs.step([BOTH] * 3)


@pytest.mark.parametrize("batch_size", [0, 4, 1.5, "2"])
def test_a_bad_batch_size_is_refused(batch_size: Any) -> None:
    with pytest.raises(VectorEnvError, match="batch_size must be an int from 1 to num_envs=3"):
        SyncVectorMultiAgentEnv([_rps] * 3, batch_size=batch_size)


def test_a_killed_worker_raises_at_the_next_recv_whatever_is_ready() -> None:
    envs = AsyncVectorMultiAgentEnv([TicTacToe] * 4, num_workers=2, timeout=TIMEOUT,
                                    batch_size=2)
    pids = {p.pid for p in envs.processes()}
    envs.async_reset(seed=0)
    envs.recv()
    time.sleep(0.5)  # the other worker's copies are in its pipe meanwhile
    os.kill(envs.processes()[1].pid, signal.SIGKILL)
    envs.processes()[1].join(TIMEOUT)  # dead, whatever is ready
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 1.*killed by signal 9"):
        envs.recv()
    assert time.monotonic() - started < TIMEOUT
    with pytest.raises(VectorEnvError, match="cannot go on"):
        envs.send([{}], [0])
    envs.close()
    assert left_of(pids) == set()


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_copy_that_raises_in_send_and_a_reset_that_starts_over(kind: str) -> None:
    fns = [_rps, functools.partial(RaisesAtStep, 1), _rps, _rps]
    with _make(kind, fns, batch_size=2) as envs:
        envs.async_reset(seed=0)
        ids = envs.recv().copy_ids.tolist() + envs.recv().copy_ids.tolist()
        error = RuntimeError if kind == "sync" else WorkerError
        with pytest.raises(error, match="boom in step 1"):
            envs.send([BOTH] * 4, ids)
            envs.recv()
            envs.recv()
        with pytest.raises(ResetNeededError, match="raised RuntimeError"):
            envs.send([BOTH], [0])
        obs, _ = envs.reset(seed=0)  # the copies start over
        assert len(obs) == 4


@pytest.mark.parametrize("array_face", [False, True], ids=["dicts", "arrays"])
def test_a_copy_that_raises_beside_an_answer_already_in_raises_at_once(array_face: bool) -> None:
    """Both workers have answered when recv() reads them (one reply says a copy raised): the
    error comes at once, not after waiting for the other worker's answer, read already."""
    fns = [_rps, functools.partial(RaisesAtStep, 1), _rps, _rps]
    with AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=5.0, batch_size=4,
                                  array_face=array_face) as envs:
        if array_face:
            envs.async_reset_arrays(seed=0)
            ids = envs.recv_arrays().copy_ids
            envs.send_arrays({"agents": np.zeros((4, 2), np.int64)}, ids)
        else:
            envs.async_reset(seed=0)
            envs.send([BOTH] * 4, envs.recv().copy_ids)
        time.sleep(1.0)  # both workers answer (in microseconds) before recv() reads them
        with pytest.raises(WorkerError, match="boom in step 1"):
            envs.recv_arrays() if array_face else envs.recv()
        obs, _ = envs.reset(seed=0)  # the copies start over
        assert len(obs) == 4


def test_close_with_copies_running_leaves_no_process() -> None:
    envs = AsyncVectorMultiAgentEnv([functools.partial(Sleeps, 0.5)] * 2, num_workers=2,
                                    timeout=TIMEOUT, batch_size=1)
    pids = {p.pid for p in envs.processes()}
    envs.async_reset(seed=0)
    ids = envs.recv().copy_ids
    envs.send([BOTH], ids)
    envs.close()
    assert left_of(pids) == set()


def test_make_vec_takes_batch_size() -> None:
    with marlhub.make_vec("rock_paper_scissors", 4, batch_size=3) as envs:
        envs.async_reset(seed=0)
        assert len(envs.recv().copy_ids) == 3


def test_check_vector_drives_every_mode_through_recv_send_too() -> None:
    assert check_vector("traffic", 4, episodes=1).ok
    report = check_vector(_CountsInstances, 2, episodes=1, vectorization_modes=("sync",))
    modes = {f.message.split(":")[0] for f in report.findings}
    assert {f"sync/{m} recv/send batch_size=1" for m in ("next_step", "same_step",
                                                           "disabled")} <= modes


class _CountsInstances(RockPaperScissors):
    """Copies that differ from separately made envs: rewards offset by an instance count."""

    made = 0

    def __init__(self) -> None:
        super().__init__({"num_moves": 2})
        type(self).made += 1
        self.offset = type(self).made

    def step(self, action_dict: Any) -> Any:
        obs, rewards, *rest = super().step(action_dict)
        return (obs, {a: r + self.offset for a, r in rewards.items()}, *rest)
