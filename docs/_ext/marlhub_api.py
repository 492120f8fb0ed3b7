"""The API reference, generated from the package: every public module, every ``__all__`` name.

At ``builder-inited`` this writes ``docs/api/`` (git-ignored): one page per area
(the package ``marlhub``, each top-level module or subpackage, each foreign API
under ``marlhub.adapters``), in layer order. Each page has a section per public
module with its docstring and:

* every name the module defines and exports, documented in full by autodoc
  (each object is documented exactly once, where it is defined);
* every name it re-exports, in a table linking to that one description.

Users and docstrings refer to objects by the paths they import them from
(``marlhub.make``, ``marlhub.adapters.pettingzoo.to_pettingzoo``); the
``missing-reference`` handler resolves any such path to the place the object
is documented, so only references to names that do not exist stay broken
(and fail the build under ``-W``, with ``nitpicky`` on).

A public name without a docstring is a warning too (a failed build under ``-W``).
A module, subpackage or name added to the package appears on the next build
with no edit here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from sphinx.application import Sphinx
from sphinx.ext.autodoc.mock import mock
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE = "marlhub"
#: Areas in the order of the package's layers (DESIGN.md); areas not named here
#: (a new subpackage) follow in alphabetical order.
AREA_ORDER = [
    "marlhub", "marlhub.core", "marlhub.errors", "marlhub.spaces", "marlhub.rewards",
    "marlhub.context",
    "marlhub.backends", "marlhub.version", "marlhub.contract", "marlhub.episode",
    "marlhub.adapters", "marlhub.adapters.pettingzoo", "marlhub.adapters.openspiel",
    "marlhub.adapters.gymnasium", "marlhub.adapters.rllib", "marlhub.adapters.torchrl",
    "marlhub.adapters.vmas", "marlhub.adapters.remote", "marlhub.wrappers", "marlhub.envs",
    "marlhub.vector", "marlhub.external", "marlhub.registry", "marlhub.conformance",
    "marlhub.convert",
    "marlhub.rollout", "marlhub.remote", "marlhub.cli",
]
#: Areas whose subpackages get pages of their own.
SPLIT_AREAS = ("marlhub.adapters",)


def _public(name: str) -> bool:
    parts = name.split(".")
    return all(not p.startswith("_") for p in parts) and parts[-1] != "__main__"


def area_of(module: str) -> str:
    """The page a module is documented on: its top-level subpackage (adapters: its API)."""
    parts = module.split(".")
    for split in SPLIT_AREAS:
        depth = len(split.split("."))
        if module.startswith(split + ".") and len(parts) > depth:
            candidate = ".".join(parts[: depth + 1])
            if _is_package(candidate):
                return candidate
            return split
    return ".".join(parts[:2])


def _is_package(module: str) -> bool:
    try:
        return hasattr(importlib.import_module(module), "__path__")
    except Exception:
        return False


@dataclass
class ModuleInfo:
    """What one public module exports and where each of its names is documented."""

    name: str
    doc: str
    all: list[str]
    defined: set[str] = field(default_factory=set)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class ApiModel:
    """The public modules, their names, and the one documented location of each object."""

    modules: dict[str, ModuleInfo]
    #: (module, name) of every exported name -> (module, name) where it is documented.
    canonical: dict[tuple[str, str], tuple[str, str]]
    failures: list[str]

    def documented_in(self, module: str) -> list[str]:
        """The names documented in full in ``module``'s section, in ``__all__`` order first."""
        here = [t[1] for t in dict.fromkeys(self.canonical.values()) if t[0] == module and t[1]]
        order = {n: i for i, n in enumerate(self.modules[module].all)}
        return sorted(here, key=lambda n: (order.get(n, len(order)), n))

    def reexported_in(self, module: str) -> list[tuple[str, tuple[str, str]]]:
        """``(name, (module, name) documented)`` for the names ``module`` exports from elsewhere."""
        return [(n, self.canonical[(module, n)]) for n in self.modules[module].all
                if self.canonical[(module, n)] != (module, n)]


