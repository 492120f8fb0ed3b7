"""Whoever is ready first on the array face: ``async_reset_arrays``, ``recv_arrays`` and
``send_arrays``, on the workers' shared arrays (``array_face=True``) and on the face built
from the copies' dicts (the sync env), against the synchronous ``step_arrays``."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from copy import deepcopy
from typing import Any, Optional

import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.errors import ActionError, VectorEnvError, WorkerError
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv
from tests.vector.envs import left_of, no_worker_left_behind  # noqa: F401 (autouse)

TIMEOUT = 60.0
N = 5


def _fns(env_id: str) -> list[Any]:
    return list(marlhub.registry.vector.env_fns_for(env_id, N, None))


def _cycling(env_id: str, mode: str, shared: bool) -> Any:
    if shared:
        return AsyncVectorMultiAgentEnv(_fns(env_id), num_workers=2, timeout=TIMEOUT,
                                        autoreset_mode=mode, array_face=True, batch_size=2)
    return SyncVectorMultiAgentEnv(_fns(env_id), autoreset_mode=mode, batch_size=2)


def _row(batch: Any, k: int) -> dict[str, Any]:
    """Row ``k`` of every array of ``batch`` (the final observations only when it ended)."""
    ended = bool(batch.episode_terminated[k] or batch.episode_truncated[k])
    take = (lambda v: {key: a[k] for key, a in v.items()} if isinstance(v, dict) else v[k])
    row = {field: {name: take(value) for name, value in getattr(batch, field).items()}
           for field in ("obs", "rewards", "terminated", "truncated", "acting", "alive",
                         "action_mask")}
    row.update(episode=(bool(batch.episode_terminated[k]), bool(batch.episode_truncated[k])),
               infos=batch.infos[k])
    if ended and batch.final_obs is not None:
        row["final"] = {name: take(value) for name, value in batch.final_obs.items()}
    return row


class _Actions:
    """Each copy's actions from its own generator: the same whatever order copies come in."""

    def __init__(self, envs: Any) -> None:
        self.spaces = {name: envs.get_action_space(members[0])
                       for name, members in envs.groups.items()}
        self.rngs = [np.random.default_rng(100 + i) for i in range(N)]

    def rows(self, batch: Any, copy_ids: Any, rows: Any = None) -> dict[str, np.ndarray]:
        """Actions for the copies ``copy_ids`` (of ``batch``'s rows ``rows``: all if None)."""
        rows = range(len(copy_ids)) if rows is None else rows
        actions: dict[str, Any] = {}
        for name, space in self.spaces.items():
            per_copy = []
            for k, i in zip(rows, copy_ids):
                rng, row = self.rngs[i], []
                for j in range(batch.acting[name].shape[1]):
                    if name in batch.action_mask:
                        legal = np.flatnonzero(batch.action_mask[name][k, j])
                        row.append(int(rng.choice(legal)) if legal.size else 0)
                    else:
                        row.append(int(space.start) + int(rng.integers(int(space.n))))
                per_copy.append(row)
            actions[name] = np.array(per_copy, np.int64).reshape(len(copy_ids), -1)
        return actions


def _synchronous(env_id: str, mode: str, calls: int) -> list[list[dict[str, Any]]]:
    """Each copy's rows from ``step_arrays`` of all copies at once (the reference); under
    ``disabled`` an ended copy is reset at once with a reset_mask."""
    trajectories: list[list[dict[str, Any]]] = [[] for _ in range(N)]
    with SyncVectorMultiAgentEnv(_fns(env_id), autoreset_mode=mode) as envs:
        draw = _Actions(envs)
        batch = envs.reset_arrays(seed=7)
        for i in range(N):
            trajectories[i].append(_row(batch, i))
        for _ in range(calls):
            batch = envs.step_arrays(draw.rows(batch, range(N)))
            for i in range(N):
                trajectories[i].append(_row(batch, i))
            ended = batch.episode_terminated | batch.episode_truncated
            if mode == "disabled" and ended.any():
                restarted = envs.reset_arrays(options={"reset_mask": ended})
                for i in np.flatnonzero(ended):
                    trajectories[i].append(_row(restarted, i))
                batch = restarted
    return trajectories


def _cycled(envs: Any, mode: str, rows: int, limit: int = 2000,
            seen: Optional[Callable[[Any, Any], None]] = None) -> list[list[dict[str, Any]]]:
    """Each copy's rows from recv_arrays/send_arrays with batch_size 2 of 5, until every copy
    came back ``rows`` times (at most ``limit`` calls): whoever is ready first comes back
    first, so the copies of a worker that the machine runs less come back less often.
    ``seen(batch, copy_ids)`` is called with each batch received."""
    trajectories: list[list[dict[str, Any]]] = [[] for _ in range(N)]
    draw = _Actions(envs)
    envs.async_reset_arrays(seed=7)
    for _ in range(limit):
        if min(map(len, trajectories)) >= rows:
            break
        batch, copy_ids = envs.recv_arrays()
        assert list(copy_ids) == sorted(copy_ids) and len(copy_ids) <= 2
        if seen is not None:
            seen(batch, copy_ids)
        for k, i in enumerate(copy_ids):
            trajectories[i].append(deepcopy(_row(batch, k)))  # views (copy=False) change
        ended = batch.episode_terminated | batch.episode_truncated
        if mode == "disabled" and ended.any():  # parked: restart them
            mask = np.zeros(N, bool)
            mask[copy_ids[ended]] = True
            envs.async_reset_arrays(options={"reset_mask": mask})
            keep = ~ended
            if keep.any():
                envs.send_arrays(draw.rows(batch, copy_ids[keep], np.flatnonzero(keep)),
                                 copy_ids[keep])
            continue
        envs.send_arrays(draw.rows(batch, copy_ids), copy_ids)
    return trajectories


