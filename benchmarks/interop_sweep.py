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

import marlhub  # noqa: E402
from marlhub.conformance.interop import TARGET_NAMES  # noqa: E402
from marlhub.conformance.runner import CheckOptions, Outcome, run_targets  # noqa: E402
from marlhub.conformance.targets import expand_targets  # noqa: E402

DEFAULT_PATTERNS = ["rock_paper_scissors", "tic_tac_toe", "traffic", "openspiel/*",
                    "pettingzoo/*", "gymnasium/*"]
LETTER = {"pass": "P", "fail": "F", "refused": "R", "skipped": "S", "known-fault": "K"}
LIBRARIES = ["gymnasium", "pettingzoo", "open_spiel", "ray", "torchrl", "supersuit",
             "mpe2", "magent2", "vmas", "numpy"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("patterns", nargs="*", default=DEFAULT_PATTERNS)
    parser.add_argument("--targets", default=",".join(TARGET_NAMES))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per id")
    parser.add_argument("--json", default=None, metavar="FILE")
    args = parser.parse_args(argv)

    machine = _machine()  # before the sweep loads the machine itself
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
        document = _document(outcomes, seconds, machine)
        for entry in document["ids"]:
            if "conversions" in entry:
                entry.update(_describe(entry["id"]))
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1)
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


def _space_text(space: Any) -> str:
    """A short description of a gymnasium space (Box bounds left out: they can be huge)."""
    import gymnasium as gym

    if isinstance(space, gym.spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {_space_text(v)}" for k, v in space.spaces.items()) + ")"
    if isinstance(space, gym.spaces.Tuple):
        return "Tuple(" + ", ".join(_space_text(s) for s in space.spaces) + ")"
    if isinstance(space, gym.spaces.Box):
        return f"Box({tuple(space.shape)}, {space.dtype})"
    if isinstance(space, gym.spaces.Discrete):
        start = f", start={space.start}" if space.start else ""
        return f"Discrete({space.n}{start})"
    text = repr(space)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(env_id: str) -> dict[str, Any]:
    """The id's agents and their spaces, agents with identical spaces grouped together."""
    try:
        env = marlhub.make(env_id)
    except Exception as exc:  # it loaded in the worker; say so rather than stop the sweep
        return {"describe_error": f"{type(exc).__name__}: {exc}"[:300]}
    try:
        agents = list(env.possible_agents)
        groups: dict[tuple[str, str], list[str]] = {}
        for agent in agents:
            key = (_space_text(env.get_observation_space(agent)),
                   _space_text(env.get_action_space(agent)))
            groups.setdefault(key, []).append(str(agent))
        return {"agents": [str(a) for a in agents],
                "spaces": [{"agents": members, "observation": obs, "action": act}
                           for (obs, act), members in groups.items()]}
    finally:
        env.close()


def _commit() -> str:
    """The git commit the sweep ran on, ``+changes`` when the work tree differed from it."""
    import subprocess

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, text=True,
                              capture_output=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "no git"
    return (head or "no git") + ("+changes" if dirty else "")


def _machine() -> dict[str, Any]:
    """Where the sweep ran: enough to tell a laptop from a CI runner in the docs' table."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpu": cpu or platform.machine(), "cpus": os.cpu_count(),
            "load_average": [round(x, 2) for x in os.getloadavg()]
            if hasattr(os, "getloadavg") else None}


def _document(outcomes: list[Outcome], seconds: float, machine: dict[str, Any]) -> dict[str, Any]:
    versions: dict[str, Any] = {"marlhub": f"{marlhub.__version__} ({_commit()})"}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "measured": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine,
        "command": " ".join(["python", "benchmarks/interop_sweep.py", *sys.argv[1:]]),
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