def public_module_names() -> list[str]:
    """Every public module of the package (no ``_private`` part, no ``__main__``), sorted."""
    package = importlib.import_module(PACKAGE)
    names = [PACKAGE]
    for info in pkgutil.walk_packages(package.__path__, PACKAGE + ".", onerror=lambda name: None):
        if _public(info.name):
            names.append(info.name)
    return sorted(names)


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _scan_source(info: ModuleInfo, mod: Any) -> None:
    """Fill ``defined`` and ``imported`` from the module's source (TYPE_CHECKING blocks too)."""
    try:
        tree = ast.parse(Path(inspect.getfile(mod)).read_text(encoding="utf-8"))
    except (OSError, TypeError):
        return
    is_package = hasattr(mod, "__path__")
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If):
            body[:0] = node.body + node.orelse
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            info.defined.add(node.name)
        elif isinstance(node, ast.Assign):
            info.defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            info.defined.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(info.name, is_package, node)
            for alias in node.names:
                info.imported[alias.asname or alias.name] = (source, alias.name)


def _object_home(obj: Any, modules: dict[str, ModuleInfo]) -> Optional[tuple[str, str]]:
    """Where a class or function is defined, when that is a public module and a plain name."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    if module in modules and qualname and "." not in qualname and "<" not in qualname:
        target = importlib.import_module(module)
        if getattr(target, qualname, None) is obj:
            return module, qualname
    return None


def _canonical(module: str, name: str, modules: dict[str, ModuleInfo],
               seen: frozenset[tuple[str, str]] = frozenset()) -> tuple[str, str]:
    info = modules[module]
    try:
        obj = getattr(importlib.import_module(module), name)
    except Exception:
        obj = None
    if inspect.ismodule(obj):
        return obj.__name__, ""
    home = _object_home(obj, modules)
    if home is not None:
        return home
    if name in info.defined or (module, name) in seen:
        return module, name
    source = info.imported.get(name)
    if source is not None and source[0] in modules:
        return _canonical(source[0], source[1], modules, seen | {(module, name)})
    return module, name


def build_model() -> ApiModel:
    """Import every public module and decide where each exported object is documented."""
    modules: dict[str, ModuleInfo] = {}
    failures = []
    for name in public_module_names():
        try:
            mod = importlib.import_module(name)
        except Exception as exc:
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        info = ModuleInfo(name, inspect.getdoc(mod) or "", list(getattr(mod, "__all__", [])))
        _scan_source(info, mod)
        modules[name] = info
    canonical = {}
    for name, info in modules.items():
        for exported in info.all:
            canonical[(name, exported)] = _canonical(name, exported, modules)
    return ApiModel(modules, canonical, failures)


def _summary(obj: Any, home: str, name: str) -> str:
    """The first sentence of what documents ``obj``: its docstring, or its ``#:`` comment."""
    own = getattr(obj, "__module__", None) == home and getattr(obj, "__qualname__", "") == name
    if own or _wrapped_function(obj):
        return _first_line(obj)
    comment = ModuleAnalyzer.for_module(home).find_attr_docs().get(("", name))
    if comment:
        return " ".join(comment).split(". ")[0].strip()
    return f"``{obj!r}``" if isinstance(obj, (str, int, float, bool)) else ""


def anchor_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
                options: Any = None, content: Any = None) -> tuple[list[Any], list[Any]]:
    """``:marlhub-anchor:`marlhub.make``` puts the HTML anchor ``#marlhub.make`` here."""
    from docutils import nodes

    return [nodes.target("", "", ids=[text])], []


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ").strip()


def _directive(model: "ApiModel", module: str, name: str) -> str:
    obj = getattr(importlib.import_module(module), name)
    path = f"{module}.{name}"
    if _object_home(obj, model.modules) == (module, name):
        if issubclass(obj, BaseException) if inspect.isclass(obj) else False:
            return f".. autoexception:: {path}\n   :members:\n   :show-inheritance:\n"
        if inspect.isclass(obj):
            return f".. autoclass:: {path}\n   :members:\n   :show-inheritance:\n"
        return f".. autofunction:: {path}\n"
    if _wrapped_function(obj):  # functools.lru_cache and friends
        return f".. autofunction:: {path}\n"
    return f".. autodata:: {path}\n   :no-value:\n" if _long_value(obj) else f".. autodata:: {path}\n"


