"""Natively parallel versions: the config that has every agent act in every step.

PettingZoo-API families (``mpe2/``, ``magent2/``, ``pettingzoo/``,
``pettingzoo-module/``) build an env's AEC version unless its config says
``{"api": "parallel"}``, although many exist natively in parallel (MPE2, MAgent2,
PettingZoo's butterfly and sisl envs). A family says which with the optional
method ``parallel_config(rest, config) -> config or None``: the config that
builds the parallel version, None when there is none or ``config`` already
chooses ``api``. :meth:`marlhub.registry.Registry.simultaneous_config` reads it
for ``make(..., to="pettingzoo.parallel")``, learner bridges and vector envs.

Example:
    >>> from marlhub.context import EnvContext
    >>> simultaneous_config({}, "tic_tac_toe", EnvContext(), {"max_steps": 9})
    {'max_steps': 9}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from marlhub.context import EnvContext
from marlhub.registry.ids import split_id

__all__ = ["aec_of_parallel", "parallel_config", "simultaneous_config"]

_API_KEY = "api"


def parallel_config(families: Mapping[str, Any], env_id: str,
                    ctx: EnvContext) -> Optional[EnvContext]:
    """Return the config of ``env_id``'s natively parallel version, from its family; or None.

    Args:
        families: the registry's families by name.
        env_id: the id; a plain name (no family) has none.
        ctx: the env's config.
    """
    prefix, rest = split_id(env_id)
    method = getattr(families.get(prefix) if prefix is not None else None, "parallel_config", None)
    return method(rest, ctx) if callable(method) else None


def simultaneous_config(families: Mapping[str, Any], env_id: str, ctx: EnvContext,
                        config: Optional[Mapping[str, Any]]) -> Optional[Mapping[str, Any]]:
    """Return :func:`parallel_config` where there is one, else ``config`` (``ctx`` as given)."""
    found = parallel_config(families, env_id, ctx)
    return config if found is None else found


def aec_of_parallel(families: Mapping[str, Any], env_id: str, ctx: EnvContext) -> bool:
    """Tell whether ``ctx`` chose the AEC version of an env that exists natively in parallel.

    Only an error message depends on it, so a family that fails to answer says no.
    """
    if ctx.get(_API_KEY, "parallel") == "parallel":
        return False
    others = ctx.copy_with_overrides({k: v for k, v in ctx.items() if k != _API_KEY})
    try:
        return parallel_config(families, env_id, others) is not None
    except Exception:  # a message is not worth an error of its own
        return False
