"""Recorded episodes: what each call returned, how to play one again, and where two differ.

The probes of the suite play a recorded episode again under a changed
condition (a fresh instance, a reset in the middle, actions as numpy values,
another process) and compare. A :func:`snapshot` is taken when a call
returns, as a deep copy, so an env that reuses its arrays cannot rewrite what
was recorded; :func:`digest` condenses a value to a string that is the same
in every process (another ``PYTHONHASHSEED`` included) for equal values.

Example:
    >>> import numpy as np
    >>> a = [snapshot({"a": np.zeros(2)}, {}, {}, {}), snapshot({"a": 1}, {"a": 0.5}, {}, {})]
    >>> b = [a[0], snapshot({"a": 1}, {"a": 0.0}, {}, {})]
    >>> first_difference(a, b)
    (1, 'rewards', "['a']: 0.5 vs 0.0")
    >>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})  # agent order counts
    False
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from marlhub.conformance.calls import EnvTimeout, unpack_reset, unpack_step
from marlhub.contract.compare import why_different
from marlhub.spaces import find_action_mask, raw_action_mask

__all__ = [
    "NAMES",
    "Recording",
    "Snapshot",
    "clip",
    "copy_actions",
    "digest",
    "first_difference",
    "play_actions",
    "play_interleaved",
    "raised_in_play",
    "safe_mask",
    "snapshot",
    "step_digests",
]

#: What each item of a snapshot is, as findings name it.
NAMES = ("observations (and agent order)", "rewards", "terminateds", "truncateds")

#: ``(obs, rewards, terminateds, truncateds)`` of one call; the done dicts are empty for a reset.
Snapshot = tuple[Any, Any, Any, Any]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


@dataclass
class Recording:
    """One played episode as the probes replay it.

    Attributes:
        episode: its index in the check.
        seed: the reset's seed.
        actions: the action dicts sent, as they were before the env saw them.
        snapshots: one :data:`Snapshot` per call, the reset first.
    """

    episode: int
    seed: Optional[int]
    actions: list[dict[Any, Any]] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)

    def head(self, steps: int) -> "Recording":
        """Return the recording of the first ``steps`` steps only."""
        return Recording(self.episode, self.seed, self.actions[:steps],
                         self.snapshots[: steps + 1])


def snapshot(obs: Any, rewards: Any, terminateds: Any, truncateds: Any) -> Snapshot:
    """Return a deep copy of one call's dicts (the values themselves when they cannot be copied)."""
    values = (obs, rewards, terminateds, truncateds)
    try:
        return copy.deepcopy(values)
    except Exception:  # an odd value: compare it as it is
        return values


