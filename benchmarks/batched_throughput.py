"""Throughput of batched VMAS through marlhub: agent-steps/s against the number of copies.

VMAS scenarios ``balance`` and ``navigation`` (``n_agents=4``, Discrete actions:
``continuous_actions=False``, ``max_steps=100`` so that episodes end and copies
are reset while timed) with ``N`` copies (1, 16, 64, 256, 1024, 4096 by
default) on ``--device`` (``cpu`` by default; ``cuda`` where a GPU is).
Contestants, run interleaved in one process (round after round, in a rotating
order), so drifts of the machine's speed hit them alike:

* ``native``: ``vmas.make_env(scenario, num_envs=N, ...)`` stepped with a
  list of one ``(N, 1)`` int64 tensor per agent; the copies that are done reset
  as TorchRL's ``VmasEnv`` resets them (``reset_at(i)`` per done copy, or one
  ``reset()`` when all are done, then one ``get_from_scenario`` for the
  observations and infos); the stacked observations and the rewards are pulled to
  numpy (``.cpu().numpy()``), as the array face does (which also pulls the infos
  and done flags);
* ``torchrl VmasEnv``: ``torchrl.envs.libs.vmas.VmasEnv(scenario, num_envs=N, ...)``
  stepped with ``step_and_maybe_reset`` (a collector's path), the actions at
  ``("agents", "action")``, ``(N, 4)`` int64 (TorchRL's categorical actions);
* ``marlhub arrays``: ``marlhub.make_vec(f"vmas/{scenario}", N, config)`` (ONE
  VMAS env: a ``BatchedVectorEnv``) stepped with ``step_arrays({"agents": a})``,
  ``a`` a numpy int64 array ``(N, 4)``;
* ``marlhub arrays torch``: the same made with ``as_torch=True``, the actions a
  torch tensor on the device, the arrays returned as the device's tensors;
* ``marlhub to_torchrl``: ``to_torchrl(make_vec(..., as_torch=True), device=...)``
  stepped as ``torchrl VmasEnv`` (the simulator's tensors stay on its device);
* ``marlhub dicts``: ``make_vec(...)`` stepped with its dict face, ``step(list)`` of one
  ``{agent: int}`` per copy (the lists are built before the timing);
* ``one env per copy``: ``make_vec(..., vectorization_mode="sync")``, N VMAS envs of
  one copy each (what ``make_vec`` of ``vmas/`` gave before the batched env), stepped
  with the dict face; only up to ``--sync-max`` copies (256), ``-`` beyond.

Where JaxMARL is installed, the scenario ``jaxmarl:MPE_simple_spread_v3`` (3 agents)
has its own contestants: ``native`` is JaxMARL's own ``env.step`` (with its automatic
reset) under ``jax.vmap`` and ``jit``, one key per copy, the observations, rewards and
dones pulled to numpy (``jax.device_get``); ``marlhub arrays`` and ``marlhub dicts`` are
``make_vec("jaxmarl/MPE_simple_spread_v3", N)``'s two faces; ``pettingzoo mpe2 serial`` is
N of PettingZoo's ``mpe2`` ``simple_spread_v3`` parallel envs stepped one after another
(up to ``--sync-max``).

The marlhub vector envs autoreset ``next_step``: a copy whose episode ended is
reset in the next call, which ignores its actions; every call still counts
``N * 4`` agent-steps for every contestant (one agent's action in one copy).

Each contestant is built and reset untimed, makes ``--warm-up`` untimed steps
and then ``--steps`` timed steps. The default warm-up puts the end of the first
episodes (step 100, and the ``next_step`` reset in step 101) among the timed
steps: 2 steps for ``--steps`` of 100 or more, else ``100 - steps // 2`` (and 2
with ``--quick``, whose 10 steps see no episode end). The
actions are random ints of the Discrete space, drawn once per round, scenario
and N (a pool of 16 batches, used in turn), outside the timing; every contestant
gets the same ones, in its own form. Times are wall-clock (with CUDA, the device
is synchronized before the clock stops). Printed per scenario: the median
agent-steps/s over the rounds, then the median per-round ratio to ``native`` (and of ``marlhub to_torchrl`` to ``torchrl VmasEnv``). A contestant
that runs out of memory shows ``oom``, one that raises ``err`` (the errors are
listed below the tables).

Usage::

    python benchmarks/batched_throughput.py                        # all N, 5 rounds: hours
    #   on 2 CPU cores (one env per copy of 256 copies: ~4 minutes per round and scenario)
    python benchmarks/batched_throughput.py --copies 64 256 --rounds 3 --steps 50 \\
        --scenarios balance
    python benchmarks/batched_throughput.py --device cuda --copies 1024 4096 16384
    python benchmarks/batched_throughput.py --contestants native "one env per copy"
    python benchmarks/batched_throughput.py --quick                 # a smoke test, < 1 minute
    python benchmarks/batched_throughput.py --json out.json         # also write the numbers
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import vmas  # noqa: E402

import marlhub  # noqa: E402

SCENARIOS = ["balance", "navigation"]
COPIES = [1, 16, 64, 256, 1024, 4096]
N_AGENTS = 4
MAX_STEPS = 100
CONFIG = {"continuous_actions": False, "max_steps": MAX_STEPS, "n_agents": N_AGENTS}
POOL = 16  # action batches drawn per round, scenario and N, used in turn
NATIVE, TORCHRL, TO_TORCHRL, SYNC = ("native", "torchrl VmasEnv", "marlhub to_torchrl",
                                     "one env per copy")


class Job(NamedTuple):
    """One measurement: a scenario, N copies, how long, where, and the actions."""

    scenario: str
    agents: int  # agents per copy: N * agents agent-steps per vector step
    n: int
    steps: int
    warm_up: int
    device: str
    seed: int
    actions: Any  # torch int64 (POOL, n, N_AGENTS) on the CPU


Step = Callable[[int], None]  # step(t): one vector step with the actions of step t
Runner = Callable[[Job], tuple[Step, Callable[[], None]]]  # build + reset -> (step, close)


def config(job: Job) -> dict[str, Any]:
    return {**CONFIG, "device": job.device}


def env_id(job: Job) -> str:
    return f"vmas/{job.scenario}"


# -- contestants: each builds and resets (untimed), returns (step, close) ----------------


def run_native(job: Job) -> tuple[Step, Callable[[], None]]:
    env = vmas.make_env(job.scenario, num_envs=job.n, seed=job.seed, **config(job))
    env.reset()
    pool = [[a[:, j:j + 1].contiguous() for j in range(N_AGENTS)]
            for a in job.actions.to(job.device)]

    def step(t: int) -> None:
        obs, rewards, dones, infos = env.step(pool[t % POOL])
        torch.stack(obs, 1).cpu().numpy()
        torch.stack(rewards, 1).cpu().numpy()
        done = dones.cpu().numpy()
        if done.any():  # as TorchRL's VmasEnv._reset
            if done.all():
                env.reset(return_observations=False)
            else:
                for i in done.nonzero()[0].tolist():
                    env.reset_at(i, return_observations=False)
            obs, _ = env.get_from_scenario(get_observations=True, get_infos=True,
                                           get_rewards=False, get_dones=False)
            torch.stack(obs, 1).cpu().numpy()

    return step, lambda: None


def torchrl_stepper(env: Any, job: Job) -> tuple[Step, Callable[[], None]]:
    """Step a TorchRL env as a collector does: ``step_and_maybe_reset``."""
    pool = list(job.actions.to(job.device))
    td = env.reset()

    def step(t: int) -> None:
        nonlocal td
        td.set(("agents", "action"), pool[t % POOL])
        _, td = env.step_and_maybe_reset(td)

    return step, env.close


def run_torchrl(job: Job) -> tuple[Step, Callable[[], None]]:
    from torchrl.envs.libs.vmas import VmasEnv

    env = VmasEnv(job.scenario, num_envs=job.n, seed=job.seed, **config(job))
    return torchrl_stepper(env, job)


def run_to_torchrl(job: Job) -> tuple[Step, Callable[[], None]]:
    from marlhub.adapters.torchrl import to_torchrl

    env = to_torchrl(marlhub.make_vec(env_id(job), job.n, config(job), as_torch=True),
                     device=job.device)
    env.set_seed(job.seed)
    return torchrl_stepper(env, job)


def run_arrays(job: Job, *, as_torch: bool = False) -> tuple[Step, Callable[[], None]]:
    envs = marlhub.make_vec(env_id(job), job.n, config(job), as_torch=as_torch)
    envs.reset_arrays(seed=job.seed)
    pool = list(job.actions.to(job.device)) if as_torch else list(job.actions.numpy())

    def step(t: int) -> None:
        envs.step_arrays({"agents": pool[t % POOL]})

    return step, envs.close


def run_arrays_torch(job: Job) -> tuple[Step, Callable[[], None]]:
    return run_arrays(job, as_torch=True)


def run_dicts(job: Job, *, mode: Optional[str] = None) -> tuple[Step, Callable[[], None]]:
    envs = marlhub.make_vec(env_id(job), job.n, config(job), vectorization_mode=mode)
    envs.reset(seed=job.seed)
    agents = list(envs.possible_agents)
    pool = [[dict(zip(agents, row)) for row in a] for a in job.actions.tolist()]

    def step(t: int) -> None:
        envs.step(pool[t % POOL])

    return step, envs.close


def run_sync(job: Job) -> tuple[Step, Callable[[], None]]:
    return run_dicts(job, mode="sync")


def contestants(scenario: str = SCENARIOS[0]) -> dict[str, Runner]:
    """The contestants of ``scenario``, in the tables' order (JaxMARL's: :data:`JAX`)."""
    if scenario == JAX:
        return {NATIVE: run_jax_native, "marlhub arrays": run_jax_arrays,
                "marlhub dicts": run_jax_dicts, MPE2: run_mpe2}
    return {
        NATIVE: run_native, TORCHRL: run_torchrl, "marlhub arrays": run_arrays,
        "marlhub arrays torch": run_arrays_torch, TO_TORCHRL: run_to_torchrl,
        "marlhub dicts": run_dicts, SYNC: run_sync,
    }


# -- JaxMARL's MPE simple_spread: its jitted vmapped step, marlhub's faces, PettingZoo's mpe2 --

JAX = "jaxmarl:MPE_simple_spread_v3"
JAX_AGENTS = 3
MPE2 = "pettingzoo mpe2 serial"


def run_jax_native(job: Job) -> tuple[Step, Callable[[], None]]:
    """JaxMARL's own step (with its automatic reset) under jax.vmap and jit, pulled to numpy."""
    import jax
    import jaxmarl

    env = jaxmarl.make("MPE_simple_spread_v3", max_steps=MAX_STEPS)
    keys = jax.random.split(jax.random.PRNGKey(job.seed), job.n)
    _, state = jax.jit(jax.vmap(env.reset))(keys)
    split = jax.jit(jax.vmap(jax.random.split))
    step_all = jax.jit(jax.vmap(env.step))
    agents = list(env.agents)
    pool = [{a: a_batch[:, j] for j, a in enumerate(agents)} for a_batch in job.actions.numpy()]

    def step(t: int) -> None:
        nonlocal keys, state
        both = split(keys)
        keys = both[:, 0]
        obs, state, rewards, dones, _ = step_all(both[:, 1], state, pool[t % POOL])
        jax.device_get((obs, rewards, dones))

    return step, lambda: None


