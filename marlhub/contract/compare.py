"""Tools for lockstep comparison of an adapted env with its native twin.

Each adapter knows how to drive its native env with the actions the hub env
received and how to read the native outputs in hub terms; what they share is
here: a deep comparison that says *where* two values differ, and constructors
for ``equiv.trajectory`` / ``equiv.returns`` findings with their reproducer.

A :class:`~marlhub.adapters.family.Family` that can compare its envs with the
native ones implements ``lockstep(rest, config, *, episodes, seed, max_steps)
-> list[Finding]``; ``marlhub check --against-native`` calls it.

Example:
    >>> import numpy as np
    >>> why_different({"a": np.zeros(2)}, {"a": np.array([0.0, 1.0])})
    "['a']: arrays differ at index (1,): 0.0 vs 1.0"
    >>> why_different([1, 2], [1, 2]) is None
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.contract.findings import Finding, Reproducer
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY

__all__ = ["returns_findings", "trajectory_finding", "why_different"]


def why_different(a: Any, b: Any, path: str = "", *, check_dtype: bool = True,
                  tol: float = 0.0) -> Optional[str]:
    """Return where and how ``a`` and ``b`` differ, or None when they are equal.

    Dicts compare by key set and key order, arrays by shape, dtype and values
    (NaN equals NaN), sequences item by item, everything else with ``==``.

    Args:
        a: the first value.
        b: the second value.
        path: a prefix for the location in the message.
        check_dtype: whether arrays of equal values but different dtypes differ.
        tol: floats closer than ``tol``, relatively or absolutely, are equal (0: exactly
            equal only); for values computed by two compilations of the same code.

    Example:
        >>> why_different(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), tol=1e-6) is None
        True
    """
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
            return f"{path or 'value'}: {type(a).__name__} vs {type(b).__name__}"
        if list(a.keys()) != list(b.keys()):
            return f"{path or 'keys'}: keys {list(a.keys())} vs {list(b.keys())}"
        for key in a:
            reason = why_different(a[key], b[key], f"{path}[{key!r}]", check_dtype=check_dtype, tol=tol)
            if reason:
                return reason
        return None
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        x, y = np.asarray(a), np.asarray(b)
        where = path or "array"
        if x.shape != y.shape:
            return f"{where}: shapes {x.shape} vs {y.shape}"
        if check_dtype and x.dtype != y.dtype:
            return f"{where}: dtypes {x.dtype} vs {y.dtype}"
        if x.dtype.kind in "fc" or y.dtype.kind in "fc":
            equal = (x == y) | (np.isnan(x) & np.isnan(y))
            if tol:
                equal = equal | np.isclose(x, y, rtol=tol, atol=tol)
        else:
            equal = x == y
        if not np.all(equal):
            idx = tuple(int(i) for i in np.argwhere(~np.asarray(equal))[0])
            return f"{where}: arrays differ at index {idx}: {_plain(x[idx])!r} vs {_plain(y[idx])!r}"
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return f"{path or 'sequence'}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            reason = why_different(x, y, f"{path}[{i}]", check_dtype=check_dtype, tol=tol)
            if reason:
                return reason
        return None
    try:
        equal = bool(a == b)
    except Exception:  # values whose == is ambiguous or raises
        equal = a is b
    if not equal and tol and isinstance(a, (float, np.floating)) \
            and isinstance(b, (float, np.floating)):
        equal = bool(np.isclose(a, b, rtol=tol, atol=tol))
    if not equal and not (_is_nan(a) and _is_nan(b)):
        return f"{path or 'value'}: {_plain(a)!r} vs {_plain(b)!r}"
    return None


def _returns_differ(got: Any, want: Any, tolerance: float) -> Optional[str]:
    """How two returns differ (scalars, or arrays of one return per objective), or None.

    Arrays are compared within the rounding of their coarser float dtype: a native env
    that sums float32 reward arrays into float32 returns (MOMAland's AEC envs) rounds
    each step, where the hub's sums are float64.
    """
    if not (isinstance(got, np.ndarray) or isinstance(want, np.ndarray)):
        got, want = float(got), float(want)
        if abs(got - want) <= tolerance:
            return None
        return (f"{got!r} in hub rewards but its native return is {want!r} "
                f"(difference {got - want:+g})")
    x, y = np.asarray(got), np.asarray(want)
    if x.shape == () or y.shape == () or x.shape == y.shape:  # 0.0: an agent never paid
        eps = max(np.finfo(a.dtype).eps if a.dtype.kind == "f" else 0.0 for a in (x, y))
        x, y = np.broadcast_arrays(x.astype(np.float64), y.astype(np.float64))
        if np.allclose(x, y, rtol=100 * eps, atol=tolerance):
            return None
    return f"{x.tolist()!r} in hub rewards but its native return is {y.tolist()!r}"


def _total(value: Any) -> Any:
    """A return: a float, or an array (one return per objective) when rewards are vectors."""
    if isinstance(value, np.ndarray) and value.shape != ():
        return value
    return float(value)


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def _is_nan(x: Any) -> bool:
    try:
        return bool(np.isnan(x))
    except (TypeError, ValueError):
        return False


def trajectory_finding(
    what: str,
    reason: str,
    *,
    episode: int,
    step: int,
    seed: Optional[int],
    actions: list[dict[Any, Any]],
    agent: Any = None,
) -> Finding:
    """Return an ``equiv.trajectory`` finding: the adapted env's ``what`` differs from native.

    Args:
        what: which output differs (``"observations"``, ``"rewards"``, ``"agent order"``, ...).
        reason: where and how, usually from :func:`why_different` (adapted vs native).
        episode: the episode index.
        step: the step index (0 = reset).
        seed: the episode's seed.
        actions: the hub action dicts up to this step.
        agent: the agent concerned, when one is.
    """
    return Finding(
        EQUIV_TRAJECTORY,
        "error",
        f"The adapted env's {what} differ from the native env's at this step ({reason}; "
        "adapted vs native). The adapter must report exactly what the native env does.",
        episode=episode,
        step=step,
        agent=agent,
        reproducer=Reproducer(seed, list(actions)),
    )


def returns_findings(
    adapted: Mapping[Any, float],
    native: Mapping[Any, float],
    *,
    episode: int,
    seed: Optional[int],
    actions: list[dict[Any, Any]],
    tolerance: float = 1e-9,
) -> list[Finding]:
    """Return an ``equiv.returns`` finding for every agent whose summed rewards differ.

    Args:
        adapted: each agent's sum of hub rewards over the episode.
        native: each agent's native return over the same episode.
        episode: the episode index.
        seed: the episode's seed.
        actions: every hub action dict of the episode.
        tolerance: absolute difference accepted (float sums in another order).
    """
    findings = []
    for agent in dict.fromkeys([*native, *adapted]):
        how = _returns_differ(_total(adapted.get(agent, 0.0)), _total(native.get(agent, 0.0)),
                              tolerance)
        if how:
            findings.append(Finding(
                EQUIV_RETURNS,
                "error",
                f"Agent {agent!r} summed {how}: a reward was lost or counted twice.",
                episode=episode,
                step=len(actions),
                agent=agent,
                reproducer=Reproducer(seed, list(actions)),
            ))
    return findings
