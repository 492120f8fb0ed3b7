"""PettingZoo's registry of envs, on every PettingZoo marlhub supports (1.25 and newer).

PettingZoo 1.27 added a registry in Gymnasium's style (``pettingzoo.aec_registry``,
``pettingzoo.parallel_registry``, ``EnvSpec``, ``pettingzoo.make``). Older
releases, which the newest AgileRL still requires, have none: their envs are the
modules named ``<name>_v<N>`` in each namespace package (``pettingzoo.classic.
tictactoe_v3``). This module gives the families one surface over both: on 1.27
and newer it is PettingZoo's own registry; before, an equivalent read from those
modules, with PettingZoo's id spellings (``classic/tictactoe-v3``,
``classic/tictactoe_v3``, and ``classic/tictactoe`` for the newest version).

Example:
    >>> aec, parallel = registries()
    >>> find_spec(aec, "classic/tictactoe").id
    'classic/tictactoe-v3'
    >>> "classic/tictactoe-v3" in parallel
    False
    >>> make("aec", find_spec(aec, "classic/tictactoe_v3")).possible_agents
    ['player_1', 'player_2']
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from marlhub.backends import import_backend

__all__ = ["ModuleSpec", "env_spec", "find_spec", "make", "read_env_modules", "registries"]

#: A PettingZoo env module: ``tictactoe_v3`` is the id ``tictactoe-v3``.
_ENV_MODULE = re.compile(r"(?P<name>[a-z][a-z0-9_]*?)_v(?P<version>[0-9]+)")
_ENV_ID = re.compile(r"(?:(?P<namespace>[\w.-]+)/)?(?P<name>[\w:.-]+?)(?:-v(?P<version>\d+))?")
#: The namespace packages of PettingZoo before 1.27 (``magent`` and ``mpe`` only
#: raise, pointing at their own packages, in the releases that moved them).
_NAMESPACES = ("atari", "butterfly", "classic", "mpe", "sisl")

def _pettingzoo() -> Any:
    return import_backend("pettingzoo", package="pettingzoo", extra="pettingzoo",
                          feature="The pettingzoo/ env family")


def _has_registry(pz: Any) -> bool:
    return hasattr(pz, "aec_registry") and hasattr(pz, "EnvSpec")


@dataclass(frozen=True)
class ModuleSpec:
    """One env of a PettingZoo without a registry: what PettingZoo 1.27's ``EnvSpec`` holds.

    Example:
        >>> spec = ModuleSpec("classic/rps_v2", "pettingzoo.classic.rps_v2:parallel_env")
        >>> spec.id, spec.namespace, spec.name, spec.version
        ('classic/rps-v2', 'classic', 'rps', 2)
    """

    id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_cycles: Optional[int] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", _normalize(self.id))

    @property
    def namespace(self) -> Optional[str]:
        """``"classic"`` of ``classic/tictactoe-v3``."""
        return _parse(self.id)[0]

    @property
    def name(self) -> str:
        """``"tictactoe"`` of ``classic/tictactoe-v3``."""
        return _parse(self.id)[1]

    @property
    def version(self) -> Optional[int]:
        """``3`` of ``classic/tictactoe-v3``."""
        return _parse(self.id)[2]

    def make(self, **kwargs: Any) -> Any:
        """Call the entry point with the spec's kwargs and ``kwargs``."""
        module_name, function = self.entry_point.split(":")
        return getattr(importlib.import_module(module_name), function)(**{**self.kwargs, **kwargs})


def env_spec(env_id: str, entry_point: str) -> Any:
    """A spec for ``env_id`` made by ``entry_point`` (``"module:function"``).

    PettingZoo's own ``EnvSpec`` where it has one, else a :class:`ModuleSpec`.
    """
    pz = _pettingzoo()
    if _has_registry(pz):
        return pz.EnvSpec(env_id, entry_point=entry_point)
    return ModuleSpec(env_id, entry_point)


