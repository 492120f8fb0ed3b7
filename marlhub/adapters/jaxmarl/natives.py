"""JaxMARL's own envs, made once per name and config: :func:`cached_make`.

A JaxMARL env is pure functions (its state travels apart), so the hub envs of one
name and config share one env object and XLA compiles its functions once. The
``jaxmarl/`` family (:mod:`~marlhub.adapters.jaxmarl.family`) makes its envs here,
and a pickled :class:`~marlhub.adapters.jaxmarl.adapter.JaxMarlHubEnv` makes its
JaxMARL env again here when it is unpickled.

Example:
    >>> env = cached_make("MPE_simple_spread_v3", (("max_steps", 3),))
    >>> env is cached_make("MPE_simple_spread_v3", (("max_steps", 3),)), env.agents
    (True, ['agent_0', 'agent_1', 'agent_2'])
    >>> env is cached_make("MPE_simple_spread_v3", ())  # another config, another env
    False
"""

from __future__ import annotations

import functools
from typing import Any

from marlhub.adapters.jaxmarl import import_jaxmarl

__all__ = ["cached_make"]


def _jaxmarl() -> Any:
    return import_jaxmarl("The jaxmarl/ env family")


@functools.lru_cache(maxsize=64)
def cached_make(name: str, config: tuple[tuple[str, Any], ...]) -> Any:
    """``jaxmarl.make(name, **config)``, once per name and config: a JaxMARL env is pure
    functions (its state travels apart), so hub envs share it and its compiled code."""
    return _jaxmarl().make(name, **dict(config))