@pytest.mark.parametrize("shared", [True, False], ids=["workers", "dicts"])
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("env_id", ["openspiel/kuhn_poker", "tic_tac_toe", "traffic",
                                    "rock_paper_scissors", "openspiel/goofspiel",
                                    "mpe2/simple_tag-v3",
                                    "pettingzoo/classic/connect_four-v3"])
def test_each_copy_plays_as_in_the_synchronous_face(env_id: str, mode: str,
                                                    shared: bool) -> None:
    with _cycling(env_id, mode, shared) as envs:
        got = _cycled(envs, mode, 8)
    want = _synchronous(env_id, mode, max(map(len, got)))
    for i in range(N):
        assert 8 <= len(got[i]) <= len(want[i]), f"copy {i} came back {len(got[i])} times"
        for t, (row, expected) in enumerate(zip(got[i], want[i])):
            assert why_different(row, expected) is None, f"copy {i}, row {t}"


def test_without_copy_the_rows_of_one_run_are_views_of_the_block() -> None:
    """``copy=False``: what recv_arrays returns for copy ids that are one run (neighbouring
    rows of the block) are views of the block, the others copies; each copy still plays as
    in the synchronous face."""
    kinds = {"views": 0, "copies": 0}

    def seen(batch: Any, copy_ids: Any) -> None:
        run = list(copy_ids) == list(range(copy_ids[0], copy_ids[0] + len(copy_ids)))
        arrays = [batch.rewards["agents"], batch.acting["agents"], batch.obs["agents"],
                  batch.episode_terminated]
        assert all((a.base is not None) == run for a in arrays), list(copy_ids)
        kinds["views" if run else "copies"] += 1

    with AsyncVectorMultiAgentEnv(_fns("tic_tac_toe"), num_workers=2, timeout=TIMEOUT,
                                  array_face=True, batch_size=2, copy=False) as envs:
        got = _cycled(envs, "next_step", 8, seen=seen)
    assert kinds["views"] > 0, kinds
    want = _synchronous("tic_tac_toe", "next_step", max(map(len, got)))
    for i in range(N):
        for t, (row, expected) in enumerate(zip(got[i], want[i])):
            assert why_different(row, expected) is None, f"copy {i}, row {t}"


def test_bad_sends_are_refused_and_move_no_copy() -> None:
    with _cycling("openspiel/kuhn_poker", "next_step", True) as envs, \
            SyncVectorMultiAgentEnv(_fns("openspiel/kuhn_poker")) as twin:
        envs.async_reset_arrays(seed=0)
        start = twin.reset_arrays(seed=0)
        batch, copy_ids = envs.recv_arrays()
        held = [int(i) for i in copy_ids]
        for k, i in enumerate(held):
            assert why_different(_row(batch, k), _row(start, i)) is None
        with pytest.raises(VectorEnvError, match="recv_arrays"):
            envs.recv()
        with pytest.raises(VectorEnvError, match=r"shape \(1, 2\), not \(2, 2\) \(copy_ids"):
            envs.send_arrays({"agents": np.zeros((1, 2), np.int64)}, copy_ids)
        other = next(i for i in range(N) if i not in held)
        with pytest.raises(VectorEnvError, match=f"got copy {other}, "):
            envs.send_arrays({"agents": np.zeros((2, 2), np.int64)}, [held[0], other])
        full = _Actions(twin).rows(start, range(N))
        legal = {"agents": full["agents"][held]}
        bad = legal["agents"].copy()
        k, j = (int(x) for x in np.argwhere(batch.acting["agents"])[-1])
        bad[k, j] = 7
        with pytest.raises(ActionError, match=f"in copy {held[k]}") as caught:
            envs.send_arrays({"agents": bad}, copy_ids)
        assert caught.value.copy_index == held[k]
        envs.send_arrays(legal, copy_ids)  # still held: nothing was sent
        want = twin.step_arrays(full)
        got: dict[int, Any] = {}
        while not all(i in got for i in held):
            batch, copy_ids = envs.recv_arrays()
            got.update((int(i), _row(batch, k)) for k, i in enumerate(copy_ids))
        for i in held:
            assert why_different(got[i], _row(want, i)) is None, f"copy {i}"


