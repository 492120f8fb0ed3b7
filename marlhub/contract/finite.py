"""obs.finite: observations hold no inf, even where their space is unbounded.

``obs.in_space`` refuses NaN, but ``Box(-inf, inf)`` contains inf, so an env that
returns inf passes it; a learner's network turns inf into NaN all the same.

Example:
    >>> import numpy as np
    >>> from marlhub.contract.checks import Transition
    >>> t = Transition(kind="reset", index=0, obs={"a": np.array([1.0, np.inf])}, infos={},
    ...                possible_agents=["a"], possible_now=["a"], agents_before=None,
    ...                agents_after=None, appeared=frozenset(), done_before=frozenset())
    >>> check_obs_finite(t, None)[0].message[:48]
    "obs['a'] holds inf at [1]; learners turn inf int"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.contract.checks import Issue, Transition

__all__ = ["check_obs_finite", "where_infinite"]


def where_infinite(value: Any) -> Optional[str]:
    """Where ``value`` (an array, a number, or dicts and tuples of them) holds inf; None if nowhere.

    Example:
        >>> where_infinite({"pos": np.zeros(2), "vel": (1.0, -np.inf)})
        "['vel'][1]"
        >>> where_infinite(np.array([np.nan])) is None  # NaN is obs.in_space's
        True
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            found = where_infinite(item)
            if found is not None:
                return f"[{key!r}]{found}"
        return None
    if isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            found = where_infinite(item)
            if found is not None:
                return f"[{index}]{found}"
        return None
    if isinstance(value, (float, np.floating)):
        return "" if np.isinf(value) else None
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc":
        infinite = np.argwhere(np.isinf(value))
        if len(infinite):
            if value.ndim == 0:
                return ""
            return "[" + ", ".join(str(int(i)) for i in infinite[0]) + "]"
    return None


def check_obs_finite(t: Transition, spaces: Any) -> list[Issue]:
    """obs.finite: no observation holds inf."""
    issues = []
    for agent, value in t.obs.items():
        found = where_infinite(value)
        if found is not None:
            issues.append(Issue(
                f"obs[{agent!r}] holds inf{f' at {found}' if found else ''}; learners turn inf into NaN as they do NaN, "
                "even where the space is unbounded. Clip to a finite bound (np.clip, "
                "np.nan_to_num(x, posinf=..., neginf=...)) or leave the value out.",
                agent=agent,
            ))
    return issues
