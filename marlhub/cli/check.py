"""``marlhub check TARGET...``: the conformance suite from the shell.

Exit codes: 0 when no target has an error finding (nor, with ``--strict``, a
warning), 1 when any has, 2 on a usage or load error (bad option, unknown id,
a module or file that does not load, a glob that matches nothing).

An id that a glob found but that does not load as it is (an OpenSpiel game
that needs parameters, a PettingZoo env whose extra is missing) is listed as
skipped, with the reason, and does not change the exit code: the glob asked
for whatever can be checked. An id named explicitly that does not load is a
load error.

Example:
    >>> from marlhub.cli import main
    >>> main(["check", "rock_paper_scissors", "--episodes", "2"])  # doctest: +ELLIPSIS
    PASS rock_paper_scissors: 2 episodes, 20 steps, 0 errors, 0 warnings in ...s
    0
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from marlhub.cli.output import Progress, err, out, parse_config, positive_int, seed_int
from marlhub.conformance.interop import TARGET_NAMES, parse_targets
from marlhub.conformance.junit import junit_xml
from marlhub.conformance.options import DEFAULT_MAX_STEPS, CheckOptions
from marlhub.conformance.runner import Outcome, run_targets
from marlhub.conformance.targets import expand_targets
from marlhub.conformance.vector import check_vector_targets
from marlhub.errors import MarlhubError

__all__ = ["add_check_command", "run_check"]

#: Seconds one target may take unless --timeout says otherwise.
DEFAULT_TIMEOUT = 600.0


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def add_check_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``marlhub check`` to the ``marlhub`` parser."""
    parser = subparsers.add_parser(
        "check",
        help="check envs against the MultiAgentEnv contract",
        description="Play seeded random legal episodes of each TARGET and check every rule of "
        "the contract (turn order, __all__, rewards, spaces, reproducibility). TARGET is a "
        "registry id, a glob over ids ('openspiel/*', quoted), 'package.module:attr' or "
        "'path/to/file.py:attr' (an env class, instance or factory).",
    )
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="what to check")
    parser.add_argument("--config", type=_config, default=None, metavar="JSON",
                        help="the env config as a JSON object, for registry ids and classes or "
                        "factories that take one, e.g. '{\"num_cars\": 3}'")
    parser.add_argument("--episodes", type=positive_int, default=20, metavar="N",
                        help="episodes per target (default: 20)")
    parser.add_argument("--seed", type=seed_int, default=0, metavar="S",
                        help="episode i is seeded S + i (default: 0)")
    parser.add_argument("--max-steps", type=positive_int, default=DEFAULT_MAX_STEPS, metavar="M",
                        help=f"step budget per episode (default: {DEFAULT_MAX_STEPS})")
    parser.add_argument("--strict", action="store_true",
                        help="fail on warnings too; step() after the end must raise")
    parser.add_argument("--against-native", action="store_true",
                        help="also compare each family id with its native env in lockstep")
    parser.add_argument("--targets", dest="interop", type=_target_list, default=(), metavar="APIS",
                        help="also convert each env to these APIs and run each library's own "
                        "checker: a comma-separated list of " + ", ".join(TARGET_NAMES)
                        + ", or 'all'")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the results as JSON")
    parser.add_argument("--junit", metavar="FILE", type=Path, help="write JUnit XML")
    parser.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                        help="check targets in N worker processes (default: 1)")
    parser.add_argument("--timeout", type=_positive_float, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds per target, and as many again for its --vector check "
                        f"(default: {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--vector", type=positive_int, default=0, metavar="N",
                        help="also check that a vector env of N copies (sync and async, every "
                        "autoreset mode) returns, copy by copy, what N separate envs return")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print only the failing targets and the final count")
    parser.set_defaults(func=run_check)
    return parser


