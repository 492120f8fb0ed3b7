"""What a copy does when its episode ends: the three autoreset modes (Gymnasium 1.x's names),
and the five outcomes of a call, which :class:`~marlhub.vector.copies.EnvCopy` reports.

Example:
    >>> parse_autoreset_mode("NextStep"), parse_autoreset_mode("disabled")
    ('next_step', 'disabled')
    >>> same_step_infos({"a": 1}, {"a": {"x": 2}}, {"a": {}})
    {'a': {}, '__common__': {'final_obs': {'a': 1}, 'final_info': {'a': {'x': 2}}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlhub.core import COMMON
from marlhub.errors import VectorEnvError

__all__ = ["AUTORESET_MODES", "DISABLED", "ENDED", "ENDED_AND_RESET", "FINAL_INFO", "FINAL_OBS",
           "IDLE", "NEXT_STEP", "RESTARTED", "SAME_STEP", "STEPPED", "parse_autoreset_mode",
           "same_step_infos"]

#: A copy whose episode ended is reset in the next call; its action dict there is ignored.
NEXT_STEP = "next_step"
#: A copy whose episode ended is reset in the same call; its final obs and infos go to infos.
SAME_STEP = "same_step"
#: A copy whose episode ended stays ended until ``reset(options={"reset_mask": mask})``.
DISABLED = "disabled"
#: The autoreset modes, named as in Gymnasium 1.x; ``next_step`` is the default.
AUTORESET_MODES = (NEXT_STEP, SAME_STEP, DISABLED)

#: What a call did to a copy (:attr:`~marlhub.vector.copies.EnvCopy.outcome`): it stepped.
STEPPED = 0
#: It stepped and its episode ended; it waits for its reset.
ENDED = 1
#: It stepped, its episode ended, and it was reset in the same call (``same_step``).
ENDED_AND_RESET = 2
#: Its episode had ended: it was reset instead of stepped (``next_step``).
RESTARTED = 3
#: Its episode had ended, and it stays ended (``disabled``).
IDLE = 4

#: Key under ``infos["__common__"]`` of the obs dict that ended the episode (same_step).
FINAL_OBS = "final_obs"
#: Key under ``infos["__common__"]`` of the infos dict that ended the episode (same_step).
FINAL_INFO = "final_info"


def parse_autoreset_mode(mode: Any) -> str:
    """Return ``mode`` (Gymnasium's enum and names taken) as one of :data:`AUTORESET_MODES`."""
    value = getattr(mode, "value", mode)
    if isinstance(value, str):
        key = value.replace("_", "").replace("-", "").lower()
        for known in AUTORESET_MODES:
            if known.replace("_", "") == key:
                return known
    raise VectorEnvError(
        "autoreset_mode", f"unknown autoreset_mode {mode!r}",
        f"Pass one of {', '.join(repr(m) for m in AUTORESET_MODES)} (Gymnasium's "
        "AutoresetMode members are taken too).",
    )


def same_step_infos(final_obs: Any, final_infos: Any, reset_infos: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return the infos of a same_step reset: the reset's, plus the final obs and infos."""
    infos = dict(reset_infos)
    common = dict(infos.get(COMMON) or {})
    common[FINAL_OBS] = final_obs
    common[FINAL_INFO] = final_infos
    infos[COMMON] = common
    return infos
