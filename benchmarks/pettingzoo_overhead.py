"""Overhead of marlhub's PettingZoo adapters over the native PettingZoo loops.

Contenders, run interleaved in one process (round after round, in a rotating
order, each contender playing the same seeded episodes with the same action
rule), so machine noise hits them alike:

* ``native``: the native loop: AEC ``agent_iter``/``last``/``step``, or
  parallel ``step(actions)`` until ``agents`` is empty;
* ``native again (noise floor)``: a second native instance; its distance from
  1.0 is the noise of the measurement on this machine;
* ``marlhub from_pettingzoo``: marlhub's ``PettingZooEnv`` / ``ParallelPettingZooEnv``;
* ``rllib ...``: RLlib's wrappers of the same names, when Ray is importable.

Envs: PettingZoo's ``classic/connect_four-v3`` and ``classic/tictactoe-v3``
(AEC) and ``butterfly/pistonball-v6`` (parallel, 20 pistons); MPE2's
``simple_spread-v3`` (3 agents, 25 cycles) and MAgent2's ``battle-v4`` (162
agents that die as they fight), each as AEC and as parallel; and a scaling
table of battle's parallel version over map sizes 16, 28 and 45 (12, 50 and
162 agents: MAgent2 places agents by map size, 10 is not one of its counts).
Envs whose package is missing are skipped, with a note.

Every contender picks uniformly random legal actions (from the action mask
when there is one) with its own ``numpy`` generator seeded alike, so the
action cost is the same. Times are CPU time of this process
(``time.process_time``), so time lost to other processes on a shared machine
does not count. Printed per env and contender: the median agent-steps/s and
microseconds per agent-step over the rounds, the median of the per-round
ratios to native, and the median overhead in microseconds per agent-step
((adapted time - native time) / agent-steps).

Usage::

    python benchmarks/pettingzoo_overhead.py                  # ~2 minutes
    python benchmarks/pettingzoo_overhead.py --rounds 5       # fewer rounds
    python benchmarks/pettingzoo_overhead.py --only battle    # tables whose title has 'battle'
    python benchmarks/pettingzoo_overhead.py --quick          # seconds, a smoke test
    python benchmarks/pettingzoo_overhead.py --json out.json  # also write the numbers
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marlhub.adapters.pettingzoo import from_pettingzoo  # noqa: E402
from marlhub.adapters.pettingzoo.family import PettingZooFamily  # noqa: E402
from marlhub.adapters.pettingzoo.family_packages import MAgent2Family, Mpe2Family  # noqa: E402
from marlhub.context import EnvContext  # noqa: E402

Runner = Callable[[int, int], int]  # (first seed, episodes) -> agent-steps
Timings = dict[str, list[tuple[float, int]]]  # contender -> (seconds, agent-steps) per round

FAMILIES = {"pettingzoo": PettingZooFamily, "mpe2": Mpe2Family, "magent2": MAgent2Family}


class Case(NamedTuple):
    """One table: an env, its API and config, and how many episodes a round plays."""

    title: str
    family: str
    rest: str
    api: str
    config: dict[str, Any] = {}
    episodes: int = 1
    agents: int = 0  # for the scaling table

    def make(self) -> Any:
        """A fresh native env, made by marlhub's family (``family.make`` returns it unadapted)."""
        family = FAMILIES[self.family]()
        return family.make(self.rest, EnvContext({"api": self.api, **self.config}))

    def available(self) -> bool:
        return importlib.util.find_spec(self.family) is not None


