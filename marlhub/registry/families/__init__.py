"""The built-in families: catalogues of envs resolved through each library's own registry.

Each module here defines one :class:`~marlhub.registry.family.Family` and imports
its backend only inside its methods, so listing the table below costs nothing.
The default registry instantiates every family in :data:`BUILTIN_FAMILIES`.
"""

from __future__ import annotations

__all__ = ["BUILTIN_FAMILIES"]

#: ``(module, class name)`` of every built-in family, imported when the default
#: registry is first used.
BUILTIN_FAMILIES: list[tuple[str, str]] = [
    ("marlhub.registry.families.pettingzoo", "PettingZooFamily"),
    ("marlhub.registry.families.openspiel", "OpenSpielFamily"),
    ("marlhub.registry.families.gymnasium", "GymnasiumFamily"),
]
