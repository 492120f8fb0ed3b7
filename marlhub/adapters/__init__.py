"""Adapters between the hub protocol and foreign env APIs, one subpackage per API.

Each ``marlhub/adapters/<api>/`` has the same file roles: ``adapter.py``
(native -> hub), ``view.py`` (hub -> native), ``lockstep.py`` (comparison
with the native library's own code path), ``family.py`` (its registry family),
plus what the API needs of its own; its ``__init__`` exports the pair
``from_x`` / ``to_x``. :mod:`marlhub.adapters.apis` holds the one table of
APIs that :func:`to_hub`, :func:`marlhub.convert`, the registry and error
messages read. Adapters import their backend only when called.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors()
    >>> to_hub(env) is env
    True
"""

from __future__ import annotations

from marlhub.adapters.apis import APIS, TARGETS, Api, to_hub

__all__ = ["APIS", "Api", "SOURCE_KINDS", "TARGETS", "to_hub"]

#: ``(adapter package, detection function, converter)`` for each API, in
#: :func:`to_hub`'s order; derived from :data:`APIS` for code written before it.
SOURCE_KINDS: list[tuple[str, str, str]] = [(a.package, a.detect, a.into_hub) for a in APIS]