def registries() -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Return PettingZoo's AEC and parallel registries: id -> spec.

    Before PettingZoo 1.27, each namespace's ``<name>_v<N>`` modules, read once;
    a module that defines or imports ``parallel_env`` has a parallel version. The
    modules are not imported (their optional dependencies may be missing).
    """
    pz = _pettingzoo()
    if _has_registry(pz):
        return pz.aec_registry, pz.parallel_registry
    return _env_modules()


@functools.lru_cache(maxsize=1)
def _env_modules() -> tuple[dict[str, Any], dict[str, Any]]:
    return read_env_modules()


def read_env_modules() -> tuple[dict[str, Any], dict[str, Any]]:
    """The AEC and parallel specs of PettingZoo's ``<name>_v<N>`` env modules, read, not imported.

    What :func:`registries` is before PettingZoo 1.27; on 1.27 and newer it holds the
    ids of PettingZoo's own registry (the tests compare the two).
    """
    aec: dict[str, Any] = {}
    parallel: dict[str, Any] = {}
    for namespace in _NAMESPACES:
        found = importlib.util.find_spec(f"pettingzoo.{namespace}")
        if found is None or not found.submodule_search_locations:
            continue
        for info in pkgutil.iter_modules(found.submodule_search_locations):
            if _ENV_MODULE.fullmatch(info.name) is None:
                continue
            module_name = f"pettingzoo.{namespace}.{info.name}"
            env_id = f"{namespace}/{info.name}"
            aec[_normalize(env_id)] = ModuleSpec(env_id, f"{module_name}:env")
            path = Path(found.submodule_search_locations[0], f"{info.name}.py")
            if path.is_file() and re.search(r"\bparallel_env\b", path.read_text("utf-8")):
                parallel[_normalize(env_id)] = ModuleSpec(env_id, f"{module_name}:parallel_env")
    return aec, parallel


def find_spec(registry: Mapping[str, Any], env_id: str) -> Any:
    """Look ``env_id`` up in ``registry``; an id without a version means the newest.

    The rules and messages of PettingZoo 1.27's ``find_spec``, on its registry and on
    :func:`read_env_modules`'s alike.

    Raises:
        LookupError: no such id, no such version, or an id that is no id.
    """
    env_id = _normalize(env_id)
    if env_id in registry:
        return registry[env_id]
    namespace, name, version = _parse(env_id)
    versions = sorted(spec.version for spec in registry.values()
                      if (spec.namespace, spec.name) == (namespace, name))
    if versions and version is None:
        prefix = f"{namespace}/" if namespace else ""
        return registry[f"{prefix}{name}-v{versions[-1]}"]
    if versions:
        unversioned = f"{namespace}/{name}" if namespace else name
        raise LookupError(f"Environment version v{version} for {unversioned!r} not found. "
                          f"Available version: v{versions[-1]}")
    raise LookupError(f"Environment {env_id!r} not found in registry. "
                      f"Available environments: {sorted(registry)}")


def make(api: str, env: Any, **kwargs: Any) -> Any:
    """``pettingzoo.make(api, env, **kwargs)``: the env of a spec, or of an id in the registry.

    Where PettingZoo has no ``make`` (before 1.27), the id is looked up with
    :func:`find_spec` and the spec's entry point called.

    Raises:
        LookupError: ``env`` is an id the registry of ``api`` does not hold.
    """
    pz = _pettingzoo()
    if _has_registry(pz):
        return pz.make(api, env, **kwargs)
    if isinstance(env, str):
        aec, parallel = registries()
        env = find_spec(aec if api == "aec" else parallel, env)
    return env.make(**kwargs)


def _normalize(env_id: str) -> str:
    return re.sub(r"_v(?=\d+$)", "-v", env_id.strip(), count=1)


def _parse(env_id: str) -> tuple[Optional[str], str, Optional[int]]:
    found = _ENV_ID.fullmatch(_normalize(env_id))
    if found is None:
        raise LookupError(f"Malformed environment ID: {env_id!r}. "
                          "Expected a str with format: [namespace/]EnvName[-vN]")
    version = found["version"]
    return found["namespace"], found["name"], int(version) if version is not None else None