def run_jax_arrays(job: Job) -> tuple[Step, Callable[[], None]]:
    envs = marlhub.make_vec("jaxmarl/MPE_simple_spread_v3", job.n, {"max_steps": MAX_STEPS})
    envs.reset_arrays(seed=job.seed)
    pool = list(job.actions.numpy())

    def step(t: int) -> None:
        envs.step_arrays({"agents": pool[t % POOL]})

    return step, envs.close


def run_jax_dicts(job: Job) -> tuple[Step, Callable[[], None]]:
    envs = marlhub.make_vec("jaxmarl/MPE_simple_spread_v3", job.n, {"max_steps": MAX_STEPS})
    envs.reset(seed=job.seed)
    agents = list(envs.possible_agents)
    pool = [[dict(zip(agents, row)) for row in a] for a in job.actions.tolist()]

    def step(t: int) -> None:
        envs.step(pool[t % POOL])

    return step, envs.close


def run_mpe2(job: Job) -> tuple[Step, Callable[[], None]]:
    """N of PettingZoo's mpe2 simple_spread_v3 parallel envs, stepped one after another."""
    from mpe2 import simple_spread_v3

    envs = [simple_spread_v3.parallel_env(max_cycles=MAX_STEPS) for _ in range(job.n)]
    for i, env in enumerate(envs):
        env.reset(seed=job.seed + i)
    agents = list(envs[0].possible_agents)
    pool = [[dict(zip(agents, row)) for row in a] for a in job.actions.tolist()]

    def step(t: int) -> None:
        for env, actions in zip(envs, pool[t % POOL]):
            if not env.agents:
                env.reset()
            env.step({a: actions[a] for a in env.agents})

    return step, lambda: [env.close() for env in envs] and None


