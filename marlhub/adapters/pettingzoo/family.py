"""The ``pettingzoo/`` family: every env of PettingZoo's own registry, by its registry id.

``pettingzoo/classic/tictactoe-v3`` is ``pettingzoo.make("aec", "classic/tictactoe-v3")``;
PettingZoo's spellings work too (``classic/tictactoe_v3``, and
``classic/tictactoe`` for the newest version). Config keys are passed to the
env's constructor, except ``api``: ``"aec"`` (default) or ``"parallel"`` for
the env's parallel version. Unknown keys are refused with the accepted ones,
read from the constructor's signature. :meth:`PettingZooFamily.ids` lists the
envs whose module imports (their optional dependencies are installed).
:meth:`PettingZooFamily.parallel_config` gives the config that builds an env's
native parallel version, which the registry uses when every agent must act in
every step (``to="pettingzoo.parallel"``, learner bridges).

PettingZoo is imported only when an id of the family is listed or made. The
families of packages that follow the PettingZoo API outside PettingZoo
(``mpe2/``, ``magent2/``, ``pettingzoo-module/``) are this class with another
catalogue in place of PettingZoo's registry (:meth:`PettingZooFamily.catalogue`).

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
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional

from marlhub.adapters.pettingzoo.catalogue import find_spec, make, registries
from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import RESET_MID_EPISODE, SEED_REPRODUCIBLE, VECTOR_EQUIV
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["PettingZooFamily", "accepted_kwargs", "module_of"]

_API_KEY = "api"
_APIS = ("aec", "parallel")
#: PettingZoo namespaces that left PettingZoo for packages of their own, and the
#: marlhub family of each (PettingZoo's own ``pettingzoo.mpe`` says so on import).
MOVED_NAMESPACES = {"mpe": "mpe2", "magent": "magent2"}

#: ``open_keys(function) -> keys its **kwargs take, or None``: see :func:`accepted_kwargs`.
OpenKeys = Callable[[Any], Optional[list[str]]]


def module_of(spec: Any) -> Optional[str]:
    """Return the module a PettingZoo ``EnvSpec``'s entry point lives in (None if unknown)."""
    entry = spec.entry_point
    return entry.split(":", 1)[0] if isinstance(entry, str) else getattr(entry, "__module__", None)


