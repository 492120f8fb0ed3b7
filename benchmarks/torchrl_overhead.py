"""TorchRL both ways: to_torchrl against TorchRL's PettingZooWrapper, from_torchrl against native VMAS.

Two tables from one interleaved run (each round runs every case with every
contestant, in a rotating order; times are CPU time, ``time.process_time``;
medians over rounds, and in brackets the median over rounds of the paired
ratio to the reference of the same round, so drifts of the machine cancel):

1. **hub -> TorchRL**, rollout frames per second of ``env.rollout(steps,
   break_when_any_done=False)`` (random actions from the spec, TorchRL's own
   reset between episodes) on tic_tac_toe (turn-based, through PettingZoo's
   AEC API), rock_paper_scissors and pistonball (simultaneous, parallel API):

   * ``PettingZooWrapper``: ``PettingZooWrapper(to_pettingzoo(hub), use_mask=True)``,
     TorchRL's own way in for a hub env (the reference);
   * ``to_torchrl``: ``to_torchrl(hub)``.

   Goal: ``to_torchrl`` >= 1.2x ``PettingZooWrapper``.

2. **VMAS -> hub**, steps per second of one copy (``num_envs=1``) with random
   actions drawn by VMAS (``get_random_actions``), converted per contestant, and a
   reset whenever the scenario ends:

   * ``native``: ``vmas.make_env(...)`` stepped with VMAS's list of tensors (the reference);
   * ``from_torchrl``: ``from_torchrl(VmasEnv(...))`` stepped with the hub's action dict;
   * ``torchrl.VmasEnv``: TorchRL's ``VmasEnv.step`` itself, for scale.

   Goal: ``from_torchrl`` >= 0.9 of native.

Run::

    python benchmarks/torchrl_overhead.py [--rounds 7] [--steps 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import vmas  # noqa: E402
from torchrl.envs.libs.pettingzoo import PettingZooWrapper  # noqa: E402
from torchrl.envs.libs.vmas import VmasEnv  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import to_pettingzoo  # noqa: E402
from marlhub.adapters.torchrl import from_torchrl, to_torchrl  # noqa: E402

warnings.filterwarnings("ignore", "PettingZoo in TorchRL is tested", UserWarning)
logging.getLogger("torchrl").setLevel(logging.WARNING)

#: (case, registry id, config, PettingZoo API of the reference)
HUB_CASES = [
    ("tic_tac_toe (AEC)", "tic_tac_toe", {}, "aec"),
    ("rock_paper_scissors", "rock_paper_scissors", {}, "parallel"),
    ("pistonball", "pettingzoo/butterfly/pistonball-v6", {"api": "parallel"}, "parallel"),
]
VMAS_CASES = ["balance", "navigation", "simple_spread"]
TO_GOAL, FROM_GOAL = 1.2, 0.9


def rollout_rate(make: Callable[[], Any], steps: int, seed: int) -> float:
    """Frames per second of TorchRL's own rollout (random actions, resets included)."""
    env = make()
    torch.manual_seed(seed)
    env.set_seed(seed)
    start = time.process_time()
    env.rollout(steps, break_when_any_done=False)
    return steps / (time.process_time() - start)


def hub_contestants(env_id: str, config: dict, api: str) -> dict[str, Callable[[], Any]]:
    """The two TorchRL envs of one hub env."""
    return {
        "PettingZooWrapper": lambda: PettingZooWrapper(
            to_pettingzoo(marlhub.make(env_id, config), api=api), use_mask=True),
        "to_torchrl": lambda: to_torchrl(marlhub.make(env_id, config)),
    }


def vmas_native(scenario: str, steps: int, seed: int) -> float:
    env = vmas.make_env(scenario, num_envs=1, seed=seed)
    env.reset(seed=seed)
    start = time.process_time()
    for _ in range(steps):
        if bool(env.step(env.get_random_actions())[2][0]):
            env.reset()
    return steps / (time.process_time() - start)


def vmas_from_torchrl(scenario: str, steps: int, seed: int) -> float:
    native = VmasEnv(scenario, num_envs=1, seed=seed)
    hub = from_torchrl(native)
    hub.reset(seed=seed)
    raw = native._env  # VMAS draws the random actions, as in the native loop
    names = hub.possible_agents
    start = time.process_time()
    for _ in range(steps):
        actions = {a: t[0].numpy() for a, t in zip(names, raw.get_random_actions())}
        _, _, terminateds, truncateds, _ = hub.step(actions)
        if terminateds["__all__"] or truncateds["__all__"]:
            hub.reset()
    return steps / (time.process_time() - start)


