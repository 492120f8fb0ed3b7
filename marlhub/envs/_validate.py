"""Checks shared by the reference envs: config keys and values, action dicts, episode state.

Each check raises the matching :mod:`marlhub.errors` exception and changes
nothing, so an env calls them all before it touches its own state.

Example:
    >>> import gymnasium as gym
    >>> spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}
    >>> check_actions("Env", {"a": 1}, actors=["a"], possible_agents=["a", "b"],
    ...               space_of=spaces.__getitem__)
    {'a': 1}
    >>> check_actions("Env", {"b": 1}, actors=["a"], possible_agents=["a", "b"],
    ...               space_of=spaces.__getitem__)
    Traceback (most recent call last):
    ...
    marlhub.errors.ActionError: Bad action for 'b': got 1, expected actions only for the actors ['a']. 'b' did not receive an observation in the last step; send actions only for the agents in the last observation dict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Optional, overload

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import ActionError, ConfigError, ResetNeededError
from marlhub.spaces import why_not_in_space

__all__ = [
    "EPISODE_OVER",
    "NOT_RESET",
    "check_actions",
    "check_config",
    "check_int",
    "require_running",
]

#: Reasons handed to :class:`ResetNeededError`.
NOT_RESET = "reset() has not been called yet"
EPISODE_OVER = "the episode is over (__all__ was True in the last step)"


def check_config(env_id: str, config: Optional[Mapping[str, Any]], defaults: Mapping[str, Any]) -> dict:
    """Return ``defaults`` updated with ``config``; unknown keys raise :class:`ConfigError`.

    Args:
        env_id: the env's registry name, used in the message.
        config: the user's config (a dict or an ``EnvContext``), or None.
        defaults: every accepted key with its default value.

    Example:
        >>> check_config("traffic", {"num_cars": 3}, {"num_cars": 4, "max_steps": 100})
        {'num_cars': 3, 'max_steps': 100}
        >>> check_config("traffic", {"num_car": 3}, {"num_cars": 4})
        Traceback (most recent call last):
        ...
        marlhub.errors.ConfigError: Bad config for 'traffic': unknown key 'num_car'. Accepted keys: 'num_cars'.
    """
    if config is None:
        return dict(defaults)
    if not isinstance(config, Mapping):
        raise ConfigError(
            env_id, f"config must be a dict, got {type(config).__name__} {config!r}",
            accepted=list(defaults),
        )
    unknown = [k for k in config if k not in defaults]
    if unknown:
        keys = ", ".join(repr(k) for k in unknown)
        noun = "key" if len(unknown) == 1 else "keys"
        raise ConfigError(env_id, f"unknown {noun} {keys}", unknown=unknown, accepted=list(defaults))
    merged = dict(defaults)
    merged.update(config)
    return merged


@overload
def check_int(
    env_id: str, config: Mapping[str, Any], key: str, *, minimum: int, allow_none: Literal[False] = ...
) -> int: ...
@overload
def check_int(
    env_id: str, config: Mapping[str, Any], key: str, *, minimum: int, allow_none: bool
) -> Optional[int]: ...
def check_int(
    env_id: str,
    config: Mapping[str, Any],
    key: str,
    *,
    minimum: int,
    allow_none: bool = False,
) -> Optional[int]:
    """Return ``config[key]`` as an ``int`` if it is an integer ``>= minimum`` (or None when allowed).

    Example:
        >>> check_int("traffic", {"num_cars": 0, "max_steps": 9}, "num_cars", minimum=1)
        Traceback (most recent call last):
        ...
        marlhub.errors.ConfigError: Bad config for 'traffic': 'num_cars' must be an integer >= 1, got 0. Set 'num_cars' to an integer >= 1, or leave it out for the default.
    """
    value = config[key]
    if value is None and allow_none:
        return None
    is_int = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not is_int or value < minimum:
        also = " or None" if allow_none else ""
        raise ConfigError(
            env_id,
            f"{key!r} must be an integer >= {minimum}{also}, got {value!r}",
            accepted=list(config),
            fix=f"Set {key!r} to an integer >= {minimum}{also}, or leave it out for the default.",
        )
    return int(value)


def require_running(env_name: str, reason: Optional[str]) -> None:
    """Raise :class:`ResetNeededError` when ``reason`` says why the env cannot step.

    Example:
        >>> require_running("TicTacToe", None)
        >>> require_running("TicTacToe", NOT_RESET)
        Traceback (most recent call last):
        ...
        marlhub.errors.ResetNeededError: TicTacToe.step() was called but reset() has not been called yet. Call reset() to start a new episode.
    """
    if reason is not None:
        raise ResetNeededError(env_name, reason)


def check_actions(
    env_name: str,
    action_dict: Any,
    *,
    actors: Sequence[AgentID],
    possible_agents: Sequence[AgentID],
    space_of: Callable[[AgentID], gym.Space],
) -> dict:
    """Validate a whole action dict; return it with Discrete actions as plain ints.

    Checks, in order: that it is a mapping; that it names no agent outside
    ``actors`` (an unknown agent and a known one whose turn it is not get
    different hints); that every actor has an action; that each action is in
    its agent's space.

    Raises:
        ActionError: the first problem found; nothing was applied.
    """
    if not isinstance(action_dict, Mapping):
        raise ActionError(
            None, action_dict, expected=f"a dict mapping each actor of {list(actors)} to its action"
        )
    for agent, action in action_dict.items():
        if agent in actors:
            continue
        if agent not in possible_agents:
            fix = f"{agent!r} is not an agent of {env_name}; its agents are {list(possible_agents)}."
        else:
            fix = (
                f"{agent!r} did not receive an observation in the last step; send actions only "
                "for the agents in the last observation dict."
            )
        raise ActionError(agent, action, expected=f"actions only for the actors {list(actors)}", fix=fix)
    missing = [a for a in actors if a not in action_dict]
    if missing:
        raise ActionError(
            missing[0],
            dict(action_dict),
            expected=f"an action for every actor of the last observation dict {list(actors)}",
            fix=f"Add an action for {', '.join(repr(a) for a in missing)}.",
        )
    checked = {}
    for agent in actors:
        space = space_of(agent)
        action = action_dict[agent]
        why = why_not_in_space(space, action)
        if why is not None:
            raise ActionError(agent, action, expected=f"an action in {space} ({why})")
        checked[agent] = int(action) if isinstance(space, gym.spaces.Discrete) else action
    return checked
