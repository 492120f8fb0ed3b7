"""``EnvContext``, the config dict an env creator receives (as in RLlib), and config checks.

It is a plain ``dict`` of the user's config with four extra attributes that tell
a creator where it runs, so one creator serves a notebook, a test and an RLlib
env runner alike.

Example:
    >>> ctx = EnvContext({"num_agents": 3}, worker_index=2, num_workers=4)
    >>> ctx["num_agents"], ctx.worker_index, ctx.vector_index, ctx.remote
    (3, 2, 0, False)
    >>> ctx.copy_with_overrides(vector_index=1).vector_index
    1

:func:`check_config` and :func:`check_int` validate a config against the keys
an env accepts and raise :class:`~marlhub.errors.ConfigError` saying which key
is wrong and what it takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Literal, Optional, overload

import numpy as np

from marlhub.errors import ConfigError

__all__ = ["EnvContext", "check_config", "check_int", "make_from_id", "set_id_resolver"]

#: Builds the env of a registry id. The registry (a higher layer) sets it when it is
#: imported, which every ``import marlhub`` does, so code below the registry can
#: accept ids (``to_openspiel("tic_tac_toe")``) without importing it.
_ID_RESOLVER: Optional[Callable[[str, Optional[Mapping[str, Any]]], Any]] = None


def set_id_resolver(resolver: Callable[[str, Optional[Mapping[str, Any]]], Any]) -> None:
    """Set what :func:`make_from_id` calls (the default registry's ``make``)."""
    global _ID_RESOLVER
    _ID_RESOLVER = resolver


def make_from_id(env_id: str, config: Optional[Mapping[str, Any]] = None) -> Any:
    """Build the env of the registry id ``env_id`` with ``config`` (see ``marlhub.make``).

    Example:
        >>> make_from_id("rock_paper_scissors").possible_agents
        ['player1', 'player2']
    """
    if _ID_RESOLVER is None:  # pragma: no cover - the registry sets it on import
        raise RuntimeError("no registry is loaded to resolve env ids; import marlhub first.")
    return _ID_RESOLVER(env_id, config)


class EnvContext(dict):
    """A config dict plus ``worker_index``, ``vector_index``, ``num_workers`` and ``remote``.

    Args:
        env_config: the user's config; copied, never mutated.
        worker_index: which worker builds the env (0 for the local one).
        vector_index: which sub-env of a vectorized worker this is.
        remote: whether the env runs as a remote actor.
        num_workers: how many workers there are in all.
        recreated_worker: whether the worker was rebuilt after a failure.
    """

    def __init__(
        self,
        env_config: Optional[Mapping[str, Any]] = None,
        worker_index: int = 0,
        vector_index: int = 0,
        remote: bool = False,
        num_workers: Optional[int] = None,
        recreated_worker: bool = False,
    ) -> None:
        super().__init__(env_config or {})
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.remote = remote
        self.num_workers = num_workers
        self.recreated_worker = recreated_worker

    def copy_with_overrides(
        self,
        env_config: Optional[Mapping[str, Any]] = None,
        worker_index: Optional[int] = None,
        vector_index: Optional[int] = None,
        remote: Optional[bool] = None,
        num_workers: Optional[int] = None,
        recreated_worker: Optional[bool] = None,
    ) -> "EnvContext":
        """Return a copy with the given fields replaced (RLlib's signature)."""
        return EnvContext(
            dict(self) if env_config is None else env_config,
            worker_index=self.worker_index if worker_index is None else worker_index,
            vector_index=self.vector_index if vector_index is None else vector_index,
            remote=self.remote if remote is None else remote,
            num_workers=self.num_workers if num_workers is None else num_workers,
            recreated_worker=self.recreated_worker if recreated_worker is None else recreated_worker,
        )

    def set_defaults(self, defaults: Mapping[str, Any]) -> "EnvContext":
        """Fill in keys the user did not give; return self."""
        for key, value in defaults.items():
            self.setdefault(key, value)
        return self

    def __reduce__(self) -> Any:  # keep the attributes across pickling (Ray ships configs)
        return (
            EnvContext,
            (dict(self), self.worker_index, self.vector_index, self.remote,
             self.num_workers, self.recreated_worker),
        )

    def __repr__(self) -> str:
        return (
            f"EnvContext({dict(self)!r}, worker_index={self.worker_index}, "
            f"vector_index={self.vector_index}, num_workers={self.num_workers}, remote={self.remote})"
        )


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