def _wrapped_function(obj: Any) -> bool:
    return callable(obj) and not inspect.isclass(obj) and inspect.isfunction(inspect.unwrap(obj))


def _long_value(obj: Any) -> bool:
    try:
        return len(repr(obj)) > 200
    except Exception:
        return True


def _heading(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def module_section(model: ApiModel, module: str, char: str) -> str:
    """The reST of one module: heading, docstring, re-export table, full descriptions.

    ``char`` underlines the heading; an empty ``char`` gives no heading (the page's
    own title names the module).
    """
    lines = [_heading(f"``{module}``", char) if char else "", f".. automodule:: {module}\n"]
    reexported = model.reexported_in(module)
    if reexported:
        lines.append(".. list-table:: Exported here, documented where defined\n"
                     "   :widths: 35 65\n   :class: marlhub-reexports\n")
        for name, (home, home_name) in reexported:
            obj = getattr(importlib.import_module(module), name)
            anchor = f":marlhub-anchor:`{module}.{name}`\\ "
            if inspect.ismodule(obj):
                lines.append(f"   * - {anchor}:py:mod:`{name} <{obj.__name__}>`\n"
                             f"     - the module ``{obj.__name__}``\n")
                continue
            alias = "" if name == home_name else f" (``{home_name}``)"
            lines.append(f"   * - {anchor}:py:obj:`{name} <{home}.{home_name}>`{alias}\n"
                         f"     - {_summary(obj, home, home_name) or '(no docstring)'}\n")
    for name in model.documented_in(module):
        lines.append(_directive(model, module, name))
    return "\n".join(lines)


def page_text(model: ApiModel, area: str, members: list[str]) -> str:
    """The reST page of an area: the area module first, then its submodules, sorted."""
    title = _heading(area, "=")
    first = [m for m in members if m == area]
    rest = sorted(m for m in members if m != area)
    parts = [title, ".. This page is generated by docs/_ext/marlhub_api.py; do not edit.\n"]
    for module in first:
        parts.append(module_section(model, module, ""))
    for module in rest:
        parts.append(module_section(model, module, "-"))
    return "\n".join(parts)


def _areas(model: ApiModel) -> dict[str, list[str]]:
    areas: dict[str, list[str]] = {}
    for module in model.modules:
        areas.setdefault(area_of(module) if module != PACKAGE else PACKAGE, []).append(module)
    order = {a: i for i, a in enumerate(AREA_ORDER)}
    return dict(sorted(areas.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


INDEX_HEAD = """\
API reference
=============

.. This page is generated by docs/_ext/marlhub_api.py; do not edit.

Every public module of marlhub, page by page in the order of the package's layers
(bottom to top: the protocol, the contract and episode mechanics, the adapters and
wrappers, vector envs, the registry, the conformance suite, the CLI). Each object
is described once, in the module that defines it; the packages that re-export it
(``marlhub``, ``marlhub.adapters.pettingzoo``, ...) list it in a table with a link,
so ``marlhub.make`` and ``marlhub.registry.default.make`` lead to the same entry.
Use the names as the packages export them: ``from marlhub.adapters.pettingzoo
import from_pettingzoo``, not the defining submodule.

"""


def write_pages(model: ApiModel, outdir: Path) -> list[str]:
    """Write ``index.rst`` and one page per area to ``outdir``; return the pages' names."""
    outdir.mkdir(parents=True, exist_ok=True)
    areas = _areas(model)
    names = []
    for area, members in areas.items():
        _write_if_changed(outdir / f"{area}.rst", page_text(model, area, members))
        names.append(area)
    table = ["   * - :doc:`{0}`\n     - {1}".format(
        a, (model.modules[a].doc.split("\n\n")[0].replace("\n", " ") if a in model.modules
            else "")) for a in areas]
    index = (INDEX_HEAD + ".. list-table::\n   :widths: 30 70\n\n" + "\n".join(table) + "\n\n"
             + ".. toctree::\n   :hidden:\n\n" + "".join(f"   {a}\n" for a in areas))
    _write_if_changed(outdir / "index.rst", index)
    for stale in outdir.glob("*.rst"):
        if stale.stem not in names and stale.stem != "index":
            stale.unlink()
    return names


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# -- Sphinx hooks -------------------------------------------------------------------------


def _on_builder_inited(app: Sphinx) -> None:
    with mock(app.config.autodoc_mock_imports):
        model = build_model()
        app.env.marlhub_api_model = model  # type: ignore[attr-defined]
        write_pages(model, Path(app.srcdir) / "api")
        for module, name in undocumented(model):
            logger.warning("marlhub API reference: %s.%s has no docstring (or #: comment)",
                           module, name, type="marlhub")
    for failure in model.failures:
        logger.warning("marlhub API reference: cannot import %s", failure, type="marlhub")


def undocumented(model: ApiModel) -> list[tuple[str, str]]:
    """Exported names with neither a docstring nor a ``#:`` comment.

    Plain constants (a string, number or bool) are exempt: autodoc shows their value.
    """
    missing = []
    for module, name in dict.fromkeys(model.canonical.values()):
        if not name:
            continue
        obj = getattr(importlib.import_module(module), name, None)
        if _object_home(obj, model.modules) == (module, name) or _wrapped_function(obj):
            documented = bool(inspect.getdoc(obj))
        elif isinstance(obj, (str, int, float, bool)) or obj is None:
            documented = True
        else:
            documented = ("", name) in ModuleAnalyzer.for_module(module).find_attr_docs()
        if not documented:
            missing.append((module, name))
    return missing


def _import_path(path: str) -> Any:
    """The object at a dotted path (module, then attributes), or raise LookupError."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except Exception:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except Exception as exc:
            raise LookupError(path) from exc
        return obj
    raise LookupError(path)


def documented_name(model: ApiModel, path: str) -> Optional[str]:
    """The documented full name of the object at ``path``, if marlhub documents it."""
    parts = path.split(".")
    for cut in range(len(parts), 1, -1):
        module, name, tail = ".".join(parts[: cut - 1]), parts[cut - 1], parts[cut:]
        if (module, name) in model.canonical:
            home = model.canonical[(module, name)]
            return ".".join([*home, *tail])
    try:
        obj = _import_path(path)
    except LookupError:
        return None
    home = _object_home(obj, model.modules)
    if home is not None:
        return ".".join(home)
    owner = _import_path(".".join(parts[:-1])) if len(parts) > 2 else None
    owner_home = _object_home(owner, model.modules)
    if owner_home is not None:  # a method or attribute of a re-exported class
        return ".".join([*owner_home, parts[-1]])
    return None


def _candidates(node: Any) -> list[str]:
    """Absolute paths a reference may mean: as written, in its class, its module, the parents."""
    target = node.get("reftarget", "").lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    found = []
    if module and cls:
        found.append(f"{module}.{cls}.{target}")
    if module:
        parts = module.split(".")
        found += [".".join(parts[:cut] + [target]) for cut in range(len(parts), 0, -1)]
    found.append(target)
    return list(dict.fromkeys(c for c in found if c.startswith(PACKAGE + ".")))


def _by_suffix(env: Any, target: str) -> Optional[str]:
    """The one documented marlhub object whose name ends with ``.target``, if exactly one."""
    suffix = "." + target.lstrip(".~")
    matches = [name for name in env.get_domain("py").objects
               if name.startswith(PACKAGE + ".") and name.endswith(suffix)]
    return matches[0] if len(matches) == 1 else None


def _on_missing_reference(app: Sphinx, env: Any, node: Any, contnode: Any) -> Any:
    if node.get("refdomain") != "py":
        return None
    model: Optional[ApiModel] = getattr(env, "marlhub_api_model", None)
    if model is None:
        return None
    homes = []
    with mock(app.config.autodoc_mock_imports):
        for candidate in _candidates(node):
            home = documented_name(model, candidate)
            if home is not None:
                homes.append(home)
    suffix_home = _by_suffix(env, node.get("reftarget", ""))
    if suffix_home is not None:
        homes.append(suffix_home)
    domain = env.get_domain("py")
    for home in dict.fromkeys(homes):
        if home not in domain.objects:
            continue
        found = domain.resolve_any_xref(env, node["refdoc"], app.builder, home,
                                        _plain(node), contnode)
        if found:
            return found[0][1]
    # Not under the mock: a name only a missing backend can build must fail as ImportError.
    if any(_internal(model, candidate) for candidate in _candidates(node)):
        return contnode  # an existing name the reference does not document: plain text
    return None


def _internal(model: ApiModel, path: str) -> bool:
    """Whether ``path`` names an existing marlhub object that no ``__all__`` exports.

    Such names (private helpers and aliases in signatures, undocumented members of
    documented classes) are shown as plain text; a name that does not exist at all
    stays a broken reference.
    """
    if any(part.startswith("_") for part in path.split(".")):
        return True  # private: may exist only for type checkers (TYPE_CHECKING)
    try:
        _import_path(path)
    except LookupError as exc:
        # A name that only a missing backend can build (HubRLlibEnv without Ray) exists.
        return isinstance(exc.__cause__, ImportError)
    module, _, name = path.rpartition(".")
    return (module, name) not in model.canonical


def _plain(node: Any) -> Any:
    """A copy of the reference node without module context (the target is absolute)."""
    copy = node.deepcopy()
    copy["py:module"] = None
    copy["py:class"] = None
    copy["refspecific"] = False
    return copy


_SIGNATURE_FIXES = [
    (re.compile(r"=\s*<factory>"), "=..."),  # dataclass default factories
    (re.compile(r"(\w+)::(\w+)"), r"\1.\2"),  # pybind's C++ names (open_spiel::Game)
]


def _on_process_signature(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                          signature: Optional[str], return_annotation: Optional[str]) -> Any:
    """Make signatures parseable as Python (else Sphinx splits them on every comma)."""
    if signature is None:
        return None
    for pattern, replacement in _SIGNATURE_FIXES:
        signature = pattern.sub(replacement, signature)
    return signature, return_annotation


def _on_process_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    """Show a private base class as the public classes it derives from."""
    public: list[Any] = []
    pending = list(bases)
    while pending:
        base = pending.pop(0)
        if getattr(base, "__name__", "").startswith("_") and hasattr(base, "__bases__"):
            pending[:0] = [b for b in base.__bases__ if b is not object]
        elif base not in public:
            public.append(base)
    bases[:] = public or [object]


_NOT_A_TYPE = re.compile(r"[\w'\]]\s+[\w']")


def _on_docstring_after_napoleon(app: Sphinx, what: str, name: str, obj: Any, options: Any,
                                 lines: list[str]) -> None:
    """Undo napoleon reading ``"Some words: more words"`` as ``type: description``.

    Google style lets an attribute's docstring start with its type and a colon;
    where the text before the colon is a phrase, not a type, it goes back in front
    of the description.
    """
    if what not in ("attribute", "data", "property"):
        return
    for index, line in enumerate(lines):
        if line.startswith(":type: ") and _NOT_A_TYPE.search(line[7:]) \
                and " or " not in line[7:]:
            phrase = line[7:]
            del lines[index]
            if index and not lines[index - 1].strip():
                del lines[index - 1]
            first = next((i for i, text in enumerate(lines) if text.strip()), None)
            if first is None:
                lines.insert(0, phrase)
            else:
                lines[first] = f"{phrase}: {lines[first].lstrip()}"
            return


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_role("marlhub-anchor", anchor_role)
    app.connect("builder-inited", _on_builder_inited)
    app.connect("missing-reference", _on_missing_reference)
    app.connect("autodoc-process-signature", _on_process_signature)
    app.connect("autodoc-process-bases", _on_process_bases)
    # napoleon converts docstrings at priority 500; this mends what it made of them.
    app.connect("autodoc-process-docstring", _on_docstring_after_napoleon, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}


__all__ = ["ApiModel", "build_model", "documented_name", "setup", "write_pages"]
