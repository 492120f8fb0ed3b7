"""obs.untouched: what a call returned stays as it was while the episode goes on.

Replay buffers and rollouts keep the observations and infos a call returned and read
them later. An env that writes each step into the same numpy array, or hands out one
infos dict and edits it afterwards, changes every stored transition; copies taken at
once never notice. :class:`ReturnedValues` keeps the objects themselves next to deep
copies taken as they were returned, and says which changed since.

Example:
    >>> import numpy as np
    >>> buffer = np.zeros(2)
    >>> kept = ReturnedValues()
    >>> kept.keep(0, {"a": buffer}, {})
    >>> buffer[0] = 1.0           # the env writes the next step into the same array
    >>> kept.first_change()
    (0, 'observations', "['a']: arrays differ at index (0,): 0.0 vs 1.0")
"""

from __future__ import annotations

import copy
from typing import Any, Optional

from marlhub.contract.compare import why_different

__all__ = ["ReturnedValues"]

#: Calls whose returns are watched (the probes' horizon: long games are cut there).
WATCHED_CALLS = 100


class ReturnedValues:
    """The obs and infos of the first :data:`WATCHED_CALLS` calls, as returned and as copied."""

    def __init__(self) -> None:
        self._kept: list[tuple[int, Any, Any, Any, Any]] = []

    def keep(self, index: int, obs: Any, infos: Any) -> None:
        """Keep call ``index``'s obs and infos, and deep copies of them as they are now."""
        if len(self._kept) >= WATCHED_CALLS:
            return
        try:
            copies = copy.deepcopy((obs, infos))
        except Exception:  # what cannot be copied cannot be compared (env.copyable's business)
            return
        self._kept.append((index, obs, infos, *copies))

    def first_change(self) -> Optional[tuple[int, str, str]]:
        """``(call index, "observations" or "infos", how)`` of the first changed return."""
        for index, obs, infos, obs_then, infos_then in self._kept:
            for name, now, then in (("observations", obs, obs_then), ("infos", infos, infos_then)):
                reason = why_different(then, now)
                if reason:
                    return index, name, reason
        return None
