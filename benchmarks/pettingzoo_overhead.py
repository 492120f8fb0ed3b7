"""Overhead of marlhub's PettingZoo adapters over the native PettingZoo loops.

Contenders, run interleaved in one process (round after round, each
contender playing the same seeded episodes with the same action rule), so
machine noise hits them alike:

* AEC (``classic/connect_four-v3``, ``classic/tictactoe-v3``): the native
  ``agent_iter``/``last``/``step`` loop; ``from_pettingzoo`` (marlhub's
  ``PettingZooEnv``); RLlib's ``PettingZooEnv`` when Ray is importable.
* parallel (``butterfly/pistonball-v6``): the native ``step(actions)`` loop;
  ``from_pettingzoo`` (marlhub's ``ParallelPettingZooEnv``); RLlib's
  ``ParallelPettingZooEnv`` when Ray is importable.

Every contender picks a uniformly random legal action (from the action mask)
with its own ``numpy`` generator seeded alike, so the action cost is the same.
A second native instance runs as a contender too: its distance from 1.0 is
the noise floor of the measurement on this machine.
Printed per env and contender: median agent-steps/s over the rounds, the
median of the per-round ratios to native, and the median overhead in
microseconds per agent-step ((adapted time - native time) / agent-steps).

Usage::

    python benchmarks/pettingzoo_overhead.py            # ~1 minute
    python benchmarks/pettingzoo_overhead.py --quick    # a few seconds, for a smoke test
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marlhub.adapters.pettingzoo import from_pettingzoo  # noqa: E402

Runner = Callable[[int, int], int]  # (first seed, episodes) -> agent-steps


def _pettingzoo() -> Any:
    import pettingzoo

    return pettingzoo


def _rllib_wrappers() -> Optional[Any]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from ray.rllib.env.wrappers import pettingzoo_env
    except Exception:  # Ray not installed, or it fails to import here
        return None
    return pettingzoo_env


# -- AEC -------------------------------------------------------------------------


def native_aec(env_id: str) -> Runner:
    env = _pettingzoo().make("aec", env_id)

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            for _agent in env.agent_iter():
                obs, reward, term, trunc, info = env.last()
                if term or trunc:
                    action = None
                else:
                    legal = np.flatnonzero(obs["action_mask"])
                    action = int(legal[rng.integers(legal.size)])
                    steps += 1
                env.step(action)
        return steps

    return run


def hub_aec(make_hub: Callable[[Any], Any], env_id: str) -> Runner:
    hub = make_hub(_pettingzoo().make("aec", env_id))

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            obs, infos = hub.reset(seed=seed + episode)
            while True:
                for agent, ob in obs.items():  # one key while the game goes on
                    pass
                legal = np.flatnonzero(ob["action_mask"])
                action = int(legal[rng.integers(legal.size)])
                steps += 1
                obs, rewards, terms, truncs, infos = hub.step({agent: action})
                if terms["__all__"] or truncs["__all__"]:
                    break
        return steps

    return run


def rllib_aec(env_id: str) -> Optional[Runner]:
    wrappers = _rllib_wrappers()
    if wrappers is None:
        return None
    hub = wrappers.PettingZooEnv(_pettingzoo().make("aec", env_id))

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            obs, infos = hub.reset(seed=seed + episode)
            while True:
                for agent, ob in obs.items():
                    pass
                legal = np.flatnonzero(ob["action_mask"])
                action = int(legal[rng.integers(legal.size)])
                steps += 1
                obs, rewards, terms, truncs, infos = hub.step({agent: action})
                if terms["__all__"] or truncs["__all__"]:
                    break
        return steps

    return run


# -- parallel ----------------------------------------------------------------------


def native_parallel(env_id: str, kwargs: dict[str, Any]) -> Runner:
    env = _pettingzoo().make("parallel", env_id, **kwargs)
    return _parallel_loop(env, lambda out: not env.agents)


def hub_parallel(make_hub: Callable[[Any], Any], env_id: str, kwargs: dict[str, Any]) -> Runner:
    hub = make_hub(_pettingzoo().make("parallel", env_id, **kwargs))
    return _parallel_loop(hub, lambda out: out[2]["__all__"] or out[3]["__all__"])


def _parallel_loop(env: Any, over: Callable[[Any], bool]) -> Runner:
    agents = list(env.possible_agents)
    getter = getattr(env, "get_action_space", None) or env.action_space  # hub or PettingZoo
    space = getter(agents[0])

    def run(seed: int, episodes: int) -> int:
        rng = np.random.default_rng(seed)
        steps = 0
        for episode in range(episodes):
            env.reset(seed=seed + episode)
            live = agents
            while True:
                shape = (len(live), *space.shape)
                moves = rng.uniform(space.low, space.high, shape).astype(space.dtype)
                out = env.step(dict(zip(live, moves)))
                steps += len(live)
                if over(out):
                    break
                live = [a for a in out[0] if not (out[2][a] or out[3][a])]
        return steps

    return run


def rllib_parallel(env_id: str, kwargs: dict[str, Any]) -> Optional[Runner]:
    wrappers = _rllib_wrappers()
    if wrappers is None:
        return None
    hub = wrappers.ParallelPettingZooEnv(_pettingzoo().make("parallel", env_id, **kwargs))
    return _parallel_loop(hub, lambda out: out[2]["__all__"] or out[3]["__all__"])


# -- measuring -------------------------------------------------------------------


def measure(contenders: dict[str, Runner], *, rounds: int,
            episodes: int) -> dict[str, list[tuple[float, int]]]:
    """Run each contender once per round, in rotating order; return (seconds, steps) per round."""
    times: dict[str, list[tuple[float, int]]] = {name: [] for name in contenders}
    names = list(contenders)
    for name in names:  # warm-up: imports, caches, first-episode allocations
        contenders[name](10_000, max(1, episodes // 10))
    for round_index in range(rounds):
        order = names[round_index % len(names):] + names[: round_index % len(names)]
        for name in order:
            start = time.perf_counter()
            steps = contenders[name](round_index * episodes, episodes)
            times[name].append((time.perf_counter() - start, steps))
    return times


def report(title: str, times: dict[str, list[tuple[float, int]]]) -> list[str]:
    native = times["native"]
    header = (f"  {'contender':<28} {'agent-steps/s':>14} {'ratio to native':>16} "
              f"{'overhead us/agent-step':>23}")
    lines = [title, header]
    for name, runs in times.items():
        rate = statistics.median(steps / secs for secs, steps in runs)
        if name == "native":
            lines.append(f"  {name:<28} {rate:>14,.0f} {'1.000':>16} {'-':>23}")
            continue
        for (_, s1), (_, s2) in zip(runs, native):
            if s1 != s2:
                raise RuntimeError(f"{name} played {s1} agent-steps where native played {s2}")
        ratio = statistics.median(n_secs / secs for (secs, _), (n_secs, _) in zip(runs, native))
        overhead = statistics.median(
            (secs - n_secs) / steps * 1e6 for (secs, steps), (n_secs, _) in zip(runs, native))
        lines.append(f"  {name:<28} {rate:>14,.0f} {ratio:>16.3f} {overhead:>23.2f}")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--episodes", type=int, default=150,
                        help="AEC episodes per contender and round (default 150)")
    parser.add_argument("--parallel-episodes", type=int, default=1,
                        help="pistonball episodes per contender and round (default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="a few seconds: 2 rounds, few episodes")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.episodes, args.parallel_episodes = 2, 10, 1
    warnings.simplefilter("ignore")  # third-party noise (gymnasium, pygame)

    out = [f"marlhub PettingZoo adapter overhead: {args.rounds} interleaved rounds, medians"]
    ray_note = "" if _rllib_wrappers() else " (RLlib wrappers: Ray is not importable here, skipped)"
    for env_id in ("classic/connect_four-v3", "classic/tictactoe-v3"):
        contenders: dict[str, Runner] = {
            "native": native_aec(env_id),
            "native again (noise floor)": native_aec(env_id),
            "marlhub from_pettingzoo": hub_aec(from_pettingzoo, env_id),
        }
        rllib = rllib_aec(env_id)
        if rllib is not None:
            contenders["rllib PettingZooEnv"] = rllib
        times = measure(contenders, rounds=args.rounds, episodes=args.episodes)
        out += report(f"{env_id} (AEC){ray_note}", times)
    # Short episodes, many rounds: pistonball steps are slow, and pairing short runs
    # keeps the machine's load from drifting between the two contenders of a round.
    kwargs = {"max_cycles": 20 if args.quick else 50}
    env_id = "butterfly/pistonball-v6"
    contenders = {
        "native": native_parallel(env_id, kwargs),
        "native again (noise floor)": native_parallel(env_id, kwargs),
        "marlhub from_pettingzoo": hub_parallel(from_pettingzoo, env_id, kwargs),
    }
    rllib_par = rllib_parallel(env_id, kwargs)
    if rllib_par is not None:
        contenders["rllib ParallelPettingZooEnv"] = rllib_par
    times = measure(contenders, rounds=args.rounds, episodes=args.parallel_episodes)
    title = f"{env_id} (parallel, 20 pistons, {kwargs['max_cycles']} cycles){ray_note}"
    out += report(title, times)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
