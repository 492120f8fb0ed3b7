"""What the registry knows about an id, and what it reports when something could not be listed.

* :class:`EnvSpec`: one registered id, its creator, its one-line description
  and where it came from (``register``, an entry point, a family).
* :class:`RegistryProblem`: a family or entry point that was skipped, and why.
* :class:`Listing`: the answer to "which ids match this pattern", with the problems met.

Example:
    >>> def make_grid(config):
    ...     '''A grid world where two robots push boxes.'''
    >>> spec = EnvSpec.of("grid", make_grid)
    >>> spec.description, spec.takes_config
    ('A grid world where two robots push boxes.', True)
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["EnvSpec", "Listing", "RegistryProblem", "creator_description", "creator_takes_config"]


def creator_description(creator: Any) -> str:
    """Return a one-line description of ``creator``: its ``description`` or its docstring's first line.

    Only a class's or function's own docstring counts (not an inherited one, nor
    that of ``functools.partial``), so an undocumented creator gets ``""``.

    Example:
        >>> class Grid:
        ...     description = "boxes and robots"
        >>> creator_description(Grid), creator_description(lambda config: None)
        ('boxes and robots', '')
    """
    text = getattr(creator, "description", None)
    if not isinstance(text, str):
        text = ""
        if inspect.isclass(creator) or inspect.isfunction(creator) or inspect.ismethod(creator):
            text = creator.__doc__ or ""
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def creator_takes_config(creator: Callable[..., Any]) -> bool:
    """Tell whether ``creator`` takes a positional argument (the config).

    Creators follow RLlib's ``creator(config)``; a creator that takes no
    positional argument (an env class without constructor arguments) is called
    without one. When the signature cannot be read the config is passed.

    Example:
        >>> creator_takes_config(lambda config: None), creator_takes_config(lambda: None)
        (True, False)
    """
    try:
        signature = inspect.signature(creator)
    except (TypeError, ValueError):
        return True
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return any(p.kind in positional for p in signature.parameters.values())


@dataclass(frozen=True)
class EnvSpec:
    """One id the registry can make.

    Attributes:
        id: the env id.
        creator: the callable that builds it, ``creator(config)``; None for a
            family id (the family builds it).
        description: one line for ``marlhub list``.
        source: where it comes from: ``"register"``, ``"entry point NAME = VALUE (DIST)"``
            or ``"family NAME"``.
        takes_config: whether ``creator`` is called with the config.
    """

    id: str
    creator: Optional[Callable[..., Any]]
    description: str = ""
    source: str = "register"
    takes_config: bool = True

    @classmethod
    def of(
        cls,
        env_id: str,
        creator: Callable[..., Any],
        description: Optional[str] = None,
        source: str = "register",
    ) -> "EnvSpec":
        """Build the spec of ``creator``, reading its description and signature."""
        return cls(
            id=env_id,
            creator=creator,
            description=creator_description(creator) if description is None else description,
            source=source,
            takes_config=creator_takes_config(creator),
        )


@dataclass(frozen=True)
class RegistryProblem:
    """A family or entry point that could not be listed or loaded.

    Attributes:
        source: what it concerns, e.g. ``"family 'openspiel'"``.
        message: what went wrong and how to fix it, on one line.
        family: the family prefix it concerns, if any (to show it only for
            patterns that reach that family).
        error: the exception met, if any.
    """

    source: str
    message: str
    family: Optional[str] = None
    error: Optional[BaseException] = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass(frozen=True)
class Listing:
    """The ids matching a pattern, with one-line descriptions, and what was skipped.

    Attributes:
        entries: ``(id, description)`` pairs sorted by id.
        problems: families and entry points that were skipped, and why.
    """

    entries: list[tuple[str, str]]
    problems: list[RegistryProblem]

    @property
    def ids(self) -> list[str]:
        """The matching ids, sorted."""
        return [env_id for env_id, _ in self.entries]
