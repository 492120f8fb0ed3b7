"""Jumanji's own envs, made once per name and config (:func:`~marlhub.adapters.jax_env.made_once`).

The ``jumanji/`` family makes its envs here, and a pickled
:class:`~marlhub.adapters.jumanji.adapter.JumanjiHubEnv` makes its env again here.

Example:
    >>> env = cached_make("Cleaner-v0", (("time_limit", 5),))
    >>> env is cached_make("Cleaner-v0", (("time_limit", 5),)), env.time_limit
    (True, 5)
    >>> env is cached_make("Cleaner-v0", ())  # another config, another env
    False
"""

from __future__ import annotations

from typing import Any

from marlhub.adapters.jax_env import made_once
from marlhub.adapters.jumanji import import_jumanji

__all__ = ["cached_make", "jumanji_module"]


def jumanji_module() -> Any:
    """Jumanji, imported for the ``jumanji/`` family."""
    return import_jumanji("The jumanji/ env family")


def cached_make(name: str, config: tuple[tuple[str, Any], ...]) -> Any:
    """``jumanji.make(name, **config)``, once per name and config: a Jumanji env is pure
    functions (its state travels apart), so hub envs share it and its compiled code."""
    return made_once(jumanji_module, name, config)