# -- measuring ----------------------------------------------------------------------------


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def clock(runner: Runner, job: Job) -> float:
    """Build and reset (untimed), warm up (untimed), time ``job.steps``; return agent-steps/s."""
    step, close = runner(job)
    try:
        for t in range(job.warm_up):
            step(t)
        synchronize(job.device)
        start = time.perf_counter()
        for t in range(job.warm_up, job.warm_up + job.steps):
            step(t)
        synchronize(job.device)
        elapsed = time.perf_counter() - start
    finally:
        close()
    return job.steps * job.n * job.agents / elapsed


def failure(error: BaseException) -> str:
    """``oom`` for a lack of memory, else ``err``."""
    text = str(error).lower()
    if isinstance(error, MemoryError) or "out of memory" in text or "can't allocate" in text \
            or "not enough memory" in text:
        return "oom"
    return "err"


def agents_of(scenario: str) -> int:
    return JAX_AGENTS if scenario == JAX else N_AGENTS


def actions_for(scenario: str, n: int, seed: int) -> Any:
    """A pool of random actions in the scenario's Discrete space (each agent's ``n``)."""
    if scenario == JAX:
        sizes = torch.tensor([5] * JAX_AGENTS)  # MPE's Discrete(5) moves
    else:
        space = vmas.make_env(scenario, num_envs=1, device="cpu", **CONFIG).action_space
        sizes = torch.tensor([int(s.n) for s in space.spaces])
    generator = torch.Generator().manual_seed(seed)
    draws = torch.rand((POOL, n, agents_of(scenario)), generator=generator)
    return (draws * sizes).long().clamp_max(sizes - 1)


