"""The learner's last mile: agent-steps per second of SB3-style batches, marlhub against SuperSuit.

One env, PettingZoo's pistonball (parallel, 20 pistons, image observations, discrete actions), ``N`` copies
(4 by default), each stepped to a flat batch of one row per (copy, agent), as SB3's
``VecEnv`` takes it. Contestants, run interleaved in one process (round after round, in a
rotating order), so drifts of the machine's speed hit them alike:

* ``native``: ``N`` of PettingZoo's own parallel envs stepped one after another, the
  actions of a dict per copy, no batch built (the reference: what the env itself costs);
* ``supersuit``: SuperSuit's ``concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(env), N,
  num_cpus=0, base_class="stable_baselines3")`` (the copies in this process);
* ``to_sb3``: ``marlhub.learners.to_sb3("pettingzoo/butterfly/pistonball-v6", N)`` (in
  this process);
* ``supersuit procs``: the same with ``num_cpus=--workers`` (SuperSuit's processes);
* ``to_sb3 async``: ``to_sb3(..., vectorization_mode="async", num_workers=--workers,
  array_face=True)`` (the hub's workers write the array face into shared memory);
* ``puffer emulation``: PufferLib's ``pufferlib.vector.Multiprocessing`` of ``N`` of its
  ``PettingZooPufferEnv`` (its emulation of the same native parallel env), ``--workers``
  workers (where PufferLib is installed);
* ``puffer to_pufferlib``: the same Multiprocessing of ``N`` ``to_pufferlib`` envs (one
  copy each);
* ``hub async arrays``: ``make_vec(..., vectorization_mode="async", num_workers=--workers,
  array_face=True)`` stepped with ``step_arrays`` (the hub's own vector env, no learner
  bridge).

The process contestants are compared with ``supersuit procs``, and the last three also
with ``puffer emulation``.

Each contestant is stepped with actions drawn before the timing (one per slot, from the
slots' action space) for ``--seconds``; episodes end (``max_cycles``) and copies reset
while timed. Printed: per contestant the median agent-steps per second over the rounds,
and the median of the per-round ratios to ``supersuit`` (serial contestants) or
``supersuit procs`` (process contestants).

Run it with ``python benchmarks/learner_bridges.py [--copies 4] [--rounds 3] [--json PATH]``
(needs ``pip install 'marlhub[learners]' 'pettingzoo[butterfly]'``); ``--json
docs/data/learner_bridges.json`` writes the tables of the performance page.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import marlhub  # noqa: E402
from marlhub.learners import to_sb3  # noqa: E402

ENV_ID = "pettingzoo/butterfly/pistonball-v6"


def native_envs(n: int, max_cycles: int) -> Callable[[np.ndarray], None]:
    from pettingzoo.butterfly import pistonball_v6

    envs = [pistonball_v6.parallel_env(max_cycles=max_cycles, continuous=False) for _ in range(n)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    agents = envs[0].possible_agents

    def step(actions: np.ndarray) -> None:
        for i, env in enumerate(envs):
            if not env.agents:
                env.reset()
            row = actions[i * len(agents):(i + 1) * len(agents)]
            env.step({a: row[k] for k, a in enumerate(env.agents)})
    return step


def supersuit_envs(n: int, max_cycles: int, cpus: int) -> Any:
    import supersuit as ss
    from pettingzoo.butterfly import pistonball_v6

    env = ss.pettingzoo_env_to_vec_env_v1(pistonball_v6.parallel_env(max_cycles=max_cycles, continuous=False))
    venv = ss.concat_vec_envs_v1(env, n, num_cpus=cpus, base_class="stable_baselines3")
    venv.reset()
    return venv


def hub_envs(n: int, max_cycles: int, workers: int) -> Any:
    options: dict[str, Any] = {"vectorization_mode": "async", "num_workers": workers,
                               "array_face": True} if workers else {}
    venv = to_sb3(ENV_ID, n, {"max_cycles": max_cycles, "continuous": False}, **options)
    venv.seed(0)
    venv.reset()
    return venv


def puffer_envs(n: int, max_cycles: int, workers: int, ours: bool) -> Any:
    import functools

    import pufferlib.emulation
    import pufferlib.vector
    from pettingzoo.butterfly import pistonball_v6

    from marlhub.learners import to_pufferlib

    if ours:
        creator: Any = functools.partial(to_pufferlib, ENV_ID,
                                         config={"max_cycles": max_cycles, "continuous": False})
    else:
        creator = functools.partial(pufferlib.emulation.PettingZooPufferEnv,
                                    env_creator=pistonball_v6.parallel_env,
                                    env_kwargs={"max_cycles": max_cycles, "continuous": False})
    # PufferLib's workers start with the default start method; PettingZoo's parallel_env is a
    # local function, which only a forked worker receives (spawn pickles it)
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("fork", force=True)
    try:
        venv = pufferlib.vector.make(creator, backend=pufferlib.vector.Multiprocessing,
                                     num_envs=n, num_workers=workers, seed=0)
    finally:
        multiprocessing.set_start_method(before, force=True)
    venv.async_reset(0)
    venv.recv()

    def step(actions: np.ndarray) -> None:
        venv.send(actions.astype(np.int32))
        venv.recv()
    step.close = venv.close  # type: ignore[attr-defined]
    return step


def hub_arrays(n: int, max_cycles: int, workers: int) -> Any:
    venv = marlhub.make_vec(ENV_ID, n, {"api": "parallel", "max_cycles": max_cycles,
                                        "continuous": False}, vectorization_mode="async",
                            num_workers=workers, array_face=True)
    venv.reset_arrays(seed=0)
    (group,) = venv.groups

    def step(actions: np.ndarray) -> None:
        venv.step_arrays({group: actions.reshape(n, -1)})
    step.close = venv.close  # type: ignore[attr-defined]
    return step


def timed(step: Callable[[np.ndarray], Any], actions: list[np.ndarray], seconds: float) -> float:
    """Steps per second of ``step`` over ``seconds``, cycling through ``actions``."""
    count, start = 0, time.perf_counter()
    while True:
        step(actions[count % len(actions)])
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return count / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--max-cycles", type=int, default=125)
    parser.add_argument("--json", metavar="PATH", help="also write the tables to PATH")
    parser.add_argument("--pause", type=float, default=0.6,
                        help="seconds between contestants (PufferLib's idle workers spin 0.5 s)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    n = args.copies
    agents = len(marlhub.make(ENV_ID, {"api": "parallel"}).possible_agents)
    slots = n * agents
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, 3, slots) for _ in range(64)]  # pistonball: Discrete(3)
    makers: dict[str, Callable[[], Any]] = {
        "native": lambda: native_envs(n, args.max_cycles),
        "supersuit": lambda: supersuit_envs(n, args.max_cycles, 0),
        "to_sb3": lambda: hub_envs(n, args.max_cycles, 0),
        "supersuit procs": lambda: supersuit_envs(n, args.max_cycles, args.workers),
        "to_sb3 async": lambda: hub_envs(n, args.max_cycles, args.workers),
    }
    reference = {"native": "supersuit", "supersuit": "supersuit", "to_sb3": "supersuit",
                 "supersuit procs": "supersuit procs", "to_sb3 async": "supersuit procs"}
    import importlib.util

    if importlib.util.find_spec("pufferlib") is not None:
        makers["puffer emulation"] = lambda: puffer_envs(n, args.max_cycles, args.workers, False)
        makers["puffer to_pufferlib"] = lambda: puffer_envs(n, args.max_cycles, args.workers, True)
        makers["hub async arrays"] = lambda: hub_arrays(n, args.max_cycles, args.workers)
        for name in ("puffer emulation", "puffer to_pufferlib", "hub async arrays"):
            reference[name] = "supersuit procs"
    rates: dict[str, list[float]] = {name: [] for name in makers}
    envs = {name: make() for name, make in makers.items()}
    try:
        names = list(makers)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                env = envs[name]
                step = env if callable(env) and not hasattr(env, "step_wait") else env.step
                rates[name].append(timed(step, actions, args.seconds) * slots)
                time.sleep(args.pause)  # PufferLib's idle workers poll without sleeping for 0.5 s
    finally:
        for env in envs.values():
            if hasattr(env, "close"):
                env.close()
    print(f"pistonball, {n} copies x {agents} agents = {slots} slots, {args.workers} workers, "
          f"{args.rounds} rounds of {args.seconds:g} s")
    print(f"{'contestant':20s} {'agent-steps/s':>14s} ratios (medians of per-round ratios)")
    for name in makers:
        line = f"{name:20s} {statistics.median(rates[name]):14,.0f}"
        refs = [reference[name]] + (["puffer emulation"] if name in (
            "puffer to_pufferlib", "hub async arrays", "to_sb3 async") and
            "puffer emulation" in rates else [])
        for ref in refs:
            ratio = statistics.median(a / b for a, b in zip(rates[name], rates[ref]))
            line += f" {ratio:8.2f} (to {ref})"
        print(line)
    if args.json:
        write_json(args, rates, reference, slots)
    return 0


def write_json(args: argparse.Namespace, rates: dict[str, list[float]],
               reference: dict[str, str], slots: int) -> None:
    """The medians and paired ratios, as the performance page reads them (docs/data)."""
    import json
    import os
    import platform
    from datetime import datetime, timezone
    from importlib.metadata import PackageNotFoundError, version

    def ratio(name: str, ref: str) -> float:
        return statistics.median(a / b for a, b in zip(rates[name], rates[ref]))

    tables = []
    for ref in dict.fromkeys(reference.values()):
        rows = [{"contender": name, "rate": statistics.median(rates[name]),
                 "ratio": ratio(name, ref)} for name in rates if reference[name] == ref]
        tables.append({"title": f"pistonball, {args.copies} copies x {slots // args.copies} "
                                f"agents (ratio: to {ref})", "rows": rows})
    if "puffer emulation" in rates:
        rows = [{"contender": name, "rate": statistics.median(rates[name]),
                 "ratio": ratio(name, "puffer emulation")}
                for name in ("puffer emulation", "puffer to_pufferlib", "hub async arrays",
                             "to_sb3 async")]
        tables.append({"title": f"pistonball, {args.copies} copies, {args.workers} workers "
                                "(ratio: to PufferLib's Multiprocessing)", "rows": rows})
    versions = {}
    for package in ("pettingzoo", "supersuit", "stable-baselines3", "pufferlib-core"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            pass
    document = {
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version(), "load_average": list(os.getloadavg())},
        "command": "python benchmarks/learner_bridges.py " + " ".join(sys.argv[1:]),
        "versions": versions, "unit": "agent-steps/s, wall clock", "rounds": args.rounds,
        "tables": tables}
    with open(args.json, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=1)


if __name__ == "__main__":
    sys.exit(main())
