"""Optional backends: import one, or say which extra installs it.

Every place that needs PettingZoo, OpenSpiel, Ray or another optional library
imports it through :func:`import_backend`, so a missing backend is always the
same :class:`~marlhub.errors.MissingDependencyError`, naming the package and
the ``pip install 'marlhub[extra]'`` line. An ``ImportError`` raised by
something else (a broken install of another package) is re-raised as it is.

Example:
    >>> import_backend("json", package="json", extra="none", feature="Reading JSON").__name__
    'json'
    >>> import_backend("no_such_backend.sub", package="no_such_backend", extra="demo",
    ...                feature="The demo adapter")
    Traceback (most recent call last):
    ...
    marlhub.errors.MissingDependencyError: The demo adapter needs the 'no_such_backend' package, which is not installed. Install it with: pip install 'marlhub[demo]'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Collection, Sequence
from types import ModuleType
from typing import Any, Optional

from marlhub.errors import MissingDependencyError

__all__ = ["derives_from", "import_backend", "is_missing", "mixed_into", "when_imported"]


def derives_from(obj: Any, bases: Collection[tuple[str, str]]) -> bool:
    """Tell whether ``obj`` is an instance of a class named ``(module, name)`` in ``bases``.

    Reads only the names along the type's MRO, so the backend that defines the
    base is never imported; a class (rather than an instance) is never one.

    Example:
        >>> derives_from(ValueError(), [("builtins", "Exception")])
        True
        >>> derives_from(ValueError, [("builtins", "Exception")]), derives_from(1, [("x", "Y")])
        (False, False)
    """
    if isinstance(obj, type):
        return False
    return any((c.__module__, c.__name__) in bases for c in type(obj).__mro__)


def mixed_into(mixin: type, base: type, *, name: str, module: str) -> type:
    """Return class ``name`` of ``module``: ``mixin`` on a backend's ``base``, imported late.

    For classes that must subclass a backend's class without importing the backend
    when marlhub is imported; ``module`` resolves ``name`` in its ``__getattr__`` (so
    instances pickle), and the class has the mixin's docstring.

    Example:
        >>> class Loud:
        ...     "Says so."
        >>> cls = mixed_into(Loud, ValueError, name="LoudError", module="mymodule")
        >>> [c.__name__ for c in cls.__mro__[:3]], cls.__module__, cls.__doc__
        (['LoudError', 'Loud', 'ValueError'], 'mymodule', 'Says so.')
    """
    # types.new_class, not type(): it resolves ``__mro_entries__``, which a stand-in
    # for a backend that is not installed (Sphinx's autodoc mocks) may need.
    namespace = {"__module__": module, "__doc__": mixin.__doc__}
    return types.new_class(name, (mixin, base), {}, lambda ns: ns.update(namespace))


def is_missing(exc: ImportError, package: str) -> bool:
    """Tell whether ``exc`` says that ``package`` (or a module inside it) is not installed.

    Example:
        >>> is_missing(ModuleNotFoundError("x", name="pettingzoo.utils"), "pettingzoo")
        True
        >>> is_missing(ModuleNotFoundError("x", name="pygame"), "pettingzoo")
        False
    """
    name = getattr(exc, "name", None) or ""
    return name == package or name.startswith(package + ".")


def import_backend(module: str, *, package: Optional[str], extra: str, feature: str,
                   install: str = "", provides: tuple[str, ...] = ()) -> ModuleType:
    """Import ``module``; raise :class:`MissingDependencyError` if ``package`` is missing.

    Args:
        module: the module to import (the backend itself, or a marlhub module
            that imports it at its top).
        package: the backend's top-level package (``"pettingzoo"``, ``"open_spiel"``);
            None translates any missing module, named by the error (for modules whose
            optional dependencies are their own affair).
        extra: the marlhub extra that installs it.
        feature: what needs it, for the message (``"to_pettingzoo()"``).
        install: the install line, when no marlhub extra covers the package.
        provides: other top-level modules the package installs (``open_spiel``
            installs ``pyspiel``), whose absence means the same.

    Raises:
        MissingDependencyError: ``package`` is not installed.
        ImportError: anything else failed to import (re-raised unchanged).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or "a dependency"
        if package is not None:
            if not any(is_missing(exc, name) for name in (package, *provides)):
                raise
            missing = package
        raise MissingDependencyError(missing, extra, feature, install=install) from exc


def when_imported(name: str, callback: Callable[[ModuleType], Any]) -> None:
    """Call ``callback(module)`` once module ``name`` of an optional backend has run: now if
    it is imported already, else right after its import (by anyone) executes it. Nothing is
    imported here, and nothing is hooked when the module's package is not installed.

    Example:
        >>> seen = []
        >>> when_imported("json", lambda module: seen.append(module.__name__))
        >>> seen
        ['json']
    """
    if name in sys.modules:
        callback(sys.modules[name])
        return
    try:
        installed = importlib.util.find_spec(name.split(".")[0]) is not None
    except (ImportError, ValueError):
        installed = False
    if installed:
        sys.meta_path.insert(0, _AfterImport(name, callback))


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds module ``name`` as the path finder does, and runs ``callback`` after its loader."""

    def __init__(self, name: str, callback: Callable[[ModuleType], Any]) -> None:
        self.name, self.callback = name, callback
        self.loader: Any = None

    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            self.loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.callback(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... of the real loader
        return getattr(self.loader, name)
