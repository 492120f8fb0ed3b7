"""What every ``marlhub`` subcommand shares: output, a progress bar, argument types.

Results go to stdout through :func:`out`, messages to stderr through :func:`err`.

Example:
    >>> positive_int("3"), seed_int("0")
    (3, 0)
    >>> parse_config('{"num_cars": 3}')
    ({'num_cars': 3}, '')
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Optional

__all__ = ["Progress", "err", "out", "parse_config", "positive_int", "seed_int"]


def out(text: str = "") -> None:
    """Print a line of results to stdout."""
    print(text, file=sys.stdout)


def err(text: str) -> None:
    """Print a message to stderr."""
    print(text, file=sys.stderr)


def _whole_number(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """Parse a whole number >= 1 (an argparse ``type``)."""
    return _whole_number(text, 1)


def seed_int(text: str) -> int:
    """Parse a whole number >= 0 (an argparse ``type``)."""
    return _whole_number(text, 0)


def parse_config(text: Optional[str]) -> tuple[Optional[dict[str, Any]], str]:
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

    def __init__(self, total: int, unit: str = "episodes", *, quiet: bool = False) -> None:
        self.total = total
        self.unit = unit
        self.enabled = sys.stderr.isatty() and not quiet
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
        elapsed = now - self.start
        eta = f", ETA {elapsed / done * (self.total - done):.0f}s" if 0 < done < self.total else ""
        sys.stderr.write(f"\r[{bar}] {done}/{self.total} {self.unit}{eta}{extra}"[:79])
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
