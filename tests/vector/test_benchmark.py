"""The vector throughput benchmark runs (in its quick mode) with its hand-rolled ceilings: of the
array face beside ``async arrays`` (``Box`` actions too), and of ``sync`` doing the same work,
which steps as ``sync`` does; no timings are asserted."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.vector.envs import no_worker_left_behind  # noqa: F401 (autouse)

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_the_hand_rolled_ceiling_runs_beside_the_array_face(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyspiel")
    benchmark = _load("vector_throughput")
    assert benchmark.main(["--quick", "--envs", "kuhn_poker", "tic_tac_toe", "--contestants",
                           "async arrays", "hand-rolled arrays",
                           "hand-rolled sync, checked"]) == 0
    out = capsys.readouterr().out
    for env in ("kuhn_poker", "tic_tac_toe"):
        table = out.split(f"{env}: agent-steps/s")[1].split("\n\n")[0]
        for contestant in ("serial", "async arrays", "hand-rolled arrays",
                           "hand-rolled sync, checked"):
            row = re.search(rf"^{re.escape(contestant)} +([\d,]+) \( *([\d.]+)\)", table, re.M)
            assert row is not None, (contestant, table)
            assert float(row.group(1).replace(",", "")) > 0


def test_the_hand_rolled_ceiling_takes_only_the_envs_it_can_run() -> None:
    pytest.importorskip("pyspiel")
    hand_rolled = _load("hand_rolled_arrays")
    assert hand_rolled.fits("openspiel/kuhn_poker")  # dict observations with a mask
    assert hand_rolled.fits("tic_tac_toe")  # array observations
    assert not hand_rolled.fits("rock_paper_scissors")  # Discrete observations
    assert not hand_rolled.fits("traffic")
    assert hand_rolled.fits("gymnasium/Pendulum-v1")  # Box actions


def test_the_hand_rolled_ceiling_steps_box_actions_in_its_workers() -> None:
    benchmark = _load("vector_throughput")
    hand_rolled = _load("hand_rolled_arrays")
    rate = hand_rolled.run_hand_rolled("gymnasium/Pendulum-v1", 4, 0.3, 0, 2, benchmark.timed)
    assert rate > 0


def test_the_checked_sync_ceiling_steps_as_sync_and_refuses_before_any_copy_moves() -> None:
    pytest.importorskip("pyspiel")
    import numpy as np

    import marlhub
    from marlhub.vector import SyncVectorMultiAgentEnv

    benchmark = _load("vector_throughput")
    fns = [lambda: marlhub.make("openspiel/kuhn_poker")] * 3
    ceiling = benchmark.HandRolledCheckedSync(fns)
    with SyncVectorMultiAgentEnv(fns) as ours:
        obs, _ = ours.reset(seed=5)
        theirs, _ = ceiling.reset(5)
        rng = np.random.default_rng(0)
        for call in range(40):
            actions = [{a: int(rng.integers(2)) for a in ob} for ob in obs]
            running = [i for i, d in enumerate(actions) if d]
            if call % 3 == 1 and running:  # a bad action in a running copy: refused, no copy moves
                bad = [dict(d) for d in actions]
                k = running[-1]
                bad[k] = dict.fromkeys(bad[k], 2) if call % 2 else {"player_9": 0}
                with pytest.raises(ValueError, match=f"copy {k}"):
                    ceiling.step(bad)
            obs, *rest = ours.step(actions)
            theirs, *their_rest = ceiling.step(actions)
            assert repr(theirs) == repr(obs) and their_rest == rest, call
            obs = [{} if done["__all__"] else ob for ob, done in zip(obs, rest[1])]
    for env in ceiling.envs:
        env.close()


@pytest.mark.parametrize("mode", ["sync", "async", "async arrays", "async recv/send"])
def test_the_memory_run_plays_its_episodes_in_every_mode(mode: str) -> None:
    pytest.importorskip("pyspiel")
    benchmark = _load("vector_throughput")
    assert mode in benchmark.MEMORY_MODES
    row = benchmark.memory_run("openspiel/kuhn_poker", mode, 40, 0)
    assert row["episodes"] >= 40
    assert len(row["rss_kb_at_end"]) == (1 if mode == "sync" else 3)  # this process, 2 workers
    assert all(kb > 0 for kb in row["rss_kb_at_end"])