def accepted_kwargs(entry_point: Any, module_name: Optional[str],
                    open_keys: Optional[OpenKeys] = None) -> Optional[list[str]]:
    """Return the keyword arguments the env's constructor takes; None when its signature hides them.

    PettingZoo's ``env(**kwargs)`` / ``parallel_env(**kwargs)`` pass everything to
    the module's ``raw_env`` (or ``parallel_env`` class), whose ``__init__`` names them.
    A constructor with ``**kwargs`` is passed over, unless ``open_keys`` knows the
    keys those take (MAgent2's ``**reward_args``).

    Example:
        >>> def parallel_env(size=3, seed=None):
        ...     pass
        >>> accepted_kwargs(parallel_env, None)
        ['size', 'seed']
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
        named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        kinds = {p.kind for p in params}
        if inspect.Parameter.VAR_POSITIONAL in kinds:
            continue
        if inspect.Parameter.VAR_KEYWORD in kinds:
            more = open_keys(candidate) if open_keys is not None else None
            if more is None:
                continue
            named += [key for key in more if key not in named]
        return named
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
    "classic/hanabi-v5": {
        rule: "Shimmy's OpenSpiel wrapper under PettingZoo's hanabi draws a new random "
        "generator from the OS on reset(seed=None), so the episodes after an unseeded reset "
        "differ between identically seeded instances (a vector env's autoreset, and its "
        "separate twins, reset without a seed)"
        for rule in (SEED_REPRODUCIBLE, VECTOR_EQUIV)
    },
}


class PettingZooFamily:
    """Resolve ``pettingzoo/<PettingZoo registry id>`` through ``pettingzoo.make``.

    Subclasses read another catalogue (:meth:`catalogue`) and keep the rest:
    PettingZoo's spellings and version look-up, the config check against the
    constructor, the errors and the lockstep comparison.
    """

    name = "pettingzoo"
    description = (
        "PettingZoo envs by registry id (pettingzoo/classic/tictactoe-v3); config: constructor "
        "kwargs, plus api='parallel' for the parallel version"
    )
    #: Rules the native envs break, by id (see :meth:`known_faults`).
    faults: Mapping[str, Mapping[str, str]] = KNOWN_FAULTS
    #: Namespaces whose envs moved to another family (suggested for unknown ids).
    moved: Mapping[str, str] = MOVED_NAMESPACES

    def __init__(self) -> None:
        self._importable: dict[str, bool] = {}

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break.

        ``rest`` in any of PettingZoo's spellings (``butterfly/pistonball`` for the newest
        version, ``butterfly/pistonball_v6``) names the env it resolves to.
        """
        if rest in self.faults:
            return dict(self.faults[rest])
        try:
            registries = self.catalogue()
        except Exception:  # a missing package: nothing is known of its envs
            return {}
        for registry in registries:  # the AEC registry, then the parallel-only envs
            try:
                return dict(self.faults.get(find_spec(registry, rest).id, {}))
            except LookupError:
                continue
        return {}

    # -- the catalogue -------------------------------------------------------------

    def catalogue(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """Return the AEC and the parallel registry: id -> PettingZoo ``EnvSpec``."""
        return registries()

    def describe(self, spec: Any, apis: str) -> str:
        """Return the one line ``marlhub list`` shows for ``spec`` (``apis``: "AEC and parallel")."""
        return f"PettingZoo {spec.namespace or 'PettingZoo'} env ({apis})"

    def install_hint(self, spec: Any) -> tuple[str, str]:
        """Return ``(marlhub extra, install line)`` for a missing dependency of ``spec``'s module."""
        return "all", f"pip install 'pettingzoo[{spec.namespace or 'all'}]'"

    def open_keys(self, function: Any) -> Optional[list[str]]:
        """Return the keys a constructor's ``**kwargs`` take, when the family knows them."""
        return None

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
        aec, parallel = self.catalogue()
        listed = []
        for env_id in sorted({*aec, *parallel}):
            spec = aec.get(env_id) or parallel[env_id]
            if not self._can_import(module_of(spec)):
                continue
            apis = " and ".join(
                api for api, reg in (("AEC", aec), ("parallel", parallel)) if env_id in reg)
            listed.append((f"{self.name}/{env_id}", self.describe(spec, apis)))
        return listed

    def _spec(self, rest: str, api: str) -> Any:
        aec, parallel = self.catalogue()
        try:
            return find_spec(aec if api == "aec" else parallel, rest)
        except Exception as exc:  # PettingZoo's NameNotFound, VersionNotFound, malformed ids
            full = f"{self.name}/{rest}"
            other = "aec" if api == "parallel" else "parallel"
            try:
                found = find_spec(aec if other == "aec" else parallel, rest)
            except Exception:
                found = None
            if found is not None:
                raise self._no_version(full, found.id, api) from exc
            known = [f"{self.name}/{i}" for i in {*aec, *parallel}]
            detail = str(exc).split(". Available")[0].rstrip(".") + "."  # it lists every id
            moved = self._moved(rest)
            if moved:
                family = moved[0].split("/")[0]
                detail += (f" These envs left PettingZoo for the {family} package: its ids "
                           f"are {family}/<env>.")
            raise UnknownEnvError(full, moved + closest(full, known), detail=detail) from exc

    def _no_version(self, full: str, found: str, api: str) -> ConfigError:
        if api == "parallel":
            return ConfigError(
                full, f"{found} has no parallel version in {self.label()}",
                fix="Drop the 'api' key (or set it to 'aec'), and convert with "
                "marlhub.adapters.pettingzoo.to_pettingzoo(env, api='parallel') if every "
                "agent acts in every step.",
            )
        return ConfigError(full, f"{found} has only a parallel version in {self.label()}",
                           fix="Pass {'api': 'parallel'}.")

    def label(self) -> str:
        """Where the ids come from, for messages."""
        return "PettingZoo's registry"

    def _moved(self, rest: str) -> list[str]:
        """``mpe2/simple_spread-v3`` for ``pettingzoo/mpe/simple_spread-v3``: MPE left PettingZoo."""
        namespace, _, name = rest.partition("/")
        family = self.moved.get(namespace)
        return [f"{family}/{re.sub(r'_v(?=[0-9]+$)', '-v', name)}"] if family and name else []

    def parallel_config(self, rest: str,
                        config: Optional[Mapping[str, Any]] = None) -> Optional[EnvContext]:
        """Return the config that builds the native parallel version of ``rest``, or None.

        None when the env has no parallel version (``classic/tictactoe-v3``), when
        ``rest`` names nothing the family can make (making it says why), or when
        ``config`` already chooses ``api`` (the caller's choice stands). An
        ``EnvContext`` keeps its worker attributes.

        Example:
            >>> family = PettingZooFamily()
            >>> dict(family.parallel_config("butterfly/pistonball-v6", {"n_pistons": 4}))
            {'n_pistons': 4, 'api': 'parallel'}
            >>> family.parallel_config("classic/tictactoe-v3") is None
            True
            >>> family.parallel_config("butterfly/pistonball-v6", {"api": "aec"}) is None
            True
        """
        if (config and _API_KEY in config) or not self._has_parallel(rest):
            return None
        base = config if isinstance(config, EnvContext) else EnvContext(dict(config or {}))
        return base.copy_with_overrides({**base, _API_KEY: "parallel"})

    def _has_parallel(self, rest: str) -> bool:
        """Tell whether the family's catalogue has a parallel version of ``rest``."""
        try:
            self._spec(rest, "parallel")
        except Exception:  # no parallel version, no such id, a missing package: make says why
            return False
        return True

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
            return self._create(api, spec, kwargs)
        except TypeError as exc:  # a constructor whose signature hid its keywords
            found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
            if found is None:
                raise
            raise ConfigError(
                full, f"unknown key {found.group(1)!r} ({exc})", unknown=[found.group(1)],
                fix="Its constructor takes **kwargs, so marlhub cannot list the accepted keys; "
                "see the env's documentation.",
            ) from exc

    def _create(self, api: str, spec: Any, kwargs: dict[str, Any]) -> Any:
        """Call the env's constructor, the way ``pettingzoo.make`` does."""
        return make(api, spec, **kwargs)

    def _prepare(self, rest: str, config: Optional[EnvContext]) -> tuple[str, str, Any, dict, Any]:
        """Check ``config`` against the env; return (full id, api, spec, kwargs, accepted keys)."""
        full = f"{self.name}/{rest}"
        kwargs = dict(config or {})
        api = kwargs.pop(_API_KEY, "aec")
        if api not in _APIS:
            raise ConfigError(full, f"'api' must be 'aec' or 'parallel', got {api!r}",
                              fix="Use {'api': 'parallel'} for the parallel env, or omit the key.")
        spec = self._spec(rest, api)
        module_name = module_of(spec)
        self._load(full, spec, module_name)
        accepted = accepted_kwargs(spec.entry_point, module_name, self.open_keys)
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
        extra, install = self.install_hint(spec)
        import_backend(module_name, package=None, extra=extra, feature=f"The env {full!r}",
                       install=install)

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
        return f"{type(self).__name__}()"