def run_check(args: argparse.Namespace) -> int:
    """Run ``marlhub check`` with parsed ``args``; return the exit code."""
    try:
        expanded = expand_targets(args.targets)
    except MarlhubError as exc:
        err(f"marlhub check: {exc}")
        return 2
    targets = [target for target, _ in expanded]
    from_glob = {target for target, globbed in expanded if globbed}
    settings = CheckOptions(
        episodes=args.episodes, seed=args.seed, max_steps=args.max_steps, strict=args.strict,
        timeout=args.timeout, against_native=args.against_native, interop=tuple(args.interop),
        config=args.config,
    )
    progress = (Progress(len(targets), unit="targets", quiet=args.quiet)
                if len(targets) > 1 else None)
    episodes = Progress(args.episodes, unit="episodes", quiet=args.quiet)

    def on_episode(target: str, done: int, total: int) -> None:
        # The episodes of the target under way, in this process (--jobs 1): long targets
        # show a line with an ETA; the targets' bar comes back after each target.
        if done == 1:
            episodes.start, episodes.last = time.perf_counter(), 0.0
        if progress:
            progress.clear()
        episodes.total = total
        episodes(done, label=target)
        if done == total:
            episodes.clear()

    def on_done(outcome: Outcome, done: int, total: int) -> None:
        if progress:
            progress.clear()
        _print_outcome(outcome, quiet=args.quiet, skipped=outcome.target in from_glob)
        if progress:
            progress(done, label=outcome.target)

    outcomes = run_targets(targets, settings, jobs=args.jobs, on_done=on_done,
                           on_episode=on_episode)
    if progress:
        progress.close()
    outcomes += _vector_outcomes(args, [o.report for o in outcomes if o.report is not None])
    reports = [o.report for o in outcomes if o.report is not None]
    not_loaded = {o.target: o.load_error for o in outcomes if o.load_error is not None}
    load_errors = {t: e for t, e in not_loaded.items() if t not in from_glob}
    skipped = {t: e for t, e in not_loaded.items() if t in from_glob}
    failed = [r for r in reports if not r.ok]
    if len(outcomes) > 1 or args.quiet:
        out(f"{len(reports) - len(failed)} passed, {len(failed)} failed"
            + (f", {len(skipped)} skipped (did not load)" if skipped else "")
            + (f", {len(load_errors)} not loaded" if load_errors else ""))
    try:
        if args.json:
            _write(args.json, json.dumps(_json_document(outcomes, from_glob), indent=2) + "\n")
        if args.junit:
            _write(args.junit, junit_xml(reports, load_errors=load_errors, skipped=skipped,
                                         against_native=args.against_native))
    except OSError as exc:
        err(f"marlhub check: cannot write the results: {exc}")
        return 2
    if load_errors:
        return 2
    return 1 if failed else 0


def _print_outcome(outcome: Outcome, *, quiet: bool, skipped: bool) -> None:
    if outcome.load_error is not None:
        if skipped:
            if not quiet:
                out(f"SKIP {outcome.target}: does not load as it is ({_first_line(outcome.load_error)})")
        else:
            err(f"ERROR {outcome.target}: {outcome.load_error}")
        return
    report = outcome.report
    if report is None or (report.ok and quiet):
        return
    detailed = report.findings or report.conversions or report.lockstep_seconds is not None
    text = str(report) if detailed else report.summary_line()
    out(text)


def _vector_outcomes(args: argparse.Namespace, reports: list[Any]) -> list[Outcome]:
    """``--vector N``: each checked target's vector env against N separate envs, printed."""
    if not args.vector:
        return []
    found = check_vector_targets([r.target for r in reports], args.vector, seed=args.seed,
                                 episodes=args.episodes, max_steps=args.max_steps,
                                 timeout=args.timeout, config=args.config,
                                 limit=args.timeout)
    outcomes = [Outcome(report.target, report=report) for report in found]
    for outcome in outcomes:
        _print_outcome(outcome, quiet=args.quiet, skipped=False)
    return outcomes


def _config(text: str) -> dict[str, Any]:
    config, problem = parse_config(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return config or {}


def _target_list(text: str) -> list[str]:
    try:
        return parse_targets(text)
    except MarlhubError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _json_document(outcomes: list[Outcome], from_glob: set[str]) -> dict[str, Any]:
    entries = []
    for o in outcomes:
        if o.report is not None:
            entries.append({**o.report.to_dict(), "status": "pass" if o.report.ok else "fail"})
        elif o.target in from_glob:  # a glob found it, but it does not load as it is
            entries.append({"target": o.target, "status": "skipped", "skipped": o.load_error})
        else:
            entries.append({"target": o.target, "status": "error", "ok": False,
                            "error": o.load_error})
    return {"targets": entries}


def _write(path: Path, text: str) -> None:
    if not path.parent.exists():
        path.parent.mkdir(parents=True)
        err(f"marlhub check: created the folder {str(path.parent)!r} for {str(path)!r}")
    path.write_text(text, encoding="utf-8")

