"""The ``marlhub`` command: a thin layer over the public API.

Subcommands::

    marlhub list [PATTERN]            registered ids and one-line descriptions
    marlhub run ID [--episodes N] [--seed S] [--config JSON] [--max-steps M]
                                      random legal rollouts, per-agent returns
    marlhub check TARGET... [options] the conformance suite (marlhub.conformance.cli)
    marlhub --version

Exit codes: 0 success, 1 failure (nothing matched, the env broke during a
run), 2 usage error (bad arguments, unknown id, bad JSON or config).

Each subcommand is added by an ``add_*_command(subparsers)`` function that
sets ``func`` on its parser; ``func(args)`` returns the exit code. Results go
to stdout through :func:`out`, messages to stderr through :func:`err`.

Example:
    >>> main(["list", "rock*"])
    rock_paper_scissors  Two players, simultaneous moves, 10 rounds (the RLlib docs' example).
    0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any, Optional, Sequence

__all__ = [
    "Progress",
    "add_list_command",
    "add_run_command",
    "build_parser",
    "err",
    "main",
    "out",
    "positive_int",
    "seed_int",
]


def out(text: str = "") -> None:
    """Print a line of results to stdout."""
    print(text, file=sys.stdout)


def err(text: str) -> None:
    """Print a message to stderr."""
    print(text, file=sys.stderr)


# -- list ----------------------------------------------------------------------------


def add_list_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``marlhub list [PATTERN]``."""
    parser = subparsers.add_parser(
        "list",
        help="list registered env ids",
        description="List the registered env ids matching PATTERN, with one-line descriptions. "
        "A pattern that reaches a family ('openspiel/*', '*') lists the family's catalogue.",
    )
    parser.add_argument("pattern", nargs="?", default="*", metavar="PATTERN",
                        help="a glob over ids, e.g. 'openspiel/*' (default: '*')")
    parser.set_defaults(func=run_list)
    return parser


def run_list(args: argparse.Namespace) -> int:
    """Print the ids matching ``args.pattern``; problems go to stderr."""
    from marlhub.registry import default_registry

    listing = default_registry().listing(args.pattern)
    width = max((len(env_id) for env_id, _ in listing.entries), default=0)
    for env_id, description in listing.entries:
        first_line = description.strip().split("\n", 1)[0]
        out(f"{env_id:<{width}}  {first_line}".rstrip())
    for problem in listing.problems:
        err(f"note: {problem}".replace("\n", " "))
    if not listing.entries:
        err(f"marlhub list: no registered id matches {args.pattern!r}; "
            "run `marlhub list` to see them all.")
        return 1
    return 0