def vmas_torchrl(scenario: str, steps: int, seed: int) -> float:
    env = VmasEnv(scenario, num_envs=1, seed=seed)
    td = env.reset()
    raw = env._env
    start = time.process_time()
    for _ in range(steps):
        td.set(("agents", "action"), torch.stack(raw.get_random_actions(), dim=1))
        if bool(env.step(td)["next", "done"].any()):
            td = env.reset()
    return steps / (time.process_time() - start)


VMAS_CONTESTANTS: dict[str, Callable[[str, int, int], float]] = {
    "native": vmas_native, "from_torchrl": vmas_from_torchrl, "torchrl.VmasEnv": vmas_torchrl,
}


def rotated(names: list[str], round_index: int) -> list[str]:
    k = round_index % len(names)
    return names[k:] + names[:k]


def measure(rounds: int, steps: int, seed: int) -> dict[str, dict[str, list[float]]]:
    """Every case with every contestant, interleaved; case -> contestant -> rates."""
    results: dict[str, dict[str, list[float]]] = {}
    for case, env_id, config, api in HUB_CASES:  # warm up
        for make in hub_contestants(env_id, config, api).values():
            rollout_rate(make, 50, seed)
    for round_index in range(rounds):
        for case, env_id, config, api in HUB_CASES:
            contestants = hub_contestants(env_id, config, api)
            for name in rotated(list(contestants), round_index):
                rate = rollout_rate(contestants[name], steps, seed + round_index)
                results.setdefault(case, {}).setdefault(name, []).append(rate)
        for scenario in VMAS_CASES:
            for name in rotated(list(VMAS_CONTESTANTS), round_index):
                rate = VMAS_CONTESTANTS[name](scenario, steps, seed + round_index)
                results.setdefault(f"vmas/{scenario}", {}).setdefault(name, []).append(rate)
    return results


def table(results: dict[str, dict[str, list[float]]], cases: list[str], reference: str,
          unit: str) -> tuple[list[str], dict[str, dict[str, float]]]:
    """Lines of one table and each case's median paired ratios to ``reference``."""
    names = list(results[cases[0]])
    lines = [f"{'case':<22}" + "".join(f"{n:>26}" for n in names) + f"   ({unit})"]
    ratios: dict[str, dict[str, float]] = {}
    for case in cases:
        base = results[case][reference]
        ratios[case] = {}
        cells = []
        for name in names:
            rates = results[case][name]
            ratio = statistics.median(r / b for r, b in zip(rates, base))
            ratios[case][name] = ratio
            cells.append(f"{statistics.median(rates):>16,.0f} ({ratio:4.2f}x)")
        lines.append(f"{case:<22}" + "".join(f"{c:>26}" for c in cells))
    return lines, ratios


def main(argv: Optional[list[str]] = None) -> int:
    """Run the interleaved rounds, print both tables; 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=600, help="frames or steps per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results = measure(args.rounds, args.steps, args.seed)
    print(f"CPU time, median of {args.rounds} interleaved rounds of {args.steps} frames/steps "
          "(median paired ratio to the first column)\n")
    hub_cases = [case for case, *_ in HUB_CASES]
    lines, to_ratios = table(results, hub_cases, "PettingZooWrapper", "rollout frames/s")
    print("\n".join(lines) + "\n")
    vmas_cases = [f"vmas/{s}" for s in VMAS_CASES]
    lines, from_ratios = table(results, vmas_cases, "native", "steps/s, one copy")
    print("\n".join(lines))
    to_worst = min(r["to_torchrl"] for r in to_ratios.values())
    from_worst = min(r["from_torchrl"] for r in from_ratios.values())
    print(f"\nto_torchrl: worst {to_worst:.2f}x PettingZooWrapper (goal >= {TO_GOAL}); "
          f"from_torchrl: worst {from_worst:.2f} of native VMAS (goal >= {FROM_GOAL})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                                   "python": platform.python_version()},
                       "rounds": args.rounds, "steps": args.steps, "rates": results,
                       "ratios": {**to_ratios, **from_ratios}}, f, indent=1)
    return 0 if to_worst >= TO_GOAL and from_worst >= FROM_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
