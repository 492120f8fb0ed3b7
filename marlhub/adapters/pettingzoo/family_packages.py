"""The ``mpe2/`` and ``magent2/`` families: PettingZoo-API envs that live outside PettingZoo.

MPE (``simple_spread``, ``simple_tag``, ...) left PettingZoo for its own
package ``mpe2``, and MAgent's many-agent battles live in ``magent2``; both keep
the PettingZoo API and PettingZoo's module layout, but are not in PettingZoo's
registry. Their ids are read from each package's own modules: every module
named ``<name>_v<N>`` that has an ``env`` function (the AEC version) or a
``parallel_env`` function is the id ``<name>-v<N>``, so ``mpe2.simple_spread_v3``
is ``mpe2/simple_spread-v3`` and ``magent2.environments.battle_v4`` is
``magent2/battle-v4``. Nothing is tabled here: a new env in a new release of
the package is a new id.

Everything else is the ``pettingzoo/`` family's
(:class:`~marlhub.adapters.pettingzoo.family.PettingZooFamily`): PettingZoo's
spellings (``mpe2/simple_spread_v3``, ``mpe2/simple_spread`` for the newest
version), config keys passed to the constructor and checked against its
signature, ``{"api": "parallel"}`` for the parallel version, the errors, and
the lockstep comparison behind ``marlhub check --against-native``. MAgent2's
constructors take their reward settings as ``**reward_args``; the keys they
accept are read from the env module's ``default_reward_args``.

Example:
    >>> from marlhub.context import EnvContext
    >>> family = Mpe2Family()
    >>> dict(family.ids())["mpe2/simple_spread-v3"]
    'MPE2 env (AEC and parallel)'
    >>> env = family.make("simple_spread-v3", EnvContext({"api": "parallel", "N": 4}))
    >>> env.possible_agents
    ['agent_0', 'agent_1', 'agent_2', 'agent_3']
    >>> battle = MAgent2Family().make("battle-v4", EnvContext({"map_size": 12, "step_reward": 0}))
    >>> len(battle.possible_agents)
    4
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import threading
from collections.abc import Mapping
from typing import Any, Optional

from marlhub.adapters.pettingzoo.catalogue import env_spec
from marlhub.adapters.pettingzoo.family import PettingZooFamily
from marlhub.backends import import_backend

__all__ = ["ENV_MODULE", "MAgent2Family", "Mpe2Family", "PackageFamily"]

#: The name of an env module in PettingZoo's layout: ``simple_spread_v3``.
ENV_MODULE = re.compile(r"(?P<name>[a-z][a-z0-9_]*?)_v(?P<version>[0-9]+)")


class PackageFamily(PettingZooFamily):
    """The envs of a package that follows PettingZoo's API and module layout, by module name.

    Subclasses name the package (:attr:`package`), the package holding the env
    modules (:attr:`modules`), the marlhub extra that installs it and the label of
    its envs.
    """

    name = ""
    description = ""
    #: The distribution's top-level package (``"magent2"``): missing, it names :attr:`extra`.
    package = ""
    #: The package whose submodules are the envs (``"magent2.environments"``).
    modules = ""
    #: The marlhub extra that installs :attr:`package`.
    extra = ""
    #: How ``marlhub list`` calls its envs (``"MPE2"``).
    env_label = ""
    faults: Mapping[str, Mapping[str, str]] = {}
    #: ``{rule id: reason}`` that every env of the package is known to break.
    package_faults: Mapping[str, str] = {}
    moved: Mapping[str, str] = {}

    def __init__(self) -> None:
        super().__init__()
        self._catalogue: Optional[tuple[dict[str, Any], dict[str, Any]]] = None
        self._lock = threading.Lock()

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break."""
        return {**self.package_faults, **super().known_faults(rest)}

    def catalogue(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """Return the AEC and parallel specs of every env module, read once from the package.

        A module that fails to import keeps its AEC entry, so that making it reports why.

        Raises:
            MissingDependencyError: the package is not installed (names :attr:`extra`).
        """
        with self._lock:
            if self._catalogue is None:
                self._catalogue = self._read_catalogue()
            return self._catalogue

    def _read_catalogue(self) -> tuple[dict[str, Any], dict[str, Any]]:
        holder = import_backend(self.modules, package=self.package, extra=self.extra,
                                feature=f"The {self.name}/ env family")
        import_backend("pettingzoo", package="pettingzoo", extra=self.extra,
                       feature=f"The {self.name}/ env family")
        aec: dict[str, Any] = {}
        parallel: dict[str, Any] = {}
        for module_name in self.env_modules(holder):
            found = ENV_MODULE.fullmatch(module_name.rpartition(".")[2])
            if found is None:
                continue
            env_id = f"{found['name']}-v{found['version']}"
            module = self._module(module_name)
            for registry, function in ((aec, "env"), (parallel, "parallel_env")):
                unknown = module is None and function == "env"  # making it will say why
                if unknown or callable(getattr(module, function, None)):
                    registry[env_id] = env_spec(env_id, f"{module_name}:{function}")
        return aec, parallel

    def env_modules(self, holder: Any) -> list[str]:
        """The full names of the modules of ``holder`` (:attr:`modules`) that may be envs.

        Its direct submodules, by name; a package with envs in nested packages says otherwise.
        """
        infos = sorted(pkgutil.iter_modules(holder.__path__), key=lambda i: i.name)
        return [f"{self.modules}.{info.name}" for info in infos]

    def _module(self, module_name: str) -> Any:
        """The module, or None when it does not import (its id then reports why when made)."""
        return importlib.import_module(module_name) if self._can_import(module_name) else None

    def describe(self, spec: Any, apis: str) -> str:
        """Return ``"<label> env (<apis>)"``."""
        return f"{self.env_label} env ({apis})"

    def install_hint(self, spec: Any) -> tuple[str, str]:
        """The family's extra installs the env modules' dependencies."""
        return self.extra, ""

    def label(self) -> str:
        """Where the ids come from, for messages."""
        return f"the {self.package} package"


class Mpe2Family(PackageFamily):
    """``mpe2/<env>``: the Multi Particle Environments of the ``mpe2`` package."""

    name = "mpe2"
    description = (
        "MPE2's particle envs by module (mpe2/simple_spread-v3); config: constructor kwargs, "
        "plus api='parallel' for the parallel version"
    )
    package = "mpe2"
    modules = "mpe2"
    extra = "mpe2"
    env_label = "MPE2"


class MAgent2Family(PackageFamily):
    """``magent2/<env>``: the many-agent grid worlds of the ``magent2`` package."""

    name = "magent2"
    description = (
        "MAgent2's many-agent grid worlds by module (magent2/battle-v4); config: constructor "
        "kwargs (map_size, reward settings...), plus api='parallel' for the parallel version"
    )
    package = "magent2"
    modules = "magent2.environments"
    extra = "magent2"
    env_label = "MAgent2"
    def open_keys(self, function: Any) -> Optional[list[str]]:
        """The reward settings ``**reward_args`` takes: the env module's ``default_reward_args``."""
        module = inspect.getmodule(function)
        defaults = getattr(module, "default_reward_args", None)
        return list(defaults) if isinstance(defaults, Mapping) else None
