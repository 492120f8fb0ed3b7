"""Sweep: the conformance check and the lockstep comparison on every OpenSpiel game.

Runs ``marlhub.conformance.check(id, against_native=True)`` (the same as
``marlhub check ID --against-native``) on ``openspiel/<name>`` for every name in
``pyspiel.registered_names()`` (Python games included), plus one parameterised
id for each game that needs parameters (``turn_based_simultaneous_game(...)``,
``misere(...)``, ...), in worker processes (a crash or hang in native code costs
one target, not the sweep), with a per-game timeout.

It prints one line per target, then the count of games that load with default
parameters and pass, and every exception with its reason::

    python benchmarks/openspiel_sweep.py                  # 2 workers, 5 episodes, 300 s per game
    python benchmarks/openspiel_sweep.py --episodes 20 --jobs 2 --timeout 600 --json sweep.json
    python benchmarks/openspiel_sweep.py kuhn_poker leduc_poker   # only these games

Games that are very slow in pyspiel itself (SLOW_GAMES) get fewer episodes.
Exit status: 0 when every game that loads with default parameters passes
(apart from the known exceptions listed in KNOWN_EXCEPTIONS, which must fail as
expected) and every parameterised id passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from marlhub.adapters.openspiel.family import (  # noqa: E402
    PARAMETERISED_EXAMPLES,
    OpenSpielFamily,
)
from marlhub.conformance.runner import CheckOptions, Outcome, run_targets  # noqa: E402

#: Games that load with default parameters but cannot pass, and why (checked: they must fail).
KNOWN_EXCEPTIONS = {
    "chat_game": "its legal actions (up to 7) exceed its declared num_distinct_actions() (2): "
                 "no Discrete action space holds them (pyspiel's own legal_actions_mask() "
                 "writes out of bounds on it)",
    "crossword": "num_distinct_actions() is 0: it is played with action structs only",
    "python_dynamic_routing": "its observer writes only the current time step's row and keeps "
                              "the rows of earlier calls, so an observation depends on which "
                              "states were observed before, not on the state alone",
}


#: Games that are slow natively, checked with fewer episodes (the reason, the episodes).
SLOW_GAMES = {
    "bridge_uncontested_bidding": (
        "its last move runs a double-dummy solver over the redeals: 0.3 to 7 s per episode "
        "in pyspiel itself", 3,
    ),
}


def _targets(names: list[str]) -> tuple[list[str], dict[str, str]]:
    """Every id to check, and the reason for each game that cannot be made as is."""
    listing = dict(OpenSpielFamily().ids())
    targets, skipped = [], {}
    for full, description in sorted(listing.items()):
        name = full.split("/", 1)[1]
        if names and name not in names:
            continue
        targets.append(full)
        if name in PARAMETERISED_EXAMPLES:
            targets.append(f"openspiel/{PARAMETERISED_EXAMPLES[name]}")
        if (": needs parameter" in description or "does not load" in description
                or "mean-field" in description or "action structs" in description):
            skipped[full] = description.split(": ", 1)[1]
    return targets, skipped


def _first_problem(outcome: Outcome) -> str:
    if outcome.load_error is not None:
        return outcome.load_error.split(". ")[0]
    assert outcome.report is not None
    errors = outcome.report.errors or outcome.report.findings
    first = errors[0]
    return f"{first.rule}: {first.message[:300]}"


def main(argv: Optional[list[str]] = None) -> int:
    """Run the sweep and print the table; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("games", nargs="*", help="game names (default: every registered game)")
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per game")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args(argv)

    targets, cannot_load = _targets(args.games)
    settings = CheckOptions(episodes=args.episodes, seed=args.seed, max_steps=args.max_steps,
                             timeout=args.timeout, against_native=True)
    started = time.perf_counter()

    def progress(outcome: Outcome, done: int, total: int) -> None:
        verdict = "PASS" if outcome.report is not None and outcome.report.ok else "FAIL"
        if outcome.target in cannot_load:
            verdict = "SKIP"
        detail = "" if verdict == "PASS" else f"  {_first_problem(outcome)[:160]}"
        print(f"[{done:3d}/{total}] {verdict} {outcome.target}{detail}", flush=True)

    slow = [t for t in targets if t.split("/", 1)[1] in SLOW_GAMES]
    normal = [t for t in targets if t not in slow]
    done_outcomes = run_targets(normal, settings, jobs=args.jobs, on_done=progress)
    for target in slow:
        reason, episodes = SLOW_GAMES[target.split("/", 1)[1]]
        print(f"  {target}: {min(episodes, args.episodes)} episodes only ({reason})")
        few = CheckOptions(episodes=min(episodes, args.episodes), seed=args.seed,
                            max_steps=args.max_steps, timeout=args.timeout, against_native=True)
        done_outcomes += run_targets([target], few, jobs=1, on_done=progress)
    by_target = {o.target: o for o in done_outcomes}
    outcomes = [by_target[t] for t in targets]
    seconds = time.perf_counter() - started

    default_ids = [t for t in targets if "(" not in t]
    by_id = {o.target: o for o in outcomes}
    loads = [t for t in default_ids if t not in cannot_load]
    passed = [t for t in loads if by_id[t].report is not None and by_id[t].report.ok]
    failed = {t: _first_problem(by_id[t]) for t in loads if t not in passed}
    parameterised = [t for t in targets if "(" in t]
    param_passed = [t for t in parameterised if by_id[t].report is not None and by_id[t].report.ok]
    unexpected = {t: r for t, r in failed.items() if t.split("/", 1)[1] not in KNOWN_EXCEPTIONS}
    fixed = [g for g in KNOWN_EXCEPTIONS if f"openspiel/{g}" in passed]

    print()
    print(f"Registered games: {len(default_ids)}; load with default parameters: {len(loads)}; "
          f"pass conformance + lockstep: {len(passed)} ({seconds:.0f}s, {args.episodes} "
          f"episodes each, {args.jobs} workers)")
    print(f"Parameterised wrappers: {len(param_passed)}/{len(parameterised)} pass")
    print("\nGames that load with default parameters but do not pass:")
    for target, problem in failed.items():
        known = KNOWN_EXCEPTIONS.get(target.split("/", 1)[1])
        print(f"  {target}: {known or 'UNEXPECTED: ' + problem}")
    print("\nGames that do not load with default parameters (not counted):")
    for target, reason in cannot_load.items():
        print(f"  {target}: {reason}")
    for target in parameterised:
        if target not in param_passed:
            print(f"  FAIL {target}: {_first_problem(by_id[target])}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({
                "registered": len(default_ids), "load": len(loads), "pass": len(passed),
                "failed": failed, "cannot_load": cannot_load,
                "parameterised": {t: t in param_passed for t in parameterised},
                "seconds": round(seconds, 1), "episodes": args.episodes,
            }, fh, indent=2)
    bad: dict[str, Any] = dict(unexpected)
    bad.update({f"openspiel/{g}": "now passes: update KNOWN_EXCEPTIONS" for g in fixed})
    bad.update({t: "fails" for t in parameterised if t not in param_passed})
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
