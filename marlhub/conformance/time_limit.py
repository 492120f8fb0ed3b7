"""done.time_limit: an episode cut by the limit the env declares is truncated, not terminated.

RLlib and Stable-Baselines3 bootstrap the value of a truncated last state and not of a
terminated one, so an env that reports its time limit as termination teaches a wrong
value, and nothing crashes. Where an env declares its limit (``max_steps``,
``max_episode_steps``, ``max_cycles``, ``spec.max_episode_steps``), an episode that ends
exactly there with ``terminateds["__all__"]`` and without ``truncateds["__all__"]`` is
one.

Example:
    >>> class Env:
    ...     max_steps = 50
    >>> declared_limit(Env())
    ('max_steps', 50)
    >>> ended_by_termination_at_limit(Env(), 50, {"__all__": True}, {"__all__": False})
    'max_steps'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.core import ALL
from marlhub.episode.status import flag

__all__ = ["declared_limit", "ended_by_termination_at_limit", "time_limit_message"]

#: Attributes that declare an episode's length in steps, first match wins.
LIMIT_ATTRIBUTES = ("max_steps", "max_episode_steps", "max_cycles")


def declared_limit(env: Any) -> Optional[tuple[str, int]]:
    """``(where it is declared, the limit)`` of the env's time limit, or None.

    An attribute, Gymnasium's ``_max_episode_steps`` (its ``TimeLimit``), a key of the
    env's ``config`` dict, or its spec.
    """
    for name in (*LIMIT_ATTRIBUTES, "_max_episode_steps"):
        value = _read(env, name)
        if value is not None:
            return name, value
    config = _read_any(env, "config")
    if isinstance(config, Mapping):
        for name in LIMIT_ATTRIBUTES:
            limit: Any = config.get(name)
            if _is_limit(limit):
                return f"config[{name!r}]", int(limit)
    value = _read(_read_any(env, "spec"), "max_episode_steps")
    return None if value is None else ("spec.max_episode_steps", value)


def ended_by_termination_at_limit(env: Any, steps: int, terminateds: Mapping[Any, Any],
                                  truncateds: Mapping[Any, Any]) -> Optional[str]:
    """Where the limit is declared, if an episode of ``steps`` steps that ended with these
    flags ended at it by termination alone; else None."""
    limit = declared_limit(env)
    if limit is None or steps != limit[1]:
        return None
    if flag(terminateds, ALL) and not flag(truncateds, ALL):
        return limit[0]
    return None


def _read_any(env: Any, name: str) -> Any:
    try:
        return getattr(env, name, None)
    except Exception:  # a property that raises declares nothing
        return None


def _read(env: Any, name: str) -> Optional[int]:
    value = _read_any(env, name)
    return int(value) if _is_limit(value) else None


def _is_limit(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and bool(value > 0)


def time_limit_message(declared: str, steps: int) -> str:
    """The finding's message for an episode of ``steps`` steps cut at the limit ``declared``."""
    return (f"the episode ended at step {steps}, the limit the env declares ({declared} = "
            f"{steps}), with terminateds['__all__'] True and truncateds['__all__'] False: a time "
            "limit is a truncation. Learners bootstrap the value of a truncated state and not "
            "of a terminated one (RLlib, Stable-Baselines3), so they learn a wrong value. "
            "Report the limit in truncateds (and termination only where the game itself ends).")
