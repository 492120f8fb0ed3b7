"""The ``pettingzoo/`` family: every env of PettingZoo's own registry, by its registry id.

``pettingzoo/classic/tictactoe-v3`` is ``pettingzoo.make("aec", "classic/tictactoe-v3")``;
PettingZoo's spellings work too (``classic/tictactoe_v3``, and
``classic/tictactoe`` for the newest version). Config keys are passed to the
env's constructor, except ``api``: ``"aec"`` (default) or ``"parallel"`` for
the env's parallel version. Unknown keys are refused with the accepted ones,
read from the constructor's signature. :meth:`PettingZooFamily.ids` lists the
envs whose module imports (their optional dependencies are installed).

PettingZoo is imported only when an id of the family is listed or made.

Example:
    >>> family = PettingZooFamily()
    >>> env = family.make("classic/tictactoe-v3", EnvContext({"render_mode": "ansi"}))
    >>> type(env).__name__, env.render_mode
    ('OrderEnforcingWrapper', 'ansi')
    >>> "pettingzoo/butterfly/pistonball-v6" in dict(family.ids())
    True
"""

from __future__ import annotations

import importlib
import inspect
import re
import warnings
from collections.abc import Iterable
from typing import Any, Optional

from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import RESET_MID_EPISODE, SEED_REPRODUCIBLE
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["PettingZooFamily"]

_API_KEY = "api"
_APIS = ("aec", "parallel")


def _pettingzoo() -> Any:
    return import_backend("pettingzoo", package="pettingzoo", extra="pettingzoo",
                          feature="The pettingzoo/ env family")


def _module_of(spec: Any) -> Optional[str]:
    entry = spec.entry_point
    return entry.split(":", 1)[0] if isinstance(entry, str) else getattr(entry, "__module__", None)


def _accepted_kwargs(entry_point: Any, module_name: Optional[str]) -> Optional[list[str]]:
    """Return the keyword arguments the env's constructor takes; None when its signature hides them.

    PettingZoo's ``env(**kwargs)`` / ``parallel_env(**kwargs)`` pass everything to
    the module's ``raw_env`` (or ``parallel_env`` class), whose ``__init__`` names them.
    """
    candidates: list[Any] = [entry_point] if callable(entry_point) else []
    if module_name:
        module = importlib.import_module(module_name)
        if isinstance(entry_point, str):
            candidates.append(getattr(module, entry_point.split(":", 1)[1], None))
        candidates += [getattr(module, name, None) for name in ("raw_env", "parallel_env")]
    for candidate in candidates:
        if candidate is None:
            continue
        try:
            params = inspect.signature(candidate).parameters.values()
        except (TypeError, ValueError):
            continue
        kinds = {p.kind for p in params}
        if inspect.Parameter.VAR_KEYWORD in kinds or inspect.Parameter.VAR_POSITIONAL in kinds:
            continue
        return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return None


#: Rules that PettingZoo envs themselves break, by id: the conformance suite
#: reports their findings as warnings naming the upstream fault.
KNOWN_FAULTS: dict[str, dict[str, str]] = {
    "butterfly/knights_archers_zombies-v11": {
        rule: "PettingZoo 1.27 builds its zombie_spawn_interval counter in __init__ and never "
        "resets it, so a second episode on the same instance differs from the first under the "
        "same seed"
        for rule in (SEED_REPRODUCIBLE, RESET_MID_EPISODE)
    },
}


