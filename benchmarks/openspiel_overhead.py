"""Overhead of from_openspiel against a raw pyspiel loop (and RLlib's and Shimmy's wrappers).

Every contestant plays the same games with the same "agent": at each decision
it gets the acting player's observation tensor and legal-action mask and picks
uniformly among the legal actions (``np.flatnonzero(mask)``). The raw loop
does that by hand, to be fair: ``state.observation_tensor(p)`` and
``state.legal_actions_mask(p)`` for each acting player, ``apply_action`` or
``apply_actions``, chance outcomes sampled from a seeded generator.

The contestants, games and rounds are interleaved in one run: each round plays
every game with every contestant, in a rotating order, for a fixed number of
agent-steps (one agent's action; a simultaneous node of n players counts n),
timed in CPU time (``time.process_time``, which a busy machine disturbs less
than wall time). The table gives each contestant's median agent-steps per
second and, in brackets, the median over rounds of its ratio to the raw loop
in the same round (paired, so drifts of the machine's speed cancel).

Contestants:

* ``raw``: the loop above;
* ``by_hand``: the ceiling of any adapter with the hub's API: the same loop building what
  ``from_openspiel`` returns (a dict per actor with the observation array and the mask,
  per-step rewards from ``returns()``, the done dicts, every player's final observation)
  inline, with no class and no checks; ``by_hand_no_final``: the same without the final
  observations (what the contract's ``done.final_obs`` costs);
* ``marlhub``: ``from_openspiel(game)`` (``reset()`` unseeded after the first);
* ``rllib``: ``ray.rllib.env.wrappers.open_spiel.OpenSpielEnv``, when Ray is installed;
* ``shimmy``: ``shimmy.OpenSpielCompatibilityV0`` (a PettingZoo AEC env), when installed.

Run::

    python benchmarks/openspiel_overhead.py [--rounds 15] [--steps 4000] [--games kuhn_poker ...]
    python benchmarks/openspiel_overhead.py --json out.json   # also write the numbers

The JSON has the shape of ``pettingzoo_overhead.py``'s (``tables`` of ``rows`` per
contender: ``agent_steps_per_s``, ``ratio_to_native`` where native is the raw loop),
with the date, the machine and the versions, for the documentation's tables.

The goal is a ratio of at least 0.85 for ``marlhub`` on every game, checks on (the exit
status is 1 where it is missed); the table's last lines give ``marlhub`` over ``by_hand``,
how close it comes to the ceiling, which on short games is under 0.85 itself.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyspiel  # noqa: E402

from marlhub.adapters.openspiel import from_openspiel  # noqa: E402
from marlhub.spaces import find_action_mask  # noqa: E402

GAMES = ["connect_four", "kuhn_poker", "leduc_poker", "goofspiel", "tic_tac_toe"]
TARGET = 0.85  # of the raw loop, checks on


def pick(rng: np.random.Generator, mask: Any) -> int:
    """The agent: a uniformly random legal action of the mask."""
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def run_raw(game_name: str, steps: int, seed: int) -> float:
    """Agent-steps per second of a hand-written pyspiel loop."""
    game = pyspiel.load_game(game_name)
    players = range(game.num_players())
    rng = np.random.default_rng(seed)
    done = 0
    start = time.process_time()
    while done < steps:
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                u, total = rng.random(), 0.0
                for action, prob in state.chance_outcomes():
                    total += prob
                    if u < total:
                        break
                state.apply_action(action)
            elif state.is_simultaneous_node():
                joint = []
                for p in players:
                    state.observation_tensor(p)
                    joint.append(pick(rng, np.array(state.legal_actions_mask(p), np.int8)))
                state.apply_actions(joint)
                done += len(joint)
            else:
                p = state.current_player()
                state.observation_tensor(p)
                state.apply_action(pick(rng, np.array(state.legal_actions_mask(p), np.int8)))
                done += 1
    return done / (time.process_time() - start)


def hand_made_runner(final_observations: bool) -> Callable[[str, int, int], float]:
    """The ceiling: a plain pyspiel loop that builds the hub's dicts itself, no class, no checks.

    What ``from_openspiel`` returns, built inline with the cheapest calls pyspiel and
    numpy offer (the observer's buffer, the mask over a bytearray): a ``{"observation",
    "action_mask"}`` dict per actor, per-step rewards from ``returns()``, the done dicts,
    and at the end every player's final observation (the contract's ``done.final_obs``,
    which RLlib's sampler needs), unless ``final_observations`` is False.
    """

    def run(game_name: str, steps: int, seed: int) -> float:
        game = pyspiel.load_game(game_name)
        n = game.num_players()
        ids = [f"player_{p}" for p in range(n)]
        observation = pyspiel._Observation(game, game.make_observer({}))
        buffer, set_from = np.frombuffer(observation, np.float32), observation.set_from
        zero = np.zeros(game.num_distinct_actions(), np.int8)
        no_rewards = dict.fromkeys(ids, 0.0)
        ended = {**dict.fromkeys(ids, True), "__all__": True}
        going_on = {**dict.fromkeys(ids, False), "__all__": False}
        rng = np.random.default_rng(seed)
        done = 0

        def observe(state: Any) -> dict[str, Any]:
            current = state.current_player()
            obs = {}
            for p in (range(n) if current < 0 else (current,)):
                legal = state.legal_actions_mask(p)
                if 1 in legal:
                    set_from(state, p)
                    obs[ids[p]] = {"observation": buffer.copy(),
                                   "action_mask": np.frombuffer(bytearray(legal), np.int8)}
            return obs

        def resolve_chance(state: Any) -> None:
            while state.is_chance_node():
                u, total = rng.random(), 0.0
                for action, prob in state.chance_outcomes():
                    total += prob
                    if u < total:
                        break
                state.apply_action(action)

        def step(state: Any, actions: dict[str, int], reported: list[float]) -> tuple[Any, ...]:
            """What env.step returns, from the state after the actions."""
            if len(actions) == 1 and not state.is_simultaneous_node():
                state.apply_action(actions[ids[state.current_player()]])
            else:
                state.apply_actions([actions.get(agent, 0) for agent in ids])
            resolve_chance(state)
            returns = state.returns()
            if returns == reported:
                rewards = no_rewards.copy()
            else:
                rewards = {ids[p]: r - reported[p] for p, r in enumerate(returns)}
                reported[:] = returns
            if not state.is_terminal():
                return observe(state), rewards, {"__all__": False}, {"__all__": False}, {}
            obs = {}
            if final_observations:
                for p in range(n):
                    set_from(state, p)
                    obs[ids[p]] = {"observation": buffer.copy(), "action_mask": zero.copy()}
            return obs, rewards, ended.copy(), going_on.copy(), {}

        start = time.process_time()
        while done < steps:
            state = game.new_initial_state()
            reported = [0.0] * n
            resolve_chance(state)
            obs = observe(state)
            while True:
                actions = {agent: pick(rng, ob["action_mask"]) for agent, ob in obs.items()}
                done += len(actions)
                obs, _, terminateds, truncateds, _ = step(state, actions, reported)
                if terminateds["__all__"] or truncateds["__all__"]:
                    break
        return done / (time.process_time() - start)

    return run


def run_marlhub(game_name: str, steps: int, seed: int) -> float:
    """Agent-steps per second of from_openspiel."""
    env = from_openspiel(game_name)
    rng = np.random.default_rng(seed)
    done = 0
    env.reset(seed=seed)  # seeding builds a generator: once, as training loops do
    start = time.process_time()
    while done < steps:
        obs, _ = env.reset()
        while True:
            actions = {agent: pick(rng, ob["action_mask"]) for agent, ob in obs.items()}
            done += len(actions)
            obs, _, terminateds, truncateds, _ = env.step(actions)
            if terminateds["__all__"] or truncateds["__all__"]:
                break
    return done / (time.process_time() - start)


def rllib_runner() -> Optional[Callable[[str, int, int], float]]:
    """RLlib's OpenSpielEnv, or None when Ray is not installed."""
    try:
        from ray.rllib.env.wrappers.open_spiel import OpenSpielEnv
    except Exception:  # ImportError, or Ray failing to import in this environment
        return None

    def run(game_name: str, steps: int, seed: int) -> float:
        env = OpenSpielEnv(pyspiel.load_game(game_name))
        rng = np.random.default_rng(seed)
        done = 0
        start = time.process_time()
        while done < steps:
            obs, _ = env.reset(seed=seed)
            while True:
                # RLlib publishes no mask; the agent reads the legal actions off the state.
                actions = {}
                for agent in obs:
                    mask = np.array(env.state.legal_actions_mask(agent), np.int8)
                    actions[agent] = pick(rng, mask)
                done += len(actions)
                obs, _, terminateds, truncateds, _ = env.step(actions)
                if terminateds["__all__"] or truncateds["__all__"]:
                    break
        return done / (time.process_time() - start)

    return run


