"""Sweep: every registry id converted to every target API, each checked by its own library.

Runs ``marlhub check ID --targets all`` (``check(id, interop=TARGET_NAMES)``) on
every id of the default registry that the patterns reach (built-in envs, the
``openspiel/``, ``pettingzoo/`` and ``gymnasium/`` families by default), in
worker processes (a crash or hang in native code costs one id, not the sweep),
and prints:

* per target: how many ids pass, fail, are refused (structure) or skipped;
* every failure with the checker's words;
* the matrix, one line per id (``P`` pass, ``F`` fail, ``R`` refused, ``S`` skipped,
  ``K`` a known fault of a native library, reproducible without marlhub).

Usage::

    python benchmarks/interop_sweep.py                              # the whole registry
    python benchmarks/interop_sweep.py 'openspiel/kuhn*' traffic    # some ids
    python benchmarks/interop_sweep.py --json interop.json --jobs 2

The JSON holds every result with the machine, the date and the versions of the
libraries, for the documentation's compatibility table. Exit status 0 when no
conversion failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import sys
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from marlhub.conformance.interop import TARGET_NAMES  # noqa: E402
from marlhub.conformance.runner import CheckOptions, Outcome, run_targets  # noqa: E402
from marlhub.conformance.targets import expand_targets  # noqa: E402

DEFAULT_PATTERNS = ["rock_paper_scissors", "tic_tac_toe", "traffic", "openspiel/*",
                    "pettingzoo/*", "gymnasium/*"]
LETTER = {"pass": "P", "fail": "F", "refused": "R", "skipped": "S", "known-fault": "K"}
LIBRARIES = ["gymnasium", "pettingzoo", "open_spiel", "ray", "torchrl", "supersuit", "numpy"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", default=DEFAULT_PATTERNS)
    parser.add_argument("--targets", default=",".join(TARGET_NAMES))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per id")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)

    ids = [target for target, _ in expand_targets(args.patterns)]
    options = CheckOptions(episodes=1, max_steps=200, timeout=args.timeout, replay=False,
                           interop=tuple(args.targets.split(",")))
    start = time.perf_counter()
    outcomes = run_targets(ids, options, jobs=args.jobs)
    seconds = time.perf_counter() - start
    loaded = [o for o in outcomes if o.report is not None]
    _print_counts(loaded, options.interop, len(outcomes) - len(loaded), seconds)
    _print_failures(loaded)
    _print_matrix(loaded, options.interop)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(_document(outcomes, seconds), f, indent=1)
            f.write("\n")
    failed = any(c.status == "fail" for o in loaded for c in o.report.conversions)  # type: ignore[union-attr]
    return 1 if failed else 0


def _print_counts(loaded: list[Outcome], targets: tuple[str, ...], not_loaded: int,
                  seconds: float) -> None:
    print(f"{len(loaded)} ids converted to {len(targets)} targets in {seconds:.0f} s "
          f"({not_loaded} ids do not load as they are)\n")
    print("| target | pass | fail | refused | skipped | known native fault |\n"
          "|---|---|---|---|---|---|")
    for target in targets:
        counts = {s: 0 for s in LETTER}
        for o in loaded:
            for c in o.report.conversions:  # type: ignore[union-attr]
                if c.target == target:
                    counts[c.status] += 1
        print(f"| {target} | {counts['pass']} | {counts['fail']} | {counts['refused']} | "
              f"{counts['skipped']} | {counts['known-fault']} |")
    print()


def _print_failures(loaded: list[Outcome]) -> None:
    for o in loaded:
        for c in o.report.conversions:  # type: ignore[union-attr]
            if c.status in ("fail", "known-fault"):
                print(f"{c.status.upper()} {o.target} -> {c.target}: {c.reason[:300]}")
    print()


def _print_matrix(loaded: list[Outcome], targets: tuple[str, ...]) -> None:
    width = max((len(o.target) for o in loaded), default=10)
    print(" " * width + "  " + " ".join(t.split(".")[-1][:3] for t in targets))
    for o in loaded:
        row = {c.target: LETTER[c.status] for c in o.report.conversions}  # type: ignore[union-attr]
        print(f"{o.target:<{width}}  " + "   ".join(row.get(t, "-") for t in targets))


def _document(outcomes: list[Outcome], seconds: float) -> dict[str, Any]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "versions": versions,
        "seconds": round(seconds, 1),
        "ids": [
            {"id": o.target, "conversions": [c.to_dict() for c in o.report.conversions]}
            if o.report is not None else {"id": o.target, "not_loaded": o.load_error}
            for o in outcomes
        ],
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
