"""``marlhub list [PATTERN]``: registered ids and one-line descriptions.

Example:
    >>> from marlhub.cli import main
    >>> main(["list", "rock*"])
    rock_paper_scissors  Two players, simultaneous moves, 10 rounds (the RLlib docs' example).
    0
"""

from __future__ import annotations

import argparse
from typing import Any

from marlhub.cli.output import err, out
from marlhub.registry import default_registry

__all__ = ["add_list_command", "run_list"]


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
