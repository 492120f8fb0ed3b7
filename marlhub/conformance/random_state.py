"""seed.global_state: reset and step leave numpy's and Python's global generators alone.

An env that seeds ``np.random`` in ``reset`` and draws from it in ``step`` replays
its episodes alone, so only two instances stepped in turn show the harm (the
fresh-instance probe does that). Whether a call touched the global state is cheaper
to see: :class:`GlobalRandomWatch` fingerprints both generators around each call.

Example:
    >>> import numpy as np
    >>> watch = GlobalRandomWatch()
    >>> watch.mark()
    >>> watch.touched() is None
    True
    >>> _ = np.random.randint(3)      # what an env must not do
    >>> watch.touched()
    "numpy's global generator (np.random)"
"""

from __future__ import annotations

import random
from typing import Any, Optional

import numpy as np

__all__ = ["GlobalRandomWatch"]


def _fingerprint() -> tuple[Any, ...]:
    state: Any = np.random.get_state(legacy=True)
    return (hash(state[1].tobytes()), state[2], state[3], state[4]), hash(random.getstate())


class GlobalRandomWatch:
    """Fingerprints numpy's legacy global generator and Python's ``random`` module."""

    def __init__(self) -> None:
        self._mark = _fingerprint()

    def mark(self) -> None:
        """Take the fingerprint a call is compared with (just before the call)."""
        self._mark = _fingerprint()

    def touched(self) -> Optional[str]:
        """Which global generator changed since :meth:`mark`, or None; marks again."""
        before, self._mark = self._mark, _fingerprint()
        changed = [name for name, a, b in (
            ("numpy's global generator (np.random)", before[0], self._mark[0]),
            ("Python's random module", before[1], self._mark[1])) if a != b]
        return " and ".join(changed) or None