# -- run -----------------------------------------------------------------------------


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def seed_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def add_run_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``marlhub run ID [--episodes N] [--seed S] [--config JSON] [--max-steps M]``."""
    parser = subparsers.add_parser(
        "run",
        help="play random legal episodes of an env",
        description="Play episodes of ID with random legal actions and print each agent's "
        "mean return, the mean episode length and the speed.",
    )
    parser.add_argument("env_id", metavar="ID", help="a registered env id (see `marlhub list`)")
    parser.add_argument("--episodes", type=positive_int, default=10, metavar="N",
                        help="episodes to play (default: 10)")
    parser.add_argument("--seed", type=seed_int, default=0, metavar="S",
                        help="episode i is seeded with S + i (default: 0)")
    parser.add_argument("--config", default=None, metavar="JSON",
                        help="the env config as a JSON object, e.g. '{\"num_cars\": 3}'")
    parser.add_argument("--max-steps", type=positive_int, default=None, metavar="M",
                        help="stop each episode after M steps")
    parser.set_defaults(func=run_run)
    return parser


def _parse_config(text: Optional[str]) -> tuple[Optional[dict[str, Any]], str]:
    """Return ``(config, "")`` or ``(None, problem)``."""
    if text is None:
        return None, ""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"--config is not valid JSON ({exc.msg}, column {exc.colno}): {text!r}"
    if not isinstance(config, dict):
        return None, (f"--config must be a JSON object such as '{{\"num_cars\": 3}}', "
                      f"got {type(config).__name__} {text!r}")
    return config, ""


class Progress:
    """A counter on stderr, drawn only on a terminal and only once a run is slow.

    Args:
        total: how many units the run has.
        unit: what is counted ("episodes", "targets").
    """

    DELAY = 1.0  # seconds before the first draw: short runs print nothing

    def __init__(self, total: int, unit: str = "episodes") -> None:
        self.total = total
        self.unit = unit
        self.enabled = sys.stderr.isatty()
        self.start = time.perf_counter()
        self.last = 0.0
        self.drawn = False

    def __call__(self, done: int, steps: Optional[int] = None, label: str = "") -> None:
        """Draw ``done`` of ``total`` (with a step count or a label when given)."""
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.start < self.DELAY or (now - self.last < 0.1 and done < self.total):
            return
        self.last = now
        filled = 30 * done // max(self.total, 1)
        bar = "#" * filled + "." * (30 - filled)
        extra = f", {steps:,} steps" if steps is not None else (f" {label}" if label else "")
        sys.stderr.write(f"\r[{bar}] {done}/{self.total} {self.unit}{extra}"[:79])
        sys.stderr.flush()
        self.drawn = True

    def clear(self) -> None:
        """Erase the bar (before other output); the next call draws it again."""
        if self.drawn:
            sys.stderr.write("\r" + " " * 79 + "\r")
            sys.stderr.flush()

    def close(self) -> None:
        """Erase the bar for good."""
        self.clear()
        self.drawn = False


def run_run(args: argparse.Namespace) -> int:
    """Build ``args.env_id`` and play random episodes; print the stats."""
    from marlhub.errors import MarlhubError
    from marlhub.registry import make
    from marlhub.rollout import random_rollout

    config, problem = _parse_config(args.config)
    if problem:
        err(f"marlhub run: {problem}")
        return 2
    try:
        env = make(args.env_id, config)
    except MarlhubError as exc:
        err(f"marlhub run: {exc}")
        return 2
    progress = Progress(args.episodes)
    try:
        stats = random_rollout(env, episodes=args.episodes, seed=args.seed,
                               max_steps=args.max_steps, on_episode=progress)
    except MarlhubError as exc:
        progress.close()
        err(f"marlhub run: {args.env_id} failed during the rollout: {exc}")
        return 1
    except Exception:  # the env itself crashed: its traceback is what the user needs
        progress.close()
        err(f"marlhub run: {args.env_id} raised during the rollout (seed {args.seed}):")
        err(traceback.format_exc().rstrip())
        return 1
    finally:
        _close(env)
    progress.close()
    _print_stats(args.env_id, stats)
    return 0


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # a failing close() must not hide the results
            err(f"marlhub run: note: env.close() raised {type(exc).__name__}: {exc}")


def _print_stats(env_id: str, stats: Any) -> None:
    lengths = stats.episode_lengths
    cut = f", {stats.cut_short} cut short by --max-steps" if stats.cut_short else ""
    out(f"{env_id}: {stats.episodes} episodes, seed {stats.seed}, {stats.total_steps:,} steps "
        f"in {stats.wall_time:.2f} s ({stats.steps_per_second:,.0f} steps/s)")
    out(f"episode length: mean {stats.mean_length:.1f}, min {min(lengths)}, max {max(lengths)}{cut}")
    rows = [("agent", "mean return", "std", "episodes")]
    means, stds = stats.mean_return, stats.std_return
    for agent in stats.agents:
        rows.append((str(agent), f"{means[agent]:.3f}", f"{stds[agent]:.3f}",
                     str(len(stats.returns(agent)))))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        out(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  "
            f"{row[3]:>{widths[3]}}")


# -- the command ---------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """Return the ``marlhub`` parser with every subcommand."""
    from marlhub import __version__

    parser = argparse.ArgumentParser(
        prog="marlhub",
        description="The adapter hub between multi-agent RL env APIs: list, run and check envs.",
    )
    parser.add_argument("--version", action="version", version=f"marlhub {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_list_command(subparsers)
    add_run_command(subparsers)
    from marlhub.conformance.cli import add_check_command

    add_check_command(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the ``marlhub`` command with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, and usage errors (argparse exits 2)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_usage(sys.stderr)
        err("marlhub: give a command, e.g. `marlhub list`; `marlhub --help` lists them all.")
        return 2
    try:
        return int(func(args))
    except KeyboardInterrupt:
        err("marlhub: interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
