"""How to check a target: the one set of options of ``check``, ``Driver`` and ``marlhub check``.

Example:
    >>> CheckOptions(episodes=5).max_steps
    1000
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

__all__ = ["DEFAULT_MAX_STEPS", "CheckOptions"]

#: Step budget of one episode unless told otherwise.
DEFAULT_MAX_STEPS = 1000


@dataclass
class CheckOptions:
    """How to check one target.

    Attributes:
        episodes: how many seeded episodes to play.
        seed: the first episode's seed; episode i uses ``seed + i``.
        max_steps: the step budget of one episode (``episode.ends`` past it).
        strict: warnings count against ``ok`` and ``episode.step_after_end`` is an error.
        timeout: seconds for the whole target, None for no limit.
        replay: whether to replay each episode to check ``seed.reproducible`` (and
            episode 0 on a fresh instance, in a fresh process, after a reset mid-episode).
        against_native: also compare the env with its native twin in lockstep.
        interop: target APIs to convert the env to and check with their own checkers
            (``marlhub check --targets``; see :mod:`marlhub.conformance.interop`).
        config: the env config (``marlhub check --config``): given to ``make`` for a
            registry id, to a class or factory that takes one, and to the fresh process,
            the lockstep twin and the vector env's copies alike.
    """

    episodes: int = 20
    seed: int = 0
    max_steps: int = DEFAULT_MAX_STEPS
    strict: bool = False
    timeout: Optional[float] = None
    replay: bool = True
    against_native: bool = False
    interop: tuple[str, ...] = ()
    config: Optional[dict[str, Any]] = None