Results = dict[tuple[str, int, str], list[Any]]  # per round: agent-steps/s, "oom", "err", None


def measure(args: argparse.Namespace) -> tuple[Results, list[str]]:
    results: Results = {}
    errors: list[str] = []
    for r in range(args.rounds):
        for scenario in args.scenarios:
            runners = {name: run for name, run in contestants(scenario).items()
                       if args.contestants is None or name in args.contestants}
            for k, n in enumerate(args.copies):
                actions = actions_for(scenario, n, args.seed + r)
                job = Job(scenario, agents_of(scenario), n, args.steps, args.warm_up,
                          args.device, args.seed + r, actions)
                order = list(runners)
                shift = (r + k) % len(order)
                for name in order[shift:] + order[:shift]:
                    cell = results.setdefault((scenario, n, name), [None] * args.rounds)
                    if name in (SYNC, MPE2) and n > args.sync_max:
                        continue
                    try:
                        cell[r] = clock(runners[name], job)
                    except Exception as error:  # MemoryError, RuntimeError (CUDA), ...: noted
                        cell[r] = failure(error)
                        errors.append(f"{scenario} N={n} {name}: {type(error).__name__}: "
                                      f"{str(error).splitlines()[0] if str(error) else ''}")
                        print(f"  {errors[-1]}", file=sys.stderr)
                    gc.collect()
                    if args.device.startswith("cuda"):
                        torch.cuda.empty_cache()
            print(f"round {r + 1}/{args.rounds}: {scenario} done", file=sys.stderr)
    return results, errors


# -- printing -----------------------------------------------------------------------------


def median_rate(rates: list[Any]) -> Any:
    """The median of the rounds' rates, or the failure ("oom", "err"), or None (not run)."""
    numbers = [x for x in rates if isinstance(x, float)]
    if numbers:
        return statistics.median(numbers)
    return next((x for x in rates if isinstance(x, str)), None)


def median_ratio(rates: Optional[list[Any]], base: Optional[list[Any]]) -> Optional[float]:
    """The median over the rounds where both ran of ``rate / base``."""
    if not rates or not base:
        return None
    pairs = [a / b for a, b in zip(rates, base) if isinstance(a, float) and isinstance(b, float)]
    return statistics.median(pairs) if pairs else None


def cell(value: Any, spec: str) -> str:
    if value is None:
        return f"{'-':>12}"
    if isinstance(value, str):
        return f"{value:>12}"
    return f"{value:>12{spec}}"


