"""What a copy does when its episode ends: the three autoreset modes, and the names they use.

Named as in Gymnasium 1.x; :class:`~marlhub.vector.copies.EnvCopy` applies
them to a copy, and every face reads what it reports:

* ``next_step`` (the default): the call after the episode ended resets the copy;
  its action dict there is ignored;
* ``same_step``: the step that ends the episode also resets the copy; the obs and
  infos that step returned go to ``infos["__common__"]`` as ``"final_obs"`` and
  ``"final_info"`` (:func:`same_step_infos`);
* ``disabled``: an ended copy stays ended until ``reset(options={"reset_mask": mask})``.

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

# What one call did to a copy, as the copy's autoreset rule decided it
# (:attr:`~marlhub.vector.copies.EnvCopy.outcome`). The book and the faces read these and
# never work the rule out again.
#: It stepped, and its episode goes on.
STEPPED = 0
#: It stepped and its episode ended; it waits (``next_step``: reset in the next call;
#: ``disabled``: until a ``reset_mask``).
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
    """Return ``mode`` as one of :data:`AUTORESET_MODES` (Gymnasium's enum and names taken).

    Raises:
        VectorEnvError: an unknown mode.
    """
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
