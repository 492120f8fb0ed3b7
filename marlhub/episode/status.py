"""Where an episode stands: why ``step`` is refused, whether it is over, who acts next.

Every env and view in marlhub words its refusals with :data:`NOT_RESET` and
:data:`EPISODE_OVER` (and :data:`NOT_CARRIED_OVER` in a copy whose native env
restarted, see :func:`restarts_when_pickled`) and raises them through
:func:`require_running`; every reader of a step's results decides "over" and
"actors" with :func:`episode_over` and :func:`actors_of`, so the rule is
written once.

Example:
    >>> episode_over({"__all__": False}, {"__all__": True})
    True
    >>> actors_of({"a": 0, "b": 1}, {"a": True, "__all__": False}, {"__all__": False})
    ['b']
    >>> require_running("TicTacToe", NOT_RESET)
    Traceback (most recent call last):
    ...
    marlhub.errors.ResetNeededError: TicTacToe.step() was called but reset() has not been called yet. Call reset() to start a new episode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from gymnasium.utils.ezpickle import EzPickle

from marlhub.core import ALL, AgentID
from marlhub.errors import ResetNeededError

__all__ = [
    "EPISODE_OVER",
    "NOT_CARRIED_OVER",
    "NOT_RESET",
    "actors",
    "actors_of",
    "done_agents",
    "episode_over",
    "flag",
    "require_running",
    "restarts_when_pickled",
    "truthy",
    "with_all",
]

#: Why ``step`` is refused before the first ``reset``.
NOT_RESET = "reset() has not been called yet"
#: Why ``step`` is refused once ``__all__`` was True.
EPISODE_OVER = "the episode is over (__all__ was True in the last step)"
#: Why the copy of a running env is refused when its native env restarts when pickled.
NOT_CARRIED_OVER = (
    "it is a copy (unpickled or deep-copied) of an env whose native env pickles as a new, "
    "unreset env (gymnasium's EzPickle, as PettingZoo's own envs do), so the episode did not "
    "carry over"
)


def require_running(env_name: str, reason: Optional[str]) -> None:
    """Raise :class:`ResetNeededError` when ``reason`` says why the env cannot step.

    Example:
        >>> require_running("TicTacToe", None)
    """
    if reason is not None:
        raise ResetNeededError(env_name, reason)


def restarts_when_pickled(env: Any) -> bool:
    """Tell whether ``env`` pickles as a call to its constructor, not with its state.

    Envs built on gymnasium's ``EzPickle`` do (PettingZoo's own envs, Gymnasium's
    MuJoCo and Box2D ones): their copy is a new env that was never reset,
    whatever episode the original was in. A hub env that holds one refuses to
    step in its copy with :data:`NOT_CARRIED_OVER`. Looks at ``env.unwrapped``.

    Example:
        >>> import gymnasium as gym
        >>> restarts_when_pickled(gym.make("CartPole-v1"))
        False
    """
    inner = getattr(env, "unwrapped", env)
    return isinstance(inner, EzPickle) and type(inner).__setstate__ is EzPickle.__setstate__


def truthy(value: Any) -> bool:
    """Return ``bool(value)``, False for values whose truth is ambiguous (arrays of several).

    Example:
        >>> import numpy as np
        >>> truthy(np.bool_(True)), truthy(np.array([True, False]))
        (True, False)
    """
    try:
        return bool(value)
    except Exception:  # an array with several values is no flag
        return False


def flag(table: Mapping[Any, Any], key: Any) -> bool:
    """Return ``table[key]`` as a bool, False when absent.

    Example:
        >>> flag({"a": True}, "a"), flag({}, "a")
        (True, False)
    """
    value = table.get(key, False)
    return value if type(value) is bool else truthy(value)


def episode_over(terminateds: Mapping[Any, Any], truncateds: Mapping[Any, Any]) -> bool:
    """Tell whether ``__all__`` is True in either done dict."""
    return flag(terminateds, ALL) or flag(truncateds, ALL)


def done_agents(*tables: Mapping[Any, Any]) -> set[AgentID]:
    """Return the agents flagged True in any of the done dicts (``__all__`` left out).

    Example:
        >>> sorted(done_agents({"a": True, "b": False, "__all__": False}, {"c": True}))
        ['a', 'c']
    """
    return {a for table in tables for a, v in table.items() if a != ALL and truthy(v)}


def with_all(flags: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """Return a done dict with ``__all__``: itself when it has one, else a copy with False.

    Example:
        >>> with_all({"a": True})
        {'a': True, '__all__': False}
    """
    return flags if ALL in flags else {**flags, ALL: False}


def actors_of(obs: Iterable[AgentID], terminateds: Mapping[Any, Any],
              truncateds: Mapping[Any, Any]) -> list[AgentID]:
    """Return the agents that act next: those in ``obs`` not done in this step.

    Empty once the episode is over.
    """
    if episode_over(terminateds, truncateds):
        return []
    done = done_agents(terminateds, truncateds)
    return [a for a in obs if a not in done]


def actors(obs: Iterable[AgentID], terminateds: Optional[Mapping[Any, Any]] = None,
           truncateds: Optional[Mapping[Any, Any]] = None) -> list[AgentID]:
    """Return who acts next: the agents of ``obs`` that are not done, in ``obs`` order.

    The public name of :func:`actors_of` (``marlhub.actors``), for the loop every hub
    env is stepped with: after ``reset`` every agent of ``obs`` acts; after ``step``,
    an agent whose ``terminateds`` or ``truncateds`` entry is True got its final
    observation and acts no more, and nobody acts once ``"__all__"`` is True. The
    vector env's ``actors`` attribute answers the same question for each copy.

    Args:
        obs: the observation dict of the last ``reset`` or ``step``.
        terminateds: the last step's ``terminateds`` (None after ``reset``).
        truncateds: the last step's ``truncateds`` (None after ``reset``).

    Example:
        >>> import marlhub
        >>> env = marlhub.make("traffic", {"num_cars": 3})
        >>> obs, infos = env.reset(seed=0)
        >>> terminateds = truncateds = {"__all__": False}
        >>> while not (terminateds["__all__"] or truncateds["__all__"]):
        ...     acting = marlhub.actors(obs, terminateds, truncateds)
        ...     obs, rewards, terminateds, truncateds, infos = env.step({a: 0 for a in acting})
        >>> marlhub.actors(obs, terminateds, truncateds)
        []
    """
    return actors_of(obs, terminateds or {}, truncateds or {})
