"""Envs that installed packages register through the entry point group ``marlhub.envs``.

The convention: each entry point's **name is the env id** and its **value is
``module:attr``** naming a creator, i.e. an env class or a function that takes
the config (an :class:`~marlhub.context.EnvContext`, a dict) and
returns an env of any supported API. A third-party package declares, in its
``pyproject.toml``::

    [project.entry-points."marlhub.envs"]
    grid_soccer = "my_package.envs:GridSoccer"            # GridSoccer(config)
    "my_package/traffic-v2" = "my_package.envs:make_traffic"  # make_traffic(config)

and after ``pip install my_package``, ``marlhub.make("grid_soccer")`` and
``marlhub list`` know the id. The rules:

* Names follow :mod:`marlhub.registry.ids` (no whitespace, no ``* ? [ ] :``).
  Prefer a ``my_package/`` prefix to stay clear of other packages' ids.
* Discovery reads the installed metadata only; the module is imported when the
  id is first made, or when ``marlhub list`` needs its description (the
  creator's ``description`` attribute, else the first line of its docstring).
* An entry point never overrides an id registered explicitly
  (``register_env``, the built-in envs), and an id under a registered
  family's prefix (``openspiel/...``) belongs to the family.
* A broken entry point never breaks the registry: a malformed or duplicated
  name is skipped with a :class:`~marlhub.errors.MarlhubWarning`; one whose
  module fails to import or whose target is not callable raises
  :class:`~marlhub.errors.EntryPointError` when its id is made and is flagged
  in ``marlhub list``.
* When two distributions declare the same name, the first one on ``sys.path``
  wins and the other is reported.

Example:
    >>> envs, problems = discover("marlhub.no_such_group")
    >>> envs, problems
    ({}, [])
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass, field
from typing import Optional

from marlhub.errors import EntryPointError
from marlhub.registry.ids import name_problem
from marlhub.registry.spec import EnvSpec, RegistryProblem

__all__ = ["ENTRY_POINT_GROUP", "EntryPointEnv", "discover"]

#: The entry point group third-party packages register their envs in.
ENTRY_POINT_GROUP = "marlhub.envs"


@dataclass
class EntryPointEnv:
    """One env declared by an entry point, loaded on first use.

    Attributes:
        env_id: the entry point's name.
        value: its ``module:attr`` target.
        distribution: the distribution that declares it ("" if unknown).
        group: the entry point group.
        entry_point: the ``importlib.metadata.EntryPoint`` itself.
    """

    env_id: str
    value: str
    distribution: str
    group: str
    entry_point: importlib.metadata.EntryPoint = field(repr=False)
    _spec: Optional[EnvSpec] = field(default=None, repr=False)
    _failure: Optional[tuple[str, Optional[BaseException]]] = field(default=None, repr=False)

    @property
    def source(self) -> str:
        """How :class:`EnvSpec.source` names this entry point."""
        owner = f" ({self.distribution})" if self.distribution else ""
        return f"entry point {self.env_id} = {self.value}{owner}"

    def load(self) -> EnvSpec:
        """Import the target and return its spec; cached, failures included.

        Raises:
            EntryPointError: the module does not import, the attribute is missing,
                or the target is not callable.
        """
        if self._spec is not None:
            return self._spec
        if self._failure is None:
            try:
                creator = self.entry_point.load()
            except Exception as exc:  # any import-time failure of a third-party module
                self._failure = (f"{type(exc).__name__}: {exc}", exc)
            else:
                if callable(creator):
                    self._spec = EnvSpec.of(self.env_id, creator, source=self.source)
                    return self._spec
                self._failure = (
                    f"it loads {type(creator).__name__} {creator!r:.60}, which is not callable; "
                    "it must name an env class or a function taking the config",
                    None,
                )
        problem, cause = self._failure
        raise EntryPointError(
            self.env_id, self.value, self.distribution, problem, group=self.group
        ) from cause


def discover(group: str = ENTRY_POINT_GROUP) -> tuple[dict[str, EntryPointEnv], list[RegistryProblem]]:
    """Read the entry points of ``group`` without importing them.

    Returns:
        ``(envs, problems)``: the usable entry points by id, and the ones skipped
        (malformed names, duplicates) with the reason.
    """
    envs: dict[str, EntryPointEnv] = {}
    problems: list[RegistryProblem] = []
    try:
        found = importlib.metadata.entry_points(group=group)
    except Exception as exc:  # corrupt metadata of some installed distribution
        problems.append(
            RegistryProblem(
                f"entry point group {group!r}",
                f"reading installed entry points failed: {type(exc).__name__}: {exc}",
                error=exc,
            )
        )
        return envs, problems
    for ep in found:
        dist = getattr(getattr(ep, "dist", None), "name", None) or ""
        source = f"entry point {ep.name} = {ep.value}" + (f" ({dist})" if dist else "")
        problem = name_problem(ep.name)
        if problem is not None:
            problems.append(
                RegistryProblem(source, f"skipped, its name is not a valid env id: {problem}")
            )
            continue
        taken = envs.get(ep.name)
        if taken is not None:
            if taken.value != ep.value:
                problems.append(
                    RegistryProblem(
                        source,
                        f"skipped, {taken.source} already declares the id {ep.name!r}; "
                        "uninstall one of the two packages",
                    )
                )
            continue
        envs[ep.name] = EntryPointEnv(ep.name, ep.value, dist, group, ep)
    return envs, problems
