"""What can be checked, and how a target string becomes envs.

A target is one of:

* an env object (a hub env, an RLlib ``MultiAgentEnv``, or an env of any API
  :func:`marlhub.adapters.to_hub` adapts, e.g. a PettingZoo env);
* an env class, or a factory taking no argument or a ``config``;
* a string: a registry id (``"tic_tac_toe"``, ``"openspiel/kuhn_poker"``), a glob
  over registry ids (``"openspiel/*"``), ``"package.module:attr"`` or
  ``"path/to/file.py:attr"``, where attr names any of the above.

Example:
    >>> targets = expand_target_strings(["tic_tac_t*", "rock_paper_scissors"])
    >>> targets
    ['tic_tac_toe', 'rock_paper_scissors']
    >>> resolve_target("tic_tac_toe").registry_id
    'tic_tac_toe'
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from marlhub.adapters import to_hub
from marlhub.errors import MarlhubError, TargetError
from marlhub.registry import EnvContext, Registry, default_registry

__all__ = ["Target", "expand_target_strings", "expand_targets", "is_glob", "is_registry_id",
           "resolve_target"]

_GLOB_CHARS = set("*?[")


@dataclass
class Target:
    """A checkable target: its display name and how to get an env of it.

    Attributes:
        name: how the target appears in reports (the string as given, or a repr).
        build: returns the env to check, converted to the hub.
        fresh: whether ``build`` returns a new instance on every call (a class,
            factory or id) rather than one given instance.
        registry_id: the registry id, when the target is one (for --against-native).
    """

    name: str
    build: Callable[[], Any]
    fresh: bool
    registry_id: Optional[str] = None


def is_glob(text: str) -> bool:
    """Tell whether a target string is a glob over registry ids."""
    return ":" not in text and bool(_GLOB_CHARS & set(text))


def is_registry_id(text: str) -> bool:
    """Tell whether a target string with ``:`` is a registry id, not ``module:attr``.

    ``remote/HOST:PORT`` ids hold a ``:``; what follows their last ``:`` is a
    port number, which no Python attribute name can be.

    Example:
        >>> is_registry_id("remote/127.0.0.1:50051"), is_registry_id("mypkg.envs:Grid")
        (True, False)
    """
    return ":" not in text or text.rpartition(":")[2].isdigit()


def expand_target_strings(
    targets: Sequence[str], registry: Optional[Registry] = None
) -> list[str]:
    """Expand globs over registry ids; keep every other target string as it is.

    Raises:
        TargetError: a glob that matches no registered id.
    """
    return [text for text, _ in expand_targets(targets, registry)]


def expand_targets(
    targets: Sequence[str], registry: Optional[Registry] = None
) -> list[tuple[str, bool]]:
    """Like :func:`expand_target_strings`, telling for each target whether a glob found it.

    Example:
        >>> expand_targets(["traffic", "tic*"])
        [('traffic', False), ('tic_tac_toe', True)]

    Raises:
        TargetError: a glob that matches no registered id.
    """
    reg = registry or default_registry()
    expanded: dict[str, bool] = {}
    for text in targets:
        if is_glob(text):
            listing = reg.listing(text, describe=False)
            matches = listing.ids
            if not matches:
                why = "".join(f"; {problem}" for problem in listing.problems)
                raise TargetError(
                    text, f"the glob matches no registered id{why}",
                    "Run `marlhub list` to see the ids, and quote globs so the shell does not "
                    "expand them.",
                )
            for match in matches:
                expanded.setdefault(match, True)
        else:
            expanded[text] = False  # named explicitly: a load error is the user's to see
    return list(expanded.items())


def resolve_target(target: Any, registry: Optional[Registry] = None,
                   config: Optional[Mapping[str, Any]] = None) -> Target:
    """Turn any accepted form of target into a :class:`Target`.

    Args:
        target: an env, class, factory, or target string (not a glob; see
            :func:`expand_target_strings`).
        registry: where ids are looked up; the default registry when None.
        config: the env config, for a registry id (``make(id, config)``) or a class or
            factory that takes one (as an :class:`~marlhub.context.EnvContext`).

    Raises:
        TargetError: the string names nothing loadable, or a config was given for an
            env instance or a factory that takes none.
    """
    if isinstance(target, str):
        if ":" in target and not is_registry_id(target):
            return _from_object(_load_attr(target), name=target, config=config)
        reg = registry or default_registry()
        return Target(target, lambda: reg.make(target, config), fresh=True, registry_id=target)
    return _from_object(target, name=_display_name(target), config=config)


def _from_object(obj: Any, *, name: str, config: Optional[Mapping[str, Any]] = None) -> Target:
    if inspect.isclass(obj) or callable(obj) and (
            inspect.isfunction(obj) or not hasattr(obj, "step") and not hasattr(obj, "reset")):
        factory = obj  # a class, function, functools.partial or another callable object
        if config is not None:
            _check_takes_config(factory, name)
        return Target(name, lambda: to_hub(_call_factory(factory, name, config)), fresh=True)
    if config is not None:
        raise TargetError(name, "a config was given for an env instance, which is built already",
                          "Pass the config to what builds it: a registry id, an env class or a "
                          "factory that takes one config dict.")
    return Target(name, lambda: to_hub(obj), fresh=False)


def _positional_params(factory: Callable[..., Any]) -> list[inspect.Parameter]:
    try:
        return [p for p in inspect.signature(factory).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return []


def _check_takes_config(factory: Callable[..., Any], name: str) -> None:
    if not _positional_params(factory):
        raise TargetError(name, "a config was given, but it takes no argument to receive it",
                          "Give it a config parameter (def make_env(config): ...), or leave "
                          "out the config.")


def _call_factory(factory: Callable[..., Any], name: str,
                  config: Optional[Mapping[str, Any]] = None) -> Any:
    params = [p for p in _positional_params(factory) if p.default is inspect.Parameter.empty]
    if len(params) > 1:
        raise TargetError(
            name, f"its factory needs {len(params)} arguments ({[p.name for p in params]})",
            "Point at a class or function that takes no argument or one config dict.",
        )
    if config is not None:
        return factory(EnvContext(config))
    return factory(EnvContext()) if params else factory()


def _load_attr(spec: str) -> Any:
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise TargetError(spec, "expected 'module:attr' or 'path/to/file.py:attr'")
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _load_file(spec, Path(where))
    else:
        try:
            module = importlib.import_module(where)
        except MarlhubError:
            raise
        except Exception as exc:
            raise TargetError(
                spec, f"importing module {where!r} failed ({type(exc).__name__}: {exc})",
                "Check the module name and that Python can import it here (a module in this "
                "folder: PYTHONPATH=. or `python -m marlhub`; or name the file, "
                "path/to/file.py:attr).",
            ) from exc
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise TargetError(
                spec, f"{where!r} has no attribute {attr!r}",
                f"Its public names are: {', '.join(public[:30]) or '(none)'}.",
            )
        obj = getattr(obj, part)
    return obj


def _load_file(spec: str, path: Path) -> Any:
    if not path.is_file():
        raise TargetError(spec, f"there is no file {str(path)!r}",
                          "Give a path relative to the current directory, or an absolute one.")
    module_name = f"_marlhub_target_{abs(hash(str(path.resolve())))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise TargetError(spec, f"{str(path)!r} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    # Let the file import its neighbours, as `python path/to/file.py` would.
    sys.path.insert(0, str(path.resolve().parent))
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise TargetError(
            spec, f"running {str(path)!r} raised {type(exc).__name__}: {exc}",
            "Fix the error in the file; it must import cleanly.",
        ) from exc
    finally:
        sys.path.remove(str(path.resolve().parent))
    return module


def _display_name(obj: Any) -> str:
    if inspect.isclass(obj) or inspect.isfunction(obj):
        return f"{obj.__module__}:{obj.__qualname__}"
    return f"{type(obj).__module__}:{type(obj).__qualname__} instance"