class PettingZooFamily:
    """Resolve ``pettingzoo/<PettingZoo registry id>`` through ``pettingzoo.make``."""

    name = "pettingzoo"
    description = (
        "PettingZoo envs by registry id (pettingzoo/classic/tictactoe-v3); config: constructor "
        "kwargs, plus api='parallel' for the parallel version"
    )

    def __init__(self) -> None:
        self._importable: dict[str, bool] = {}

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break."""
        return dict(KNOWN_FAULTS.get(rest, {}))

    # -- the catalogue -------------------------------------------------------------

    def _registries(self) -> tuple[dict[str, Any], dict[str, Any]]:
        pz = _pettingzoo()
        return pz.aec_registry, pz.parallel_registry

    def _can_import(self, module_name: Optional[str]) -> bool:
        if module_name is None:
            return True
        if module_name not in self._importable:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # third-party import noise
                    importlib.import_module(module_name)
                self._importable[module_name] = True
            except Exception:  # a missing optional dependency, or a broken env module
                self._importable[module_name] = False
        return self._importable[module_name]

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every PettingZoo env whose module imports here.

        Raises:
            MissingDependencyError: PettingZoo is not installed.
        """
        aec, parallel = self._registries()
        listed = []
        for env_id in sorted({*aec, *parallel}):
            spec = aec.get(env_id) or parallel[env_id]
            if not self._can_import(_module_of(spec)):
                continue
            apis = " and ".join(
                api for api, reg in (("AEC", aec), ("parallel", parallel)) if env_id in reg)
            namespace = spec.namespace or "PettingZoo"
            listed.append((f"{self.name}/{env_id}", f"PettingZoo {namespace} env ({apis})"))
        return listed

    def _spec(self, rest: str, api: str) -> Any:
        pz = _pettingzoo()
        aec, parallel = self._registries()
        try:
            return pz.spec(api, rest)
        except Exception as exc:  # PettingZoo's NameNotFound, VersionNotFound, malformed ids
            full = f"{self.name}/{rest}"
            if api == "parallel":
                try:
                    found = pz.spec("aec", rest)
                except Exception:
                    found = None
                if found is not None:
                    raise ConfigError(
                        full, f"{found.id} has no parallel version in PettingZoo's registry",
                        fix="Drop the 'api' key (or set it to 'aec'), and convert with "
                        "marlhub.adapters.pettingzoo.to_pettingzoo(env, api='parallel') if every "
                        "agent acts in every step.",
                    ) from exc
            known = [f"{self.name}/{i}" for i in {*aec, *parallel}]
            detail = str(exc).split(". Available")[0] + "."  # PettingZoo lists every id
            raise UnknownEnvError(full, closest(full, known), detail=detail) from exc

    # -- making envs ---------------------------------------------------------------

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``pettingzoo.make(api, rest, **config)``: the native AEC or parallel env.

        Raises:
            UnknownEnvError: PettingZoo's registry has no such id (with close matches).
            ConfigError: ``api`` is not 'aec' or 'parallel', the env has no parallel
                version, or a key the constructor does not take.
            MissingDependencyError: PettingZoo, or a dependency of the env, is missing.
        """
        full, api, spec, kwargs, accepted = self._prepare(rest, config)
        try:
            return _pettingzoo().make(api, spec, **kwargs)
        except TypeError as exc:  # a constructor whose signature hid its keywords
            found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
            if found is None:
                raise
            raise ConfigError(
                full, f"unknown key {found.group(1)!r} ({exc})", unknown=[found.group(1)],
                fix="Its constructor takes **kwargs, so marlhub cannot list the accepted keys; "
                "see the env's page in the PettingZoo documentation.",
            ) from exc

    def _prepare(self, rest: str, config: Optional[EnvContext]) -> tuple[str, str, Any, dict, Any]:
        """Check ``config`` against the env; return (full id, api, spec, kwargs, accepted keys)."""
        full = f"{self.name}/{rest}"
        kwargs = dict(config or {})
        api = kwargs.pop(_API_KEY, "aec")
        if api not in _APIS:
            raise ConfigError(full, f"'api' must be 'aec' or 'parallel', got {api!r}",
                              fix="Use {'api': 'parallel'} for the parallel env, or omit the key.")
        spec = self._spec(rest, api)
        module_name = _module_of(spec)
        self._load(full, spec, module_name)
        accepted = _accepted_kwargs(spec.entry_point, module_name)
        if accepted is not None:
            if spec.max_cycles is not None and "max_cycles" not in accepted:
                accepted.append("max_cycles")
            unknown = [k for k in kwargs if k not in accepted]
            if unknown:
                noun = "key" if len(unknown) == 1 else "keys"
                raise ConfigError(
                    full, f"unknown {noun} {', '.join(repr(k) for k in unknown)}",
                    unknown=unknown, accepted=[*accepted, _API_KEY],
                )
        return full, api, spec, kwargs, accepted

    def _load(self, full: str, spec: Any, module_name: Optional[str]) -> None:
        """Import the env's module, translating a missing optional dependency."""
        if module_name is None:
            return
        # The env's own optional dependencies (pygame, pymunk, ...), which PettingZoo's
        # extras install; the ImportError names the missing module.
        import_backend(module_name, package=None, extra="all",
                       feature=f"The PettingZoo env {full!r}",
                       install=f"pip install 'pettingzoo[{spec.namespace or 'all'}]'")

    # -- lockstep ------------------------------------------------------------------

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int, seed: int,
                 max_steps: int) -> list[Finding]:
        """Compare ``from_pettingzoo`` of the env with a second native instance, step by step.

        Returns:
            ``equiv.trajectory`` / ``equiv.returns`` findings; empty when they agree.
        """
        from marlhub.adapters.pettingzoo import compare_with_native

        ctx = EnvContext(dict(config or {}))
        self._prepare(rest, ctx)  # config errors surface here, before any episode
        return compare_with_native(lambda: self.make(rest, ctx), episodes=episodes, seed=seed,
                                   max_steps=max_steps)

    def __repr__(self) -> str:
        return "PettingZooFamily()"