def shimmy_runner() -> Optional[Callable[[str, int, int], float]]:
    """Shimmy's OpenSpielCompatibilityV0 (PettingZoo AEC), or None when not installed."""
    try:
        from shimmy import OpenSpielCompatibilityV0
    except Exception:  # ImportError, or an incompatible Shimmy
        return None

    def run(game_name: str, steps: int, seed: int) -> float:
        env = OpenSpielCompatibilityV0(pyspiel.load_game(game_name))
        rng = np.random.default_rng(seed)
        done = 0
        start = time.process_time()
        while done < steps:
            env.reset(seed=seed)
            for agent in env.agent_iter():
                observation, _, termination, truncation, info = env.last()
                if termination or truncation:
                    action = None
                else:
                    action = pick(rng, find_action_mask(observation, info))
                    done += 1
                env.step(action)
        return done / (time.process_time() - start)

    return run


CONTENDER_NAMES = {
    "raw": "native (raw pyspiel loop)",
    "by_hand": "the hub's dicts by hand (the ceiling)",
    "by_hand_no_final": "the hub's dicts by hand, no final observations",
    "marlhub": "marlhub from_openspiel",
    "rllib": "rllib OpenSpielEnv",
    "shimmy": "shimmy OpenSpielCompatibilityV0",
}


