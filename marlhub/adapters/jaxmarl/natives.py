"""JaxMARL's own envs, made once per name and config (:func:`~marlhub.adapters.jax_env.made_once`).

The ``jaxmarl/`` family makes its envs here, and a pickled
:class:`~marlhub.adapters.jaxmarl.adapter.JaxMarlHubEnv` makes its env again here.

Example:
    >>> env = cached_make("MPE_simple_spread_v3", (("max_steps", 3),))
    >>> env is cached_make("MPE_simple_spread_v3", (("max_steps", 3),)), env.agents
    (True, ['agent_0', 'agent_1', 'agent_2'])
    >>> env is cached_make("MPE_simple_spread_v3", ())  # another config, another env
    False
"""

from __future__ import annotations

from typing import Any

from marlhub.adapters.jax_env import made_once
from marlhub.adapters.jaxmarl import import_jaxmarl

__all__ = ["cached_make"]


def _jaxmarl() -> Any:
    return import_jaxmarl("The jaxmarl/ env family")


def cached_make(name: str, config: tuple[tuple[str, Any], ...]) -> Any:
    """``jaxmarl.make(name, **config)``, once per name and config: a JaxMARL env is pure
    functions (its state travels apart), so hub envs share it and its compiled code."""
    return made_once(_jaxmarl, name, config)