def tables(results: Results, scenario: str, copies: list[int]) -> list[str]:
    names = list(dict.fromkeys(k[2] for k in results if k[0] == scenario))
    head = f"{'contestant':<22}" + "".join(f"{f'N={n}':>12}" for n in copies)
    lines = [f"{scenario}: median agent-steps/s", head]
    for name in names:
        lines.append(f"{name:<22}" + "".join(
            cell(median_rate(results.get((scenario, n, name), [])), ",.0f") for n in copies))
    lines += ["", f"{scenario}: median per-round ratio to {NATIVE}", head]
    for name in names:
        if name == NATIVE:
            continue
        lines.append(f"{name:<22}" + "".join(
            cell(median_ratio(results.get((scenario, n, name)),
                              results.get((scenario, n, NATIVE))), ".3f") for n in copies))
    if scenario != JAX:
        lines.append(f"{'to_torchrl / VmasEnv':<22}" + "".join(
            cell(median_ratio(results.get((scenario, n, TO_TORCHRL)),
                              results.get((scenario, n, TORCHRL))), ".3f") for n in copies))
    return lines


def machine(args: argparse.Namespace) -> dict[str, Any]:
    import torchrl

    found = {"cpus": os.cpu_count(), "python": platform.python_version(),
             "platform": platform.platform(), "torch": torch.__version__,
             "vmas": getattr(vmas, "__version__", "?"), "torchrl": torchrl.__version__,
             "marlhub": marlhub.__version__, "device": args.device,
             "torch_threads": torch.get_num_threads(),
             "load_average_before": [round(x, 2) for x in os.getloadavg()]
             if hasattr(os, "getloadavg") else None}
    if args.device.startswith("cuda"):
        found["gpu"] = torch.cuda.get_device_name(torch.device(args.device))
    return found


def write_json(path: str, args: argparse.Namespace, info: dict[str, Any], results: Results,
               errors: list[str]) -> None:
    document = {
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": info,
        "command": shlex.join(["python", "benchmarks/batched_throughput.py", *sys.argv[1:]]),
        "unit": "agent-steps/s, wall time", "config": CONFIG, "rounds": args.rounds,
        "steps": args.steps, "warm_up": args.warm_up, "errors": errors,
        "results": [{"scenario": s, "copies": n, "contestant": c,
                     "rates": [round(x, 1) if isinstance(x, float) else x for x in rates],
                     "median": median_rate(rates),
                     "ratio_to_native": median_ratio(rates, results.get((s, n, NATIVE)))}
                    for (s, n, c), rates in sorted(results.items())],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def default_scenarios() -> list[str]:
    import importlib.util

    return SCENARIOS + ([JAX] if importlib.util.find_spec("jaxmarl") else [])


def parse(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", nargs="+", default=default_scenarios(),
                        help=f"VMAS scenarios, and {JAX!r} (where JaxMARL is installed)")
    parser.add_argument("--copies", nargs="+", type=int, default=COPIES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100, help="timed vector steps")
    parser.add_argument("--warm-up", type=int, default=None,
                        help="untimed steps first (default: 2 for 100 steps or more, "
                        "else 100 - steps // 2)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--sync-max", type=int, default=256,
                        help="the most copies 'one env per copy' runs")
    parser.add_argument("--contestants", nargs="+", metavar="NAME",
                        choices=list(dict.fromkeys([*contestants(), *contestants(JAX)])),
                        help="only these (quoted names, as in the tables); all by default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="N 1 and 16, 2 rounds of 10 steps (a smoke test)")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements to PATH")
    args = parser.parse_args(argv)
    if args.quick:
        args.copies, args.rounds, args.steps = [1, 16], 2, 10
    if args.warm_up is None:  # the first episodes end among the timed steps (not --quick)
        args.warm_up = 2 if args.quick or args.steps >= MAX_STEPS else \
            MAX_STEPS - args.steps // 2
    return args


def main(argv: Optional[list[str]] = None) -> int:
    """Measure, print the tables, optionally write JSON; return 0."""
    args = parse(argv)
    torch.set_num_threads(args.threads)
    info = machine(args)
    print(", ".join(f"{k} {v}" for k, v in info.items() if k not in ("python", "platform")))
    print(f"{args.rounds} interleaved rounds; {args.steps} timed steps after {args.warm_up} "
          f"untimed; {N_AGENTS} agents (JaxMARL's simple_spread: {JAX_AGENTS}), Discrete "
          f"actions, max_steps {MAX_STEPS}", flush=True)
    results, errors = measure(args)
    for scenario in args.scenarios:
        print()
        print("\n".join(tables(results, scenario, args.copies)))
    if errors:
        print("\nerrors:\n" + "\n".join(f"  {e}" for e in dict.fromkeys(errors)))
    if args.json:
        write_json(args.json, args, info, results, errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
