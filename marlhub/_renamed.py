"""Modules that moved, so that old imports and old pickles keep loading.

Release 0.1.0 kept the adapters as flat files (``marlhub/adapters/_rllib_to.py``
...). Ray pickles envs and creators by module path (``HubRLlibEnv``,
``RayEnvCreator``), and users import public modules by path
(``marlhub.adapters.groups``). :data:`RENAMED_MODULES` maps each old module
to where its names live now; :class:`RenamedModuleFinder`, installed when
``marlhub`` is imported, makes ``import old.path`` give a module that forwards
every attribute to the new ones (the way Gymnasium's ``_renamed_wrapper``
keeps old names working). New code imports from the new paths.

Example:
    >>> import importlib
    >>> old = importlib.import_module("marlhub.adapters.groups")
    >>> from marlhub.wrappers.groups import GroupAgentsWrapper
    >>> old.GroupAgentsWrapper is GroupAgentsWrapper
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Optional, Sequence

__all__ = ["RENAMED_MODULES", "RenamedModuleFinder", "install"]

#: Old module -> the modules its names live in now, searched in order.
RENAMED_MODULES: dict[str, tuple[str, ...]] = {
    "marlhub.vector.sync": ("marlhub.vector.sources.in_process",),
    "marlhub.vector.asynchronous": ("marlhub.vector.sources.workers",),
    "marlhub.vector.worker": ("marlhub.vector.sources.worker",),
    "marlhub.vector.processes": ("marlhub.vector.sources.processes",),
    "marlhub.vector.batched": ("marlhub.vector.sources.batched",),
    "marlhub.vector.batched_cycle": ("marlhub.vector.sources.batched_cycle",),
    "marlhub.vector.arrays": ("marlhub.vector.faces.arrays",),
    "marlhub.vector.batched_dicts": ("marlhub.vector.faces.dicts",),
    "marlhub.vector.group_actions": ("marlhub.vector.faces.group_actions",),
    "marlhub.vector.slots": ("marlhub.vector.faces.agent_slots",),
    "marlhub.vector.shared": ("marlhub.vector.sources.memory", "marlhub.vector.faces.arrays"),
    "marlhub.vector.slot_memory": ("marlhub.vector.sources.memory",),
    "marlhub.vector.worker_arrays": ("marlhub.vector.sources.worker",),
    "marlhub.vector.async_cycle": ("marlhub.vector.sources.workers_cycle",),
    "marlhub.vector.array_cycle": ("marlhub.vector.sources.workers_cycle",),
    "marlhub.vector.rllib": ("marlhub.learners.rllib_runner",),
    "marlhub.adapters.groups": ("marlhub.wrappers.groups",),
    "marlhub.adapters._pettingzoo_from": (
        "marlhub.adapters.pettingzoo.adapter", "marlhub.episode.actions"),
    "marlhub.adapters._pettingzoo_from_parallel": ("marlhub.adapters.pettingzoo.adapter_parallel",),
    "marlhub.adapters._pettingzoo_to": ("marlhub.adapters.pettingzoo.view",),
    "marlhub.adapters._pettingzoo_lockstep": ("marlhub.adapters.pettingzoo.lockstep",),
    "marlhub.adapters._openspiel_env": ("marlhub.adapters.openspiel.adapter",
                                        "marlhub.adapters.openspiel.actions"),
    "marlhub.adapters._openspiel_actions": ("marlhub.adapters.openspiel.actions",),
    "marlhub.adapters._openspiel_games": ("marlhub.adapters.openspiel.games",),
    "marlhub.adapters._openspiel_observation": ("marlhub.adapters.openspiel.observation",),
    "marlhub.adapters._openspiel_to": ("marlhub.adapters.openspiel.view",),
    "marlhub.adapters._openspiel_lockstep": ("marlhub.adapters.openspiel.lockstep",),
    "marlhub.adapters._gymnasium_views": ("marlhub.adapters.gymnasium.view",),
    "marlhub.adapters._gymnasium_lockstep": ("marlhub.adapters.gymnasium.lockstep",),
    "marlhub.adapters._rllib_from": ("marlhub.adapters.rllib.adapter",),
    "marlhub.adapters._rllib_to": ("marlhub.adapters.rllib.view",),
    "marlhub.adapters._rllib_guard": ("marlhub.adapters.rllib.guard", "marlhub.episode.status"),
    "marlhub.adapters._rllib_register": ("marlhub.registry.ray",),
    "marlhub.registry.context": ("marlhub.context",),
    "marlhub.registry.family": ("marlhub.adapters.family",),
    "marlhub.registry.families": ("marlhub.adapters.apis",),
    "marlhub.registry.families.pettingzoo": ("marlhub.adapters.pettingzoo.family",),
    "marlhub.registry.families.openspiel": ("marlhub.adapters.openspiel.family",),
    "marlhub.registry.families.gymnasium": ("marlhub.adapters.gymnasium.family",),
    "marlhub.conformance.rules": ("marlhub.contract.rules",),
    "marlhub.conformance.checks": ("marlhub.contract.checks",),
    "marlhub.conformance.equivalence": ("marlhub.contract.compare",),
    "marlhub.conformance.cli": ("marlhub.cli.check",),
    "marlhub.envs._validate": ("marlhub.context", "marlhub.episode.actions",
                               "marlhub.episode.status"),
}


class _ForwardingModule(ModuleType):
    """An old module: every attribute is looked up in the new modules, in order."""

    def __init__(self, name: str, targets: Sequence[str]) -> None:
        super().__init__(name, f"Moved: the names of {name} now live in {', '.join(targets)}.")
        self.__targets = tuple(targets)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        for target in self.__targets:
            module = importlib.import_module(target)
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(
            f"module {self.__name__!r} has no attribute {attr!r} (the module moved to "
            f"{', '.join(self.__targets)}, which have none either)"
        )

    def __dir__(self) -> list[str]:
        names: set[str] = set()
        for target in self.__targets:
            names.update(dir(importlib.import_module(target)))
        return sorted(names)


class _ForwardingLoader(importlib.abc.Loader):
    def __init__(self, targets: Sequence[str]) -> None:
        self.targets = targets

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return _ForwardingModule(spec.name, self.targets)

    def exec_module(self, module: ModuleType) -> None:
        pass  # nothing to run: attributes are forwarded on access


class RenamedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old names in :data:`RENAMED_MODULES` (and nothing else)."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        targets = RENAMED_MODULES.get(fullname)
        if targets is None:
            return None
        # A package (``marlhub.registry.families``) keeps a search path for its old children.
        is_package = any(name.startswith(fullname + ".") for name in RENAMED_MODULES)
        return importlib.machinery.ModuleSpec(fullname, _ForwardingLoader(targets),
                                              is_package=is_package)


def install() -> None:
    """Put :class:`RenamedModuleFinder` on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, RenamedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(RenamedModuleFinder())