def write_json(args: argparse.Namespace, results: dict[tuple[str, str], list[float]],
               names: list[str], missing: list[str], load_before: Any) -> None:
    """Write the medians and paired ratios per game, with when and where they were measured."""
    tables = []
    for game in args.games:
        raw_rates = results[(game, "raw")]
        rows = []
        for name in names:
            rates = results[(game, name)]
            rows.append({
                "contender": CONTENDER_NAMES.get(name, name),
                "agent_steps_per_s": statistics.median(rates),
                "ratio_to_native": statistics.median(r / b for r, b in zip(rates, raw_rates)),
            })
        tables.append({"title": f"openspiel/{game}", "rows": rows})
    versions = {}
    for package in ("open_spiel", "ray", "shimmy", "numpy"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    document = {
        "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(),
                    "load_average": [round(x, 2) for x in load_before] if load_before else None},
        "command": " ".join(["python", "benchmarks/openspiel_overhead.py", *sys.argv[1:]]),
        "versions": versions,
        "rounds": args.rounds,
        "steps": args.steps,
        "unit": "agent-steps/s, CPU time",
        "not_measured": missing,
        "tables": tables,
    }
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def main(argv: Optional[list[str]] = None) -> int:
    """Run the interleaved rounds and print the table; 1 when marlhub misses the target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", nargs="+", default=GAMES)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=4_000, help="agent-steps per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", help="also write the measurements to PATH")
    args = parser.parse_args(argv)
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None

    contestants: dict[str, Callable[[str, int, int], float]] = {
        "raw": run_raw, "by_hand": hand_made_runner(True),
        "by_hand_no_final": hand_made_runner(False), "marlhub": run_marlhub,
    }
    missing = []
    for name, factory in (("rllib", rllib_runner), ("shimmy", shimmy_runner)):
        runner = factory()
        if runner is None:
            missing.append(name)
        else:
            contestants[name] = runner
    results: dict[tuple[str, str], list[float]] = {}
    for game in args.games:  # warm up: imports, game loading, caches
        for name, run in contestants.items():
            run(game, 500, args.seed)
    for round_index in range(args.rounds):
        for game in args.games:
            order = list(contestants)
            # Rotate who goes first, so drifts of the machine's speed hit everyone alike.
            order = order[round_index % len(order):] + order[:round_index % len(order)]
            for name in order:
                rate = contestants[name](game, args.steps, args.seed + round_index)
                results.setdefault((game, name), []).append(rate)

    names = list(contestants)
    header = f"{'game':<14}" + "".join(f"{n:>22}" for n in names)
    print(f"agent-steps/s (CPU time), median of {args.rounds} interleaved rounds of "
          f"{args.steps} agent-steps (median paired ratio to raw)")
    print(header)
    worst = float("inf")
    for game in args.games:
        raw_rates = results[(game, "raw")]
        cells = []
        for name in names:
            rates = results[(game, name)]
            ratio = statistics.median(r / base for r, base in zip(rates, raw_rates))
            if name == "marlhub":
                worst = min(worst, ratio)
            cells.append(f"{statistics.median(rates):>14,.0f} ({ratio:4.2f})")
        print(f"{game:<14}" + "".join(f"{c:>22}" for c in cells))
    if missing:
        print(f"not installed, not measured: {', '.join(missing)}")
    if args.json:
        write_json(args, results, names, missing, load_before)
    of_ceiling = {game: statistics.median(m / h for m, h in zip(results[(game, "marlhub")],
                                                                results[(game, "by_hand")]))
                  for game in args.games}
    ceiling = ", ".join(f"{game} {ratio:.2f}" for game, ratio in of_ceiling.items())
    print(f"marlhub / the hub's dicts by hand (median paired ratio): {ceiling}")
    verdict = "meets" if worst >= TARGET else "misses"
    print(f"marlhub's worst ratio: {worst:.2f} ({verdict} the target of {TARGET})")
    return 0 if worst >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
