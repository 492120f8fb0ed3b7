"""AsyncVectorMultiAgentEnv: the same results as the sync one; faults named by copy; reaping.

Every vector env here has a ``timeout`` on its calls, so a hang fails the test in
seconds; every test checks that no worker process is left behind.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import time
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic
from marlhub.episode import random_actions
from marlhub.errors import ActionError, ResetNeededError, VectorEnvError, WorkerError
from marlhub.spaces import ActionSampler
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv
from tests.vector.envs import (
    FailsToBuild,
    RaisesAtStep,
    ReturnsAFunction,
    Sleeps,
    children,
    left_of,
    no_worker_left_behind,  # noqa: F401 (autouse)
)

#: Seconds any call may wait for the workers in these tests.
TIMEOUT = 60.0


def _traffic() -> Traffic:
    return Traffic({"num_cars": 3, "max_steps": 12})


def _play_both(fns: list[Any], steps: int, **options: Any) -> None:
    """Step an async and a sync vector env of ``fns`` alike; assert equal results."""
    n = len(fns)
    with AsyncVectorMultiAgentEnv(fns, timeout=TIMEOUT, **options) as venv, \
            SyncVectorMultiAgentEnv(fns, autoreset_mode=options.get("autoreset_mode",
                                                                     "next_step")) as twin:
        got, want = venv.reset(seed=5), twin.reset(seed=5)
        assert why_different(list(got), list(want)) is None
        obs, infos = want
        actors = [list(o) for o in obs]
        samplers = [ActionSampler(i) for i in range(n)]
        for _ in range(steps):
            actions = [random_actions(actors[i], obs[i], infos[i], twin.envs[i].get_action_space,
                                      samplers[i]) for i in range(n)]
            got, want = venv.step(actions), twin.step(actions)
            assert why_different(list(got), list(want)) is None
            obs, _, terminateds, truncateds, infos = want
            actors = twin._book.actors


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("factory", [TicTacToe, _traffic])
def test_async_returns_what_sync_returns(factory: Any, mode: str) -> None:
    _play_both([factory] * 3, 30, num_workers=2, autoreset_mode=mode)


def test_openspiel_dict_observations_keep_their_key_order() -> None:
    pytest.importorskip("pyspiel")
    fns = marlhub.registry.vector.env_fns_for("openspiel/leduc_poker", 3)
    _play_both(fns, 25, num_workers=2)


def test_images_go_through_shared_memory() -> None:
    pytest.importorskip("pettingzoo.butterfly")
    fns = marlhub.registry.vector.env_fns_for(
        "pettingzoo/butterfly/pistonball-v6", 2, {"api": "parallel", "max_cycles": 4,
                                                  "n_pistons": 3})
    with AsyncVectorMultiAgentEnv(fns, num_workers=1, timeout=TIMEOUT) as venv:
        assert venv._shared is not None and "piston_0" in venv._shared.layout.agents
    _play_both(fns, 6, num_workers=2)


def test_without_shared_memory_and_with_views() -> None:
    _play_both([TicTacToe] * 2, 10, num_workers=1, shared_memory=False)
    with AsyncVectorMultiAgentEnv([TicTacToe] * 2, num_workers=1, copy=False,
                                  timeout=TIMEOUT) as venv:
        obs, _ = venv.reset(seed=0)
        agent = next(iter(obs[0]))
        assert obs[0][agent].base is not None  # a view into the shared block


def test_kept_observations_stay_as_returned_and_dropped_ones_free_their_block() -> None:
    """copy=True lends views of a block no later call writes into while any is alive."""
    fns: list[Any] = [TicTacToe] * 2
    samplers = [ActionSampler(i) for i in range(2)]
    with AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT) as venv, \
            SyncVectorMultiAgentEnv(fns, copy=True) as twin:

        def step_both() -> tuple[list[Any], list[Any]]:
            book = twin._book
            actions = [random_actions(book.actors[i], book.obs[i], book.infos[i],
                                      twin.envs[i].get_action_space, samplers[i])
                       for i in range(2)]
            return venv.step(actions)[0], twin.step(actions)[0]

        kept, want = [venv.reset(seed=3)[0]], [twin.reset(seed=3)[0]]
        for _ in range(12):  # every obs kept: two blocks lent, then copies from the third
            got, wanted = step_both()
            kept.append(got)
            want.append(wanted)
        assert why_different(kept, want) is None
        owned = [a.flags.owndata for o in kept for ob in o for a in ob.values()]
        assert not any(owned[:4]) and all(owned[-4:])  # views first, copies once all are held
        del kept, got
        gc.collect()
        for _ in range(3):  # only the last obs held (by this loop and the vector env)
            got, wanted = step_both()
            assert why_different(got, wanted) is None
            assert not any(a.flags.owndata for ob in got for a in ob.values())


def test_step_async_and_step_wait() -> None:
    with AsyncVectorMultiAgentEnv([TicTacToe] * 2, num_workers=2, timeout=TIMEOUT) as venv:
        with pytest.raises(VectorEnvError, match="no step is under way"):
            venv.step_wait()
        obs, _ = venv.reset(seed=0)
        venv.step_async([{a: 4 for a in o} for o in obs])
        with pytest.raises(VectorEnvError, match="a step is under way"):
            venv.reset()
        obs, *_ = venv.step_wait()
        assert all(o for o in obs)
        venv.reset_async(seed=1)
        assert len(venv.reset_wait()[0]) == 2


def test_bad_actions_are_refused_before_anything_is_sent() -> None:
    with AsyncVectorMultiAgentEnv([TicTacToe] * 3, num_workers=2, timeout=TIMEOUT) as venv:
        with pytest.raises(ResetNeededError):
            venv.step([{}, {}, {}])
        obs, _ = venv.reset(seed=0)
        good = [{a: 4 for a in o} for o in obs]
        with pytest.raises(ActionError, match="in copy 2") as caught:
            venv.step([*good[:2], {a: 9 for a in obs[2]}])
        assert caught.value.copy_index == 2
        with pytest.raises(ActionError, match="a list of 3 action dicts"):
            venv.step(good[:2])
        venv.step(good)  # nothing was sent: the vector env goes on


def test_a_copy_that_raises_is_named_with_the_workers_traceback() -> None:
    fns = [TicTacToe, TicTacToe, TicTacToe, functools.partial(RaisesAtStep, 2)]
    with AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT) as venv:
        obs, _ = venv.reset(seed=0)
        rps_actions = {"player1": 0, "player2": 0}
        obs, *_ = venv.step([{a: 4 for a in o} for o in obs[:3]] + [rps_actions])
        with pytest.raises(WorkerError, match="Copy 3 .worker 1.* raised RuntimeError: boom") as caught:
            venv.step([{a: 0 for a in o} for o in obs[:3]] + [rps_actions])
        error = caught.value
        assert (error.copy_index, error.worker_index, error.copies) == (3, 1, [2, 3])
        assert 'raise RuntimeError(f"boom' in error.worker_traceback
        assert "The worker's traceback" in str(error) and "tests/vector/envs.py" in str(error)
        assert isinstance(error.__cause__, RuntimeError)
        with pytest.raises(ResetNeededError, match="copy 3 raised RuntimeError"):
            venv.step([{}, {}, {}, {}])
        venv.reset(seed=1)  # the workers are fine: reset goes on


def test_a_copy_that_cannot_be_built_is_named_and_no_worker_is_left() -> None:
    with pytest.raises(WorkerError, match="Copy 1 .* raised ValueError: this env cannot be built"):
        AsyncVectorMultiAgentEnv([TicTacToe, FailsToBuild], num_workers=2, shared_memory=False,
                                 timeout=TIMEOUT)


def test_a_killed_worker_raises_naming_its_copies_within_seconds() -> None:
    venv = AsyncVectorMultiAgentEnv([TicTacToe] * 4, num_workers=2, timeout=TIMEOUT)
    obs, _ = venv.reset(seed=0)
    pids = {p.pid for p in venv.processes()}
    os.kill(venv.processes()[1].pid, signal.SIGKILL)
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"Copy 2 \(worker 1, which holds copies 2, 3\) is gone: "
                       r"its worker process was killed by signal 9 \(SIGKILL\)") as caught:
        venv.step([{a: 4 for a in o} for o in obs])
    assert time.monotonic() - started < TIMEOUT  # noticed by the process's sentinel
    assert caught.value.exitcode == -signal.SIGKILL
    with pytest.raises(VectorEnvError, match="cannot go on: copy 2 .worker 1. is gone"):
        venv.reset()
    venv.close()
    assert left_of(pids) == set()


def test_a_hang_times_out_and_close_ends_it() -> None:
    # Start-up and reset get the usual time (a loaded machine may take over 0.5 s to start
    # a worker); the hanging step gets 0.5 s.
    venv = AsyncVectorMultiAgentEnv([functools.partial(Sleeps, 30.0)], num_workers=1,
                                    timeout=TIMEOUT)
    venv.reset(seed=0)
    venv.timeout = 0.5
    with pytest.raises(WorkerError, match="did not answer within 0.5 s"):
        venv.step([{"player1": 0, "player2": 0}])
    started = time.monotonic()
    venv.close()
    assert time.monotonic() - started < 10


def test_close_and_garbage_collection_reap_every_worker() -> None:
    venv = AsyncVectorMultiAgentEnv([TicTacToe] * 3, num_workers=3, timeout=TIMEOUT)
    pids = {p.pid for p in venv.processes()}
    assert pids <= children()
    venv.close()
    assert left_of(pids) == set()
    venv = AsyncVectorMultiAgentEnv([TicTacToe] * 2, num_workers=2, timeout=TIMEOUT)
    venv.reset(seed=0)
    pids = {p.pid for p in venv.processes()}
    del venv
    gc.collect()
    assert left_of(pids) == set()


def test_calls_and_attributes_travel_to_the_workers() -> None:
    fns = [RockPaperScissors, ReturnsAFunction]
    with AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=TIMEOUT) as venv:
        assert venv.get_attr("possible_agents") == (["player1", "player2"],) * 2
        venv.set_attr("marker", ["a", "b"])
        assert venv.get_attr("marker") == ("a", "b")
        assert [c.possible_agents for c in venv.envs] == [["player1", "player2"]] * 2
        assert venv.envs[1].unwrapped.get_action_space("player1") == venv.single_action_spaces[
            "player1"]
        with pytest.raises(WorkerError, match="raised AttributeError"):
            venv.call("no_such_method")
        with pytest.raises(WorkerError, match=r"call\('step'\) is refused"):
            venv.call("step", {})
    with AsyncVectorMultiAgentEnv([ReturnsAFunction], num_workers=1, timeout=TIMEOUT) as venv:
        with pytest.raises(WorkerError, match="raised"):
            venv.call("make_function")  # its result does not pickle


def test_options_are_checked() -> None:
    with pytest.raises(VectorEnvError, match="num_workers must be an integer >= 1, got 0"):
        AsyncVectorMultiAgentEnv([TicTacToe], num_workers=0)
    with AsyncVectorMultiAgentEnv([TicTacToe] * 2, timeout=TIMEOUT) as venv:
        assert 1 <= venv.num_workers <= 2
    with AsyncVectorMultiAgentEnv([TicTacToe] * 2, num_workers=5, timeout=TIMEOUT) as venv:
        assert venv.num_workers == 2
        venv.close()
        with pytest.raises(VectorEnvError, match="it was closed"):
            venv.step([{}, {}])


def test_spawned_workers_build_their_copies_from_pickled_env_fns() -> None:
    with AsyncVectorMultiAgentEnv([TicTacToe, _traffic], num_workers=2, context="spawn",
                                  timeout=TIMEOUT) as venv:
        obs, _ = venv.reset(seed=3)
        assert why_different(obs[1], _traffic().reset(seed=4)[0]) is None
        assert np.asarray(obs[0][next(iter(obs[0]))]).shape == (9,)


_LEAVE_WITHOUT_CLOSING = """
import os, signal, sys, time
import marlhub
envs = marlhub.make_vec("tic_tac_toe", 2, vectorization_mode="async", num_workers=2)
envs.reset(seed=0)
print(" ".join(str(p.pid) for p in envs.processes()), flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)  # no clean-up at all
"""


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie waiting for init counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_workers_do_not_outlive_their_parent(how: str) -> None:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _LEAVE_WITHOUT_CLOSING, how], capture_output=True,
                         text=True, timeout=120)
    pids = [int(p) for p in run.stdout.split()]
    assert len(pids) == 2, run.stderr
    deadline = time.monotonic() + 15  # a worker checks for its parent every second
    while time.monotonic() < deadline and not all(_gone(p) for p in pids):
        time.sleep(0.1)
    assert all(_gone(p) for p in pids)
