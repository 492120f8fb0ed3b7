"""Calling an env under test: reading its returns, and bounding its time.

The driver reads every ``reset`` and ``step`` result through :func:`unpack_reset`
and :func:`unpack_step`, which raise :class:`Malformed` (with the rule it
breaks) instead of letting a wrong shape crash the suite, and runs a whole
target inside :func:`time_limit`, which raises :class:`EnvTimeout`.

Example:
    >>> unpack_reset(({"a": 0}, {}))
    ({'a': 0}, {})
    >>> unpack_step(({}, {}, {}, {}))
    Traceback (most recent call last):
    ...
    marlhub.conformance.calls.Malformed: step() returned a tuple of 4 items; it must return the 5-tuple (obs, rewards, terminateds, truncateds, infos) of dicts keyed by agent id.
"""

from __future__ import annotations

import math
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Optional

from marlhub.contract import rules

__all__ = [
    "EnvTimeout",
    "Malformed",
    "read_agents",
    "read_possible",
    "short",
    "time_limit",
    "unpack_reset",
    "unpack_step",
]


class EnvTimeout(BaseException):
    """Raised inside the driver when a target runs past its time limit.

    A BaseException, so an env's own ``except Exception`` cannot swallow it.
    """


class Malformed(Exception):
    """A reset or step return that cannot be read as the protocol's dicts."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


def unpack_reset(result: Any) -> tuple[Mapping[Any, Any], Mapping[Any, Any]]:
    """Return ``(obs, infos)`` from what ``reset`` returned, or raise :class:`Malformed`."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise Malformed(
            rules.RESET_RETURNS_DICTS,
            f"reset() returned {describe(result)}; it must return a tuple (obs: dict, infos: "
            "dict), e.g. `return obs, {}`.",
        )
    obs, infos = result
    for name, value in (("obs", obs), ("infos", infos)):
        if not isinstance(value, Mapping):
            raise Malformed(
                rules.RESET_RETURNS_DICTS,
                f"reset() returned {name} as {type(value).__name__}; both items must be dicts "
                "keyed by agent id.",
            )
    return obs, infos


def unpack_step(result: Any) -> tuple[Mapping[Any, Any], ...]:
    """Return the five dicts from what ``step`` returned, or raise :class:`Malformed`."""
    if not isinstance(result, tuple) or len(result) != 5:
        raise Malformed(
            rules.STEP_RETURNS_TUPLE,
            f"step() returned {describe(result)}; it must return the 5-tuple (obs, rewards, "
            "terminateds, truncateds, infos) of dicts keyed by agent id.",
        )
    names = ("obs", "rewards", "terminateds", "truncateds", "infos")
    for name, value in zip(names, result):
        if not isinstance(value, Mapping):
            raise Malformed(
                rules.STEP_RETURNS_TUPLE,
                f"step() returned {name} as {type(value).__name__}; every item of the 5-tuple "
                "must be a dict keyed by agent id.",
            )
    return result


def describe(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} items"
    return f"a {type(value).__name__}"


def read_agents(env: Any) -> Optional[list[Any]]:
    """Return ``env.agents`` as a list, or None when reading it fails."""
    try:
        return list(env.agents)
    except Exception:
        return None


def read_possible(env: Any) -> list[Any]:
    """Return ``env.possible_agents`` as a list, or ``[]`` when reading it fails."""
    try:
        return list(env.possible_agents)
    except Exception:
        return []


def short(value: Any, limit: int = 120) -> str:
    """Return ``repr(value)``, cut to ``limit`` characters with ``...``."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextmanager
def time_limit(seconds: Optional[float]) -> Iterator[None]:
    """Raise EnvTimeout in this thread after ``seconds`` (POSIX main thread only)."""
    usable = (
        seconds is not None and math.isfinite(seconds) and seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable or seconds is None:  # usable implies a number; mypy cannot see that
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise EnvTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