@pytest.mark.parametrize("shared", [True, False], ids=["workers", "dicts"])
def test_copy_ids_may_come_in_any_order_with_their_rows(shared: bool) -> None:
    """Rows and copy ids sent in another order than recv returned them (the ends kept in
    place) step each copy as sending them in order does."""
    order = [0, 2, 1, 3, 4]
    with _cycling("openspiel/kuhn_poker", "next_step", shared) as envs, \
            SyncVectorMultiAgentEnv(_fns("openspiel/kuhn_poker"), batch_size=N) as twin:
        draw = _Actions(twin)
        envs.async_reset_arrays(seed=1)
        twin.async_reset_arrays(seed=1)
        for _ in range(6):
            want, ids = twin.recv_arrays()
            assert list(ids) == list(range(N))
            got: dict[int, Any] = {}
            while len(got) < N:
                batch, copy_ids = envs.recv_arrays()
                got.update((int(i), _row(batch, k)) for k, i in enumerate(copy_ids))
            for i in range(N):
                assert why_different(got[i], _row(want, i)) is None, f"copy {i}"
            actions = draw.rows(want, ids)
            twin.send_arrays(actions, ids)
            envs.send_arrays({name: rows[order] for name, rows in actions.items()}, order)


def test_the_faces_do_not_mix_and_a_killed_worker_raises() -> None:
    envs = _cycling("rock_paper_scissors", "next_step", True)
    pids = {p.pid for p in envs.processes()}
    with pytest.raises(VectorEnvError, match="array face holds no episode"):
        envs.recv_arrays()
    envs.async_reset(seed=0)
    with pytest.raises(VectorEnvError, match="array face holds no episode"):
        envs.recv_arrays()
    envs.recv()
    envs.recv()
    envs.recv()
    envs.async_reset_arrays(seed=0)
    batch, copy_ids = envs.recv_arrays()
    envs.send_arrays({"agents": np.zeros((len(copy_ids), 2), np.int64)}, copy_ids)
    victim = envs.processes()[1]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    with pytest.raises(WorkerError, match=r"worker 1.*killed by signal 9"):
        envs.recv_arrays()  # whatever copies are ready
    with pytest.raises(VectorEnvError, match=r"cannot go on: copy 3 \(worker 1\) is gone"):
        envs.send_arrays({"agents": np.zeros((len(copy_ids), 2), np.int64)}, copy_ids)
    envs.close()
    assert left_of(pids) == set()


def test_the_sync_env_cycles_on_the_arrays_it_builds() -> None:
    with SyncVectorMultiAgentEnv(_fns("tic_tac_toe"), batch_size=3) as envs:
        envs.async_reset_arrays(seed=0)
        batch, copy_ids = envs.recv_arrays()
        assert list(copy_ids) == [0, 1, 2] and batch.obs["agents"].shape[0] == 3
        with pytest.raises(ActionError, match="in copy 1"):
            bad = np.zeros((3, 2), np.int64)
            bad[1] = 9
            envs.send_arrays({"agents": bad}, copy_ids)


def test_sends_to_some_copies_then_synchronous_calls() -> None:
    """send_arrays to some held copies, then step_arrays of all: the workers' rows (and the
    final observations that earlier sends left in them) are the face built from the dicts."""
    shared = AsyncVectorMultiAgentEnv(_fns("openspiel/kuhn_poker"), num_workers=2,
                                      timeout=TIMEOUT, autoreset_mode="same_step",
                                      array_face=True)
    built = SyncVectorMultiAgentEnv(_fns("openspiel/kuhn_poker"), autoreset_mode="same_step")
    with shared, built:
        pairs = [(shared, _Actions(shared)), (built, _Actions(built))]
        latest: list[dict[int, Any]] = [{}, {}]  # copy -> (batch, row) it came back in

        def actions(e: int, copies: list[int]) -> dict[str, np.ndarray]:
            draw = pairs[e][1]
            parts = [draw.rows(latest[e][i][0], [i], [latest[e][i][1]]) for i in copies]
            return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}

        for envs, _ in pairs:
            envs.async_reset_arrays(seed=3)
        for t in range(60):
            got, want = (envs.recv_arrays() for envs, _ in pairs)
            assert list(got.copy_ids) == list(want.copy_ids)
            assert why_different(got.batch.__dict__, want.batch.__dict__) is None, f"recv {t}"
            for e, received in enumerate((got, want)):
                for k, i in enumerate(received.copy_ids):
                    latest[e][int(i)] = (received.batch, k)
            if t % 3 == 2:  # every copy is held: one synchronous call
                got_batch, want_batch = (envs.step_arrays(actions(e, list(range(N))))
                                         for e, (envs, _) in enumerate(pairs))
                assert why_different(got_batch.__dict__, want_batch.__dict__) is None, \
                    f"step after recv {t}"
                for e, batch in enumerate((got_batch, want_batch)):
                    latest[e] = {i: (batch, i) for i in range(N)}
            some = [0, 1] if t % 3 == 1 else [2, 3, 4] if t % 3 == 2 else [0, 2, 4]
            for e, (envs, _) in enumerate(pairs):
                envs.send_arrays(actions(e, some), some)
