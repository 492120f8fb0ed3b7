"""The hub in one call: any supported env to any supported API.

:func:`convert` detects what it was given (a hub env, an RLlib ``MultiAgentEnv``,
a PettingZoo AEC or parallel env, an OpenSpiel game or state, a Gymnasium env),
brings it to the hub, and hands it out in the requested API. Converting to the
API an env came from unwraps instead of stacking adapters:
``convert(pz_env, to="pettingzoo.aec") is pz_env``.

Example:
    >>> import marlhub
    >>> env = marlhub.convert(marlhub.make("rock_paper_scissors"), to="marlhub")
    >>> type(env).__name__
    'RockPaperScissors'
    >>> marlhub.convert(env, to="dm_env")
    Traceback (most recent call last):
    ...
    ValueError: Cannot convert to 'dm_env': the supported targets are 'marlhub', 'pettingzoo.aec', 'pettingzoo.parallel', 'openspiel', 'gymnasium', 'rllib'; pass one of them as `to`.
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.adapters import to_hub

__all__ = ["TARGETS", "convert"]

#: Target API -> (adapter module, converter, fixed keyword arguments); None for the hub itself.
TARGETS: dict[str, tuple[str, str, dict[str, Any]] | None] = {
    "marlhub": None,
    "pettingzoo.aec": ("marlhub.adapters.pettingzoo", "to_pettingzoo", {"api": "aec"}),
    "pettingzoo.parallel": ("marlhub.adapters.pettingzoo", "to_pettingzoo", {"api": "parallel"}),
    "openspiel": ("marlhub.adapters.openspiel", "to_openspiel", {}),
    "gymnasium": ("marlhub.adapters.gymnasium", "to_gymnasium", {}),
    "rllib": ("marlhub.adapters.rllib", "to_rllib", {}),
}


def convert(env: Any, to: str = "marlhub", **options: Any) -> Any:
    """Return ``env`` in the API named by ``to``, going through the hub.

    Args:
        env: an env of any supported API (see the module docstring).
        to: ``"marlhub"``, ``"pettingzoo.aec"``, ``"pettingzoo.parallel"``,
            ``"openspiel"``, ``"gymnasium"`` or ``"rllib"`` (Ray needed).
        options: passed to the target's converter (``to_gymnasium(agent_id=...)``,
            ``to_openspiel(short_name=...)``, ``to_pettingzoo(turn_based=...)``).

    Raises:
        ValueError: ``to`` names no supported API.
        ProtocolError: ``env`` is of no supported kind (the message lists them).
        MissingDependencyError: the target's backend is not installed.
    """
    if to not in TARGETS:
        supported = ", ".join(repr(t) for t in TARGETS)
        raise ValueError(
            f"Cannot convert to {to!r}: the supported targets are {supported}; pass one of them "
            "as `to`."
        )
    hub = to_hub(env)
    target = TARGETS[to]
    if target is None:
        if options:
            raise TypeError(f"convert(..., to='marlhub') takes no options, got {sorted(options)}.")
        return hub
    module_name, function_name, fixed = target
    converter = getattr(importlib.import_module(module_name), function_name)
    return converter(hub, **fixed, **options)