def copy_actions(actions: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return a copy of an action dict to send, so the env cannot change the one recorded.

    Example:
        >>> sent = {"a": np.zeros(2)}
        >>> copy_actions(sent)["a"] is sent["a"]
        False
    """
    return {agent: _copy_action(action) for agent, action in actions.items()}


def _copy_action(action: Any) -> Any:
    if isinstance(action, (int, float, str, np.generic)) or action is None:
        return action
    if isinstance(action, np.ndarray):
        return action.copy()
    try:
        return copy.deepcopy(action)
    except Exception:
        return action


def safe_mask(obs: Any, info: Any) -> Optional[np.ndarray]:
    """Return the action mask for sampling, or None when there is none or it cannot be read.

    A mask that cannot be read (text, ragged lists, values other than 0 and 1)
    is reported under ``turn.mask_valid``; actions are then drawn from the
    whole space.

    Example:
        >>> safe_mask({"action_mask": np.array([0.5, 0.5])}, {}) is None
        True
    """
    info = info if isinstance(info, Mapping) else None
    try:
        mask = find_action_mask(obs, info)
        if mask is None or not _binary(raw_action_mask(obs, info)):
            return None
    except Exception:
        return None
    return mask


def _binary(mask: Any) -> bool:
    if isinstance(mask, (tuple, list)) and any(isinstance(p, (np.ndarray, tuple, list))
                                               for p in mask):
        return all(_binary(part) for part in mask)
    values = np.asarray(mask)
    return bool(np.all((values == 0) | (values == 1)))


def play_actions(
    env: Any,
    seed: Optional[int],
    actions: list[dict[Any, Any]],
    reset_kwargs: Mapping[str, Any],
    into: list[Snapshot],
    *,
    convert: Optional[Callable[[int, dict[Any, Any]], dict[Any, Any]]] = None,
) -> tuple[Any, Any]:
    """Reset ``env`` with ``seed``, send ``actions`` in order, and append a snapshot per call.

    Args:
        env: the env to play on.
        seed: the reset's seed.
        actions: the action dicts to send (copies are sent).
        reset_kwargs: further keywords of ``reset`` (``{"options": None}`` or ``{}``).
        into: receives the snapshots; when the env raises, it holds those taken so
            far, so ``len(into)`` says which call raised.
        convert: ``convert(step_index, actions) -> action dict to send`` (copies by default).

    Returns:
        The obs and infos of the last call (legal actions and masks from there on).
    """
    obs, infos = unpack_reset(env.reset(seed=seed, **reset_kwargs))
    into.append(snapshot(obs, {}, {}, {}))
    for index, action_dict in enumerate(actions):
        sent = convert(index, action_dict) if convert else copy_actions(action_dict)
        obs, r, te, tr, infos = unpack_step(env.step(sent))
        into.append(snapshot(obs, r, te, tr))
    return obs, infos


def raised_in_play(env: Any, seed: Optional[int], actions: list[dict[Any, Any]],
                   reset_kwargs: Mapping[str, Any], into: list[Snapshot]) -> Optional[str]:
    """:func:`play_actions`; return what the env raised (``"Type: message"``), or None."""
    try:
        play_actions(env, seed, actions, reset_kwargs, into)
    except EnvTimeout:
        raise
    except Exception as exc:
        return f"{type(exc).__name__}: {clip(str(exc))}"
    return None


def clip(text: str, limit: int = 100) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def play_interleaved(
    envs: list[Any],
    seed: Optional[int],
    actions: list[dict[Any, Any]],
    reset_kwargs: Mapping[str, Any],
    intos: list[list[Snapshot]],
) -> None:
    """Play the same episode on every env of ``envs`` at once, one call each in turn.

    What a vector env, a lockstep comparison or a league of copies does: each env is
    reset with ``seed``, then each takes step k before any takes step k + 1. Snapshots
    go to ``intos[i]`` as in :func:`play_actions`; an env that raises stops them all.
    """
    for env, into in zip(envs, intos):
        obs, _ = unpack_reset(env.reset(seed=seed, **reset_kwargs))
        into.append(snapshot(obs, {}, {}, {}))
    for action_dict in actions:
        for env, into in zip(envs, intos):
            o, r, te, tr, _ = unpack_step(env.step(copy_actions(action_dict)))
            into.append(snapshot(o, r, te, tr))


def first_difference(first: list[Snapshot], again: list[Snapshot]) -> Optional[tuple[int, str, str]]:
    """Return ``(call index, what, how)`` of the first difference of two recordings, or None.

    Recordings of different lengths differ where the shorter one ends (``what``
    is then ``"length"``).
    """
    for index, (a, b) in enumerate(zip(first, again)):
        for name, x, y in zip(NAMES, a, b):
            reason = why_different(x, y)
            if reason:
                return index, name, reason
    if len(first) != len(again):
        return (min(len(first), len(again)), "length",
                f"the episode took {len(first) - 1} vs {len(again) - 1} steps")
    return None


def digest(value: Any) -> str:
    """Return a short hash of ``value`` that is equal in every process for equal values.

    Dict order counts; set order does not. Objects of other types are hashed by
    type and ``repr`` with memory addresses removed.
    """
    h = hashlib.blake2b(digest_size=10)
    _feed(h, value)
    return h.hexdigest()


def step_digests(snap: Snapshot) -> list[str]:
    """Return the digest of each item of a snapshot (obs, rewards, terminateds, truncateds)."""
    return [digest(value) for value in snap]


def _feed(h: Any, value: Any) -> None:
    if isinstance(value, Mapping):
        h.update(b"{")
        for key, item in value.items():
            _feed(h, key)
            _feed(h, item)
        h.update(b"}")
    elif isinstance(value, np.ndarray):
        h.update(f"A{value.dtype.str}{value.shape}".encode())
        if value.dtype.hasobject:
            for item in value.flat:
                _feed(h, item)
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(b"[" if isinstance(value, list) else b"(")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(value, (set, frozenset)):
        h.update(("S" + ",".join(sorted(digest(item) for item in value))).encode())
    elif isinstance(value, (str, bytes, int, float, complex, np.generic)) or value is None:
        h.update(f"{type(value).__name__}:{value!r};".encode())
    else:
        h.update(f"{type(value).__qualname__}:{_ADDRESS.sub('', repr(value))};".encode())
