"""Env ids: how they are split, which names may be registered, which globs reach a family.

An id is a plain ``name`` (``"traffic"``) or ``prefix/rest``
(``"openspiel/kuhn_poker(players=3)"``). The prefix is everything before the
first slash; when a :class:`~marlhub.adapters.family.Family` of that name is
registered it owns every id under it.

Registered names (plain or with slashes) must be non-empty strings without
whitespace, without the glob characters ``* ? [ ]`` (they would be ambiguous
in ``marlhub list PATTERN``) and without ``:`` (``marlhub check`` reads
``module:attr`` as a Python target), with no empty segment (``"a//b"``,
``"/a"``, ``"a/"``). A name with slashes (``"mypkg/grid-v0"``) may be
registered as long as no registered family claims its prefix, and a family
cannot be registered over names already under its prefix. Only families' own
``rest`` parts (such as OpenSpiel's ``kuhn_poker(players=3)``, or the
``remote/`` family's ``HOST:PORT``, whose port tells it from ``module:attr``)
go beyond these rules, and they never go through registration.

Example:
    >>> split_id("openspiel/kuhn_poker(players=3)")
    ('openspiel', 'kuhn_poker(players=3)')
    >>> split_id("traffic")
    (None, 'traffic')
    >>> name_problem("my env")
    'it contains whitespace'
    >>> pattern_reaches("open*", "openspiel"), pattern_reaches("tic*", "openspiel")
    (True, False)
"""

from __future__ import annotations

from typing import Any, Optional

from marlhub.errors import EnvRegistrationError

__all__ = [
    "FORBIDDEN_CHARS",
    "GLOB_CHARS",
    "family_name_problem",
    "literal_prefix",
    "name_problem",
    "pattern_reaches",
    "split_id",
    "validate_family_name",
    "validate_name",
]

#: Characters that make a pattern a glob (fnmatch's specials).
GLOB_CHARS = frozenset("*?[")
#: Characters no registered name may contain.
FORBIDDEN_CHARS = frozenset("*?[]:")


def split_id(env_id: str) -> tuple[Optional[str], str]:
    """Split ``env_id`` at its first slash into ``(prefix, rest)``; ``prefix`` is None without one.

    Example:
        >>> split_id("pettingzoo/classic/tictactoe-v3")
        ('pettingzoo', 'classic/tictactoe-v3')
    """
    prefix, slash, rest = env_id.partition("/")
    return (prefix, rest) if slash else (None, env_id)


def name_problem(name: Any) -> Optional[str]:
    """Return what makes ``name`` unfit to register, or None when it is fine.

    Example:
        >>> name_problem("mypkg/grid-v0") is None
        True
        >>> name_problem("mypkg//grid")
        "it has an empty segment between slashes ('mypkg//grid')"
    """
    if not isinstance(name, str):
        return f"ids are strings, got {type(name).__name__} {name!r}"
    if not name:
        return "the name is empty"
    if any(ch.isspace() for ch in name):
        return "it contains whitespace"
    bad = sorted({ch for ch in name if ch in FORBIDDEN_CHARS})
    if bad:
        return (
            f"it contains {', '.join(repr(ch) for ch in bad)} (glob characters and ':' are "
            "reserved for patterns and module:attr targets)"
        )
    if "" in name.split("/"):
        return f"it has an empty segment between slashes ({name!r})"
    return None


def family_name_problem(name: Any) -> Optional[str]:
    """Return what makes ``name`` unfit as a family prefix, or None when it is fine.

    Example:
        >>> family_name_problem("open/spiel")
        "a family name is one id segment, without '/'"
    """
    problem = name_problem(name)
    if problem is None and "/" in name:
        return "a family name is one id segment, without '/'"
    return problem


def validate_name(name: Any) -> str:
    """Return ``name`` if it may be registered, else raise.

    Raises:
        EnvRegistrationError: the name is not a string or breaks the rules above.

    Example:
        >>> validate_name("traffic")
        'traffic'
    """
    problem = name_problem(name)
    if problem is not None:
        raise EnvRegistrationError(
            str(name),
            problem,
            "Use letters, digits, '_', '-', '.' and '/' between non-empty segments, "
            "e.g. 'my_env' or 'mypkg/grid-v0'.",
        )
    return name


def validate_family_name(name: Any) -> str:
    """Return ``name`` if it may be a family prefix, else raise.

    Raises:
        EnvRegistrationError: the name is not one valid id segment.

    Example:
        >>> validate_family_name("openspiel")
        'openspiel'
    """
    problem = family_name_problem(name)
    if problem is not None:
        raise EnvRegistrationError(
            str(name),
            problem,
            "Give the family a one-segment name such as 'openspiel'; its ids are 'name/...'.",
        )
    return name


def literal_prefix(pattern: str) -> str:
    """Return the part of ``pattern`` before its first glob character.

    Example:
        >>> literal_prefix("openspiel/*poker")
        'openspiel/'
    """
    for i, ch in enumerate(pattern):
        if ch in GLOB_CHARS:
            return pattern[:i]
    return pattern


def pattern_reaches(pattern: str, family: str) -> bool:
    """Tell whether glob ``pattern`` may match an id under ``family + "/"``.

    Listing a family asks its backend for its whole catalogue, so a pattern
    only reaches the families it can match: ``"*"``, ``"o*"`` and
    ``"openspiel/*"`` reach ``openspiel``; ``"tic*"`` and ``"openspiel"`` do not.

    Example:
        >>> pattern_reaches("*", "openspiel"), pattern_reaches("openspiel/kuhn_poker", "openspiel")
        (True, True)
        >>> pattern_reaches("openspiel", "openspiel")
        False
    """
    head = family + "/"
    lit = literal_prefix(pattern)
    if lit == pattern:  # no glob: an exact id
        return pattern.startswith(head)
    return head.startswith(lit) or lit.startswith(head)