def _rllib_wrappers() -> Optional[Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from ray.rllib.env.wrappers import pettingzoo_env
    except Exception:  # Ray not installed, or it fails to import here
        return None
    return pettingzoo_env


# -- random legal actions, the same for every contender ---------------------------------


def _pick(rng: np.random.Generator, space: Any, obs: Any, info: Any) -> Any:
    """One random legal action: from the mask (obs or info) if any, else from the space."""
    mask = obs.get("action_mask") if isinstance(obs, dict) else None
    if mask is None and isinstance(info, dict):
        mask = info.get("action_mask")
    if mask is not None:
        legal = np.flatnonzero(mask)
        return int(legal[rng.integers(legal.size)])
    if hasattr(space, "n"):
        return int(space.start) + int(rng.integers(space.n))
    return rng.uniform(space.low, space.high).astype(space.dtype)


def _picks(rng: np.random.Generator, space: Any, n: int) -> list[Any]:
    """``n`` random actions of one unmasked space, drawn at once."""
    if hasattr(space, "n"):
        return (int(space.start) + rng.integers(space.n, size=n)).tolist()
    return list(rng.uniform(space.low, space.high, (n, *space.shape)).astype(space.dtype))


# -- AEC -------------------------------------------------------------------------------


def native_aec(make: Callable[[], Any]) -> Runner:
    env = make()

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            for agent in env.agent_iter():
                obs, reward, term, trunc, info = env.last()
                if term or trunc:
                    action = None
                else:
                    action = _pick(rng, env.action_space(agent), obs, info)
                    steps += 1
                env.step(action)
        return steps

    return run


def hub_aec(adapt: Callable[[Any], Any], make: Callable[[], Any]) -> Runner:
    hub = adapt(make())
    space_of = getattr(hub, "get_action_space", None) or hub.action_space

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            obs, infos = hub.reset(seed=seed + episode)
            while True:
                agent, ob = list(obs.items())[-1]  # the actor, after agents that just ended
                action = _pick(rng, space_of(agent), ob, infos.get(agent))
                steps += 1
                obs, rewards, terms, truncs, infos = hub.step({agent: action})
                if terms["__all__"] or truncs["__all__"]:
                    break
        return steps

    return run


# -- parallel --------------------------------------------------------------------------


def native_parallel(make: Callable[[], Any]) -> Runner:
    env = make()
    return _parallel_loop(env, env.action_space, lambda out: not env.agents)


def hub_parallel(adapt: Callable[[Any], Any], make: Callable[[], Any]) -> Runner:
    hub = adapt(make())
    space_of = getattr(hub, "get_action_space", None) or hub.action_space
    return _parallel_loop(hub, space_of, lambda out: out[2]["__all__"] or out[3]["__all__"])


def _parallel_loop(env: Any, space_of: Callable[[Any], Any], over: Callable[[Any], bool]) -> Runner:
    agents = list(env.possible_agents)
    space = space_of(agents[0])
    if any(space_of(a) != space for a in agents):
        raise ValueError("the parallel loop draws every agent's action from one space")

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            live = list(obs)
            while True:
                out = env.step(dict(zip(live, _picks(rng, space, len(live)))))
                steps += len(live)
                if over(out):
                    break
                terms, truncs = out[2], out[3]
                live = [a for a in out[0] if not (terms[a] or truncs[a])]
        return steps

    return run


# -- measuring -------------------------------------------------------------------------


def contenders_of(case: Case) -> dict[str, Runner]:
    """native, native again, marlhub and (with Ray) RLlib, for the case's API."""
    native, hub = (native_aec, hub_aec) if case.api == "aec" else (native_parallel, hub_parallel)
    runners = {
        "native": native(case.make),
        "native again (noise floor)": native(case.make),
        "marlhub from_pettingzoo": hub(from_pettingzoo, case.make),
    }
    wrappers = _rllib_wrappers()
    if wrappers is not None:
        name = "PettingZooEnv" if case.api == "aec" else "ParallelPettingZooEnv"
        runners[f"rllib {name}"] = hub(getattr(wrappers, name), case.make)
    return runners


def measure(contenders: dict[str, Runner], *, rounds: int, episodes: int) -> Timings:
    """Run each contender once per round, in rotating order; return (CPU seconds, steps) per round."""
    times: Timings = {name: [] for name in contenders}
    names = list(contenders)
    for name in names:  # warm-up: imports, caches, first-episode allocations
        contenders[name](10_000, max(1, episodes // 10))
    for round_index in range(rounds):
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        for name in order:
            start = time.process_time()
            steps = contenders[name](round_index * episodes, episodes)
            times[name].append((time.process_time() - start, steps))
    return times


def summarize(times: Timings) -> list[dict[str, Any]]:
    """Per contender: agent-steps/s, us per agent-step, ratio to native, overhead (medians)."""
    native = times["native"]
    rows = []
    for name, runs in times.items():
        for (_, s1), (_, s2) in zip(runs, native):
            if s1 != s2:
                raise RuntimeError(f"{name} played {s1} agent-steps where native played {s2}")
        rows.append({
            "contender": name,
            "agent_steps_per_s": statistics.median(steps / secs for secs, steps in runs),
            "us_per_agent_step": statistics.median(secs / steps * 1e6 for secs, steps in runs),
            "ratio_to_native": statistics.median(
                n_secs / secs for (secs, _), (n_secs, _) in zip(runs, native)),
            "overhead_us_per_agent_step": statistics.median(
                (secs - n_secs) / steps * 1e6 for (secs, steps), (n_secs, _) in zip(runs, native)),
            "agent_steps_per_round": runs[0][1],
        })
    return rows


def report(title: str, rows: list[dict[str, Any]]) -> list[str]:
    lines = [title, f"  {'contender':<30} {'agent-steps/s':>14} {'us/agent-step':>14} "
                    f"{'ratio to native':>16} {'overhead us/agent-step':>23}"]
    for row in rows:
        native = row["contender"] == "native"
        overhead = "-" if native else f"{row['overhead_us_per_agent_step']:.3f}"
        lines.append(f"  {row['contender']:<30} {row['agent_steps_per_s']:>14,.0f} "
                     f"{row['us_per_agent_step']:>14.3f} {row['ratio_to_native']:>16.3f} "
                     f"{overhead:>23}")
    return lines


def scaling_report(results: list[tuple[Case, list[dict[str, Any]]]]) -> list[str]:
    """battle's parallel version by map size: native and marlhub us per agent-step."""
    lines = ["magent2/battle-v4 (parallel) by number of agents: us per agent-step",
             f"  {'agents':>6} {'map_size':>8} {'native':>10} {'marlhub':>10} {'ratio':>7} "
             f"{'overhead':>9}"]
    for case, rows in results:
        by_name = {row["contender"]: row for row in rows}
        hub = by_name["marlhub from_pettingzoo"]
        lines.append(f"  {case.agents:>6} {case.config['map_size']:>8} "
                     f"{by_name['native']['us_per_agent_step']:>10.3f} "
                     f"{hub['us_per_agent_step']:>10.3f} {hub['ratio_to_native']:>7.3f} "
                     f"{hub['overhead_us_per_agent_step']:>9.3f}")
    return lines


def cases(quick: bool) -> tuple[list[Case], list[Case]]:
    """The tables, and the scaling cases (battle by map size)."""
    cycles = 20 if quick else 50
    battle_cycles = 5 if quick else 60
    main = [
        Case("classic/connect_four-v3 (AEC)", "pettingzoo", "classic/connect_four-v3", "aec",
             episodes=10 if quick else 150),
        Case("classic/tictactoe-v3 (AEC)", "pettingzoo", "classic/tictactoe-v3", "aec",
             episodes=10 if quick else 150),
        Case(f"butterfly/pistonball-v6 (parallel, 20 pistons, {cycles} cycles)", "pettingzoo",
             "butterfly/pistonball-v6", "parallel", {"max_cycles": cycles}),
        Case("mpe2/simple_spread-v3 (AEC, 3 agents, 25 cycles)", "mpe2", "simple_spread-v3",
             "aec", episodes=4 if quick else 40),
        Case("mpe2/simple_spread-v3 (parallel, 3 agents, 25 cycles)", "mpe2", "simple_spread-v3",
             "parallel", episodes=4 if quick else 40),
        Case(f"magent2/battle-v4 (AEC, 162 agents, {battle_cycles} cycles)", "magent2",
             "battle-v4", "aec", {"max_cycles": battle_cycles}),
        Case(f"magent2/battle-v4 (parallel, 162 agents, {battle_cycles} cycles)", "magent2",
             "battle-v4", "parallel", {"max_cycles": battle_cycles}, episodes=1 if quick else 3),
    ]
    scaling = [
        Case(f"magent2/battle-v4 (parallel, map_size {size}, {agents} agents)", "magent2",
             "battle-v4", "parallel", {"map_size": size, "max_cycles": 5 if quick else 100},
             episodes=max(1, 4 * 162 // agents), agents=agents)
        for size, agents in ((16, 12), (28, 50), (45, 162))
    ]
    return main, scaling


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds (default 9)")
    parser.add_argument("--only", default="", metavar="TEXT",
                        help="run only the tables whose title contains TEXT")
    parser.add_argument("--quick", action="store_true", help="seconds: 2 rounds, short episodes")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements to PATH")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 2
    warnings.simplefilter("ignore")  # third-party noise (gymnasium, pygame)

    ray_note = "" if _rllib_wrappers() else " (RLlib wrappers: Ray is not importable here, skipped)"
    out = [f"marlhub PettingZoo adapter overhead: {args.rounds} interleaved rounds, medians, "
           f"CPU time{ray_note}"]
    main_cases, scaling_cases = cases(args.quick)
    tables: list[dict[str, Any]] = []
    scaled: list[tuple[Case, list[dict[str, Any]]]] = []
    for case in [*main_cases, *scaling_cases]:
        if args.only not in case.title:
            continue
        if not case.available():
            out.append(f"{case.title}: skipped, the {case.family} package is not installed")
            continue
        rows = summarize(measure(contenders_of(case), rounds=args.rounds, episodes=case.episodes))
        tables.append({"title": case.title, "config": case.config, "rows": rows})
        if case in scaling_cases:
            scaled.append((case, rows))
        else:
            out += report(case.title, rows)
    if scaled:
        out += scaling_report(scaled)
    print("\n".join(out))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                       "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                   "load_average": os.getloadavg()},
                       "rounds": args.rounds, "tables": tables}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
