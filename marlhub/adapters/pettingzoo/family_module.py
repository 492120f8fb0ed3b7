"""The ``pettingzoo-module/`` family: any installed PettingZoo-API env, by its Python module.

For a package that follows the PettingZoo API but has no family of its own:
``pettingzoo-module/<module>`` makes the module's ``env`` (AEC) or, with
``{"api": "parallel"}``, its ``parallel_env``, PettingZoo's module layout
(``pettingzoo-module/mpe2.simple_spread_v3``,
``pettingzoo-module/pettingzoo.sisl.pursuit_v5``);
``pettingzoo-module/<module>.<function>`` calls that function, whatever it is
named (``pettingzoo-module/mypkg.envs.make_grid``), and the env it returns
decides the API. The id works wherever ids do: ``marlhub.make``,
``marlhub check`` (``--against-native`` included) and ``marlhub run``.

Config is handled as in the ``pettingzoo/`` family
(:class:`~marlhub.adapters.pettingzoo.family.PettingZooFamily`): keys go to
the constructor and are checked against its signature, unknown ones are
refused with the accepted ones. An id whose module does not exist gets the
closest modules of its package as suggestions; a module that fails to import
for a missing dependency names it. The form is ``family/rest`` with dots, not
``pettingzoo:<module>``: ``marlhub check`` reads any target with a colon as a
``module:attr`` Python target, and registry ids have no colon.

The family lists no ids (it cannot know every installed module).

Example:
    >>> family = PettingZooModuleFamily()
    >>> env = family.make("mpe2.simple_spread_v3", EnvContext({"api": "parallel", "N": 2}))
    >>> str(env), env.possible_agents
    ('simple_spread_v3', ['agent_0', 'agent_1'])
    >>> family.make("mpe2.simple_spread_v3", EnvContext({"n": 2}))
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'pettingzoo-module/mpe2.simple_spread_v3': unknown key 'n'. Accepted keys: 'N', 'api', 'benchmark_data', 'continuous_actions', 'curriculum', 'dynamic_rescaling', 'local_ratio', 'max_cycles', 'num_agent_neighbors', 'num_landmark_neighbors', 'render_mode', 'terminate_on_success'.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from marlhub.adapters.pettingzoo.catalogue import env_spec
from marlhub.adapters.pettingzoo.family import _API_KEY, PettingZooFamily
from marlhub.context import EnvContext
from marlhub.errors import ConfigError, MissingDependencyError, UnknownEnvError, closest

__all__ = ["PettingZooModuleFamily"]

_INSTALL = "pip install the package that provides it"
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
#: The functions of PettingZoo's module layout, by API.
_FUNCTIONS = {"aec": "env", "parallel": "parallel_env"}


class PettingZooModuleFamily(PettingZooFamily):
    """Resolves ``pettingzoo-module/<module>[.<function>]`` by importing it (see the module doc)."""

    name = "pettingzoo-module"
    description = (
        "any installed PettingZoo-API env by module (pettingzoo-module/mpe2.simple_spread_v3) "
        "or function (pettingzoo-module/mypkg.envs.make_env); config: constructor kwargs, plus "
        "api='parallel' for a module's parallel_env"
    )
    faults: Mapping[str, Mapping[str, str]] = {}
    moved: Mapping[str, str] = {}

    def ids(self) -> Iterable[tuple[str, str]]:
        """List nothing: any importable module is an id, and there is no catalogue to read."""
        return []

    def catalogue(self) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        """There is none: every id is resolved by importing it."""
        return {}, {}

    def install_hint(self, spec: Any) -> tuple[str, str]:
        """No marlhub extra installs an arbitrary module's dependencies."""
        return "pettingzoo", _INSTALL

    def _prepare(self, rest: str, config: Optional[EnvContext]) -> tuple[str, str, Any, dict, Any]:
        module_name, function = self._locate(rest)
        if function is not None and config and _API_KEY in config:
            raise ConfigError(
                f"{self.name}/{rest}",
                f"'api' chooses between a module's env and parallel_env, but the id names the "
                f"function {function!r}, which decides the API",
                unknown=[_API_KEY],
                fix=f"Drop 'api', or name the module alone ({self.name}/{module_name}).",
            )
        return super()._prepare(rest, config)

    def _spec(self, rest: str, api: str) -> Any:
        module_name, function = self._locate(rest)
        full = f"{self.name}/{rest}"
        module = _import(full, module_name)
        attr = function or _FUNCTIONS[api]
        if not callable(getattr(module, attr, None)):
            if function is None and callable(getattr(module, _FUNCTIONS[_other(api)], None)):
                raise self._no_version(full, module_name, api)
            raise self._no_function(full, module, attr, named=function is not None)
        return env_spec(module_name, f"{module_name}:{attr}")

    def _has_parallel(self, rest: str) -> bool:
        """A module with a ``parallel_env`` has one; a named function decides the API itself."""
        try:
            _, function = self._locate(rest)
        except Exception:  # no such module: making it says why
            return False
        return function is None and super()._has_parallel(rest)

    def _create(self, api: str, spec: Any, kwargs: dict[str, Any]) -> Any:
        return spec.make(**kwargs)  # the function decides the API: no check against ``api``

    def label(self) -> str:
        """Where the ids come from, for messages."""
        return "the module"

    def _locate(self, rest: str) -> tuple[str, Optional[str]]:
        """Return ``(module, function or None)`` for ``rest``; importing parents as needed."""
        full = f"{self.name}/{rest}"
        if not _DOTTED.fullmatch(rest):
            raise UnknownEnvError(
                full, detail=f"{rest!r} is not a dotted Python module path such as "
                "'mpe2.simple_spread_v3' (or 'mypkg.envs.make_env', naming a function).")
        if _module_exists(full, rest):
            return rest, None
        parent, _, function = rest.rpartition(".")
        if parent and _module_exists(full, parent):
            return parent, function
        raise self._no_module(full, rest)

    def _no_function(self, full: str, module: Any, attr: str, *, named: bool) -> UnknownEnvError:
        """Suggest the module's closest functions, or a package's env modules."""
        where = f"{self.name}/{module.__name__}."
        names = sorted(n for n, v in vars(module).items() if callable(v) and n[:1] != "_")
        suggestions = [where + n for n in closest(attr, names)]
        if hasattr(module, "__path__"):  # a package: its modules, env modules if no name fits
            subs = [i.name for i in pkgutil.iter_modules(module.__path__)]
            suggestions += [where + n for n in closest(attr, subs)] or [
                where + n for n in subs if re.fullmatch(r"\w+_v[0-9]+", n)][:6]
        layout = "" if named else " (PettingZoo's module layout has env and parallel_env)"
        return UnknownEnvError(
            full, suggestions, detail=f"{module.__name__!r} has no function {attr!r}{layout}.")

    def _no_module(self, full: str, rest: str) -> UnknownEnvError:
        """Name the longest importable prefix and suggest its closest submodules."""
        parts = rest.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            package = ".".join(parts[:cut])
            if _module_exists(full, package):
                found = importlib.import_module(package)
                subs = [i.name for i in pkgutil.iter_modules(getattr(found, "__path__", []))]
                return UnknownEnvError(
                    full, [f"{self.name}/{package}.{s}" for s in closest(parts[cut], subs)],
                    detail=f"{package!r} has no module {parts[cut]!r}.")
        return UnknownEnvError(
            full, detail=f"No module named {parts[0]!r} is installed; install the package "
            "that provides it, or check the spelling.")


def _other(api: str) -> str:
    return "parallel" if api == "aec" else "aec"


def _missing(full: str, exc: ImportError) -> MissingDependencyError:
    top = (exc.name or "").split(".")[0]
    install = f"pip install {top} (or the distribution that provides the module {top!r})"
    return MissingDependencyError(exc.name or "a dependency", "pettingzoo", f"The env {full!r}",
                                  install=install if top else _INSTALL)


def _import(full: str, module_name: str) -> Any:
    """Import the env's module; a dependency it lacks is a :class:`MissingDependencyError`."""
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise _missing(full, exc) from exc


def _module_exists(full: str, module_name: str) -> bool:
    """Tell whether ``module_name`` exists (its parent packages are imported to find out).

    Raises:
        MissingDependencyError: a parent package exists but lacks a dependency.
    """
    try:
        return importlib.util.find_spec(module_name) is not None
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):
            return False  # the module, or a package on its path, does not exist
        raise _missing(full, exc) from exc
    except ImportError as exc:
        raise _missing(full, exc) from exc
