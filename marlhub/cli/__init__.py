"""The ``marlhub`` command: a thin layer over the public API.

Subcommands::

    marlhub list [PATTERN]            registered ids and one-line descriptions
    marlhub run ID [--episodes N] [--seed S] [--config JSON] [--max-steps M]
                                      random legal rollouts, per-agent returns
    marlhub check TARGET... [options] the conformance suite (marlhub.cli.check)
    marlhub serve ID [options]        serve an env over dm_env_rpc (marlhub.cli.serve)
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
import sys
from typing import Optional, Sequence

from marlhub.cli.check import add_check_command
from marlhub.cli.list import add_list_command
from marlhub.cli.output import Progress, err, out, positive_int, seed_int
from marlhub.cli.run import add_run_command
from marlhub.cli.serve import add_serve_command
from marlhub.version import __version__

__all__ = [
    "Progress",
    "add_list_command",
    "add_run_command",
    "add_serve_command",
    "build_parser",
    "err",
    "main",
    "out",
    "positive_int",
    "seed_int",
]


def build_parser() -> argparse.ArgumentParser:
    """Return the ``marlhub`` parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="marlhub",
        description="The adapter hub between multi-agent RL env APIs: list, run and check envs.",
    )
    parser.add_argument("--version", action="version", version=f"marlhub {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    add_list_command(subparsers)
    add_run_command(subparsers)
    add_check_command(subparsers)
    add_serve_command(subparsers)
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
