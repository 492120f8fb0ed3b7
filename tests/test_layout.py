"""The package keeps its architecture: layers, no import circles, private names, sizes, public
names, mirrored tests.

The layers, bottom to top (DESIGN.md, "Layers and layout"); a module imports
only from its own layer or below, function-local imports included:

1. the protocol, errors, spaces, ``EnvContext``, backends, the version;
2. the contract (rules, findings, checks, comparison) and the episode mechanics;
3. adapters, hub -> hub wrappers and the reference envs;
4. vector envs, and external simulators (whose learner's side is a vector env);
5. the registry;
6. conformance, convert, rollout, remote (serving a registry id), the learner bridges;
7. the CLI; and the package ``marlhub`` itself re-exports from every layer.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "marlhub"

#: Module prefix -> layer; the longest matching prefix wins.
LAYERS: dict[str, int] = {
    "marlhub.core": 1,
    "marlhub.errors": 1,
    "marlhub.spaces": 1,
    "marlhub.rewards": 1,
    "marlhub.context": 1,
    "marlhub.display": 1,
    "marlhub.backends": 1,
    "marlhub.version": 1,
    "marlhub.tls": 1,
    "marlhub._renamed": 1,
    "marlhub.contract": 2,
    "marlhub.episode": 2,
    "marlhub.adapters": 3,
    "marlhub.wrappers": 3,
    "marlhub.envs": 3,
    "marlhub.vector": 4,
    "marlhub.external": 4,
    "marlhub.registry": 5,
    "marlhub.conformance": 6,
    "marlhub.convert": 6,
    "marlhub.rollout": 6,
    "marlhub.remote": 6,
    "marlhub.learners": 6,
    "marlhub.cli": 7,
    "marlhub": 8,
}

#: The one upward reference that is allowed: names that moved up a layer in 0.2,
#: forwarded by string from their old home for code written against 0.1.0.
MOVED_UP = {("marlhub.adapters.rllib", "marlhub.registry.ray")}
#: Envs handed up by module name: ``from_torchrl`` of a batched TorchRL env returns a vector
#: env (DESIGN.md section 7: batched simulators are vector envs), which the vector layer makes.
#: (``marlhub._renamed`` forwards the module names of 0.1, its docstring shows one.)
HANDED_UP = {("marlhub.adapters.torchrl", "marlhub.vector.sources.batched"),
             ("marlhub._renamed", "marlhub.adapters.groups")}

MAX_MODULE_LINES = 500
MAX_FUNCTION_CODE_LINES = 60


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best = max((prefix for prefix in LAYERS
                if module == prefix or module.startswith(prefix + ".")), key=len)
    return LAYERS[best]


def imports_of(path: Path) -> list[tuple[str, Optional[str], int]]:
    """``(module, imported name or None, line)`` of every marlhub import in the file."""
    tree = ast.parse(path.read_text())
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name.startswith("marlhub")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("marlhub"):
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.append((sub, None, node.lineno) if sub in MODULES
                                 else (base, alias.name, node.lineno))
    return found


def test_the_layer_table_covers_every_module() -> None:
    assert all(layer_of(m) for m in MODULES)
    assert layer_of("marlhub.adapters.pettingzoo.view") == 3


def test_no_module_imports_a_higher_layer() -> None:
    violations = []
    for importer, path in MODULES.items():
        for imported, _, line in imports_of(path):
            if layer_of(imported) > layer_of(importer):
                violations.append(f"{path.relative_to(REPO)}:{line}: {importer} (layer "
                                  f"{layer_of(importer)}) imports {imported} (layer "
                                  f"{layer_of(imported)})")
    assert not violations, "\n".join(violations)


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {marlhub module it imports: first line}, from every import in the file
    (function-local and ``if TYPE_CHECKING:`` ones too). A package's ``__init__`` importing
    its own submodules (one level down) re-exports them; those edges are left out."""
    graph: dict[str, dict[str, int]] = {}
    for importer, path in MODULES.items():
        package = path.name == "__init__.py"
        edges = graph.setdefault(importer, {})
        for imported, _, line in imports_of(path):
            own = package and imported.rpartition(".")[0] == importer
            if imported not in MODULES or imported == importer or own:
                continue
            edges[imported] = min(line, edges.get(imported, line))
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative),
    each sorted, in sorted order: the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c not in index or c in on_stack), None)
            if child is not None and child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
                continue
            if child is not None:
                low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def test_the_circle_finder_finds_loops_and_only_loops() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1, "d": 1}, "d": {"e": 1}, "e": {"d": 1},
             "f": {"a": 1}}
    assert strongly_connected(graph) == [["a", "b", "c"], ["d", "e"]]
    assert strongly_connected({"a": {"b": 1}, "b": {}}) == []


def test_no_modules_import_each_other() -> None:
    graph = import_graph()
    circles = []
    for circle in strongly_connected(graph):
        edges = [f"    {MODULES[m].relative_to(REPO)}:{graph[m][t]}: {m} imports {t}"
                 for m in circle for t in sorted(graph[m]) if t in circle]
        circles.append(f"{', '.join(circle)}:\n" + "\n".join(edges))
    assert not circles, ("modules that import each other, directly or in a loop (a lower "
                         "module, an interface both import, or one module for what is one "
                         "class):\n" + "\n".join(circles))


def test_modules_named_by_string_are_below_or_handed_up() -> None:
    named = re.compile(r"""import_module\(\s*["'](marlhub[\w.]*)["']""")
    for importer, path in MODULES.items():
        for target in named.findall(path.read_text()):
            if layer_of(target) > layer_of(importer):
                assert (importer, target) in HANDED_UP, f"{importer} names {target}"
    torchrl = importlib.import_module("marlhub.adapters.torchrl")
    assert ("marlhub.adapters.torchrl", torchrl.BATCHED_VECTOR_MODULE) in HANDED_UP


def test_moved_names_are_the_only_upward_references() -> None:
    rllib = importlib.import_module("marlhub.adapters.rllib")
    for name, target in rllib.MOVED_NAMES.items():
        assert ("marlhub.adapters.rllib", target) in MOVED_UP
        assert getattr(rllib, name) is getattr(importlib.import_module(target), name)


def _private_owner(module: str, name: Optional[str]) -> Optional[str]:
    """The package a private module or name belongs to, or None when nothing is private."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    if name and name.startswith("_") and not name.startswith("__"):
        return module if (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists() \
            else module.rpartition(".")[0]
    return None


def test_private_names_stay_inside_their_subpackage() -> None:
    violations = []
    for importer, path in MODULES.items():
        home = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for imported, name, line in imports_of(path):
            owner = _private_owner(imported, name)
            if owner is not None and home != owner:
                what = f"{imported}.{name}" if name else imported
                violations.append(f"{path.relative_to(REPO)}:{line}: imports the private {what}")
    assert not violations, "\n".join(violations)


def test_no_module_is_over_500_lines() -> None:
    long = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in long.items() if n > MAX_MODULE_LINES} == {}


def _code_lines(source: list[str], node: ast.AST) -> int:
    body = getattr(node, "body", [])
    doc = None
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = (body[0].lineno, body[0].end_lineno)
    count = 0
    for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        text = source[number - 1].strip()
        if text and not text.startswith("#") and not (doc and doc[0] <= number <= doc[1]):
            count += 1
    return count


def test_no_function_is_over_60_lines_of_code() -> None:
    long = []
    for module, path in MODULES.items():
        source = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(source))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = _code_lines(source, node)
                if lines > MAX_FUNCTION_CODE_LINES:
                    long.append(f"{module}.{node.name}: {lines}")
    assert not long, long


def _backend_missing(exc: ImportError) -> bool:
    return type(exc).__name__ == "MissingDependencyError"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_all_name_resolves(module: str) -> None:
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        if _backend_missing(exc):
            pytest.skip(str(exc))
        raise
    for name in getattr(mod, "__all__", ()):
        try:
            getattr(mod, name)
        except ImportError as exc:  # a lazily imported backend
            if not _backend_missing(exc):
                raise


OLD_NAMES: dict[str, list[str]] = json.loads((REPO / "tests/data/public_names_0_1_0.json").read_text())


@pytest.mark.parametrize("module", sorted(m for m in OLD_NAMES if "._" not in m))
def test_public_names_of_0_1_0_still_import_from_their_old_paths(module: str) -> None:
    mod = importlib.import_module(module)
    missing = []
    for name in OLD_NAMES[module]:
        try:
            getattr(mod, name)
        except ImportError as exc:
            if not _backend_missing(exc):
                raise
        except AttributeError:
            missing.append(name)
    assert not missing, f"{module} lost {missing}"


def _import_alone(module: str) -> tuple[str, int, str]:
    run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                         text=True, timeout=120, cwd=REPO)
    return module, run.returncode, run.stderr.strip().splitlines()[-1:] and run.stderr.strip()


def test_every_module_imports_on_its_own_in_a_fresh_interpreter() -> None:
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(_import_alone, sorted(MODULES)))
    failed = [f"{m}: {err.splitlines()[-1]}" for m, code, err in results
              if code and "MissingDependencyError" not in err]
    assert not failed, "\n".join(failed)


def test_an_adapter_imported_at_the_top_of_adapters_init_does_not_break_import_marlhub(
        tmp_path: Path) -> None:
    # 0.1.0 failed with a circular import as soon as adapters/__init__.py imported an adapter.
    copy = tmp_path / "marlhub"
    subprocess.run(["cp", "-r", str(PACKAGE), str(copy)], check=True)
    init = copy / "adapters" / "__init__.py"
    lines = "".join(f"from marlhub.adapters.{api} import from_{api}  # noqa: F401\n"
                    for api in ("pettingzoo", "openspiel", "gymnasium", "rllib"))
    text = init.read_text()
    future = "from __future__ import annotations\n"
    init.write_text(text.replace(future, future + lines, 1))
    run = subprocess.run([sys.executable, "-c", "import marlhub; print(marlhub.make('traffic'))"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr


def test_tests_mirror_the_package() -> None:
    packages = {module_name(p.parent) for p in PACKAGE.rglob("__init__.py")}
    test_dirs = {p.parent for p in (REPO / "tests").rglob("test_*.py")}
    for directory in test_dirs:
        mirrored = "marlhub" + "".join("." + part for part in
                                       directory.relative_to(REPO / "tests").parts)
        assert mirrored in packages or mirrored == "marlhub.examples", directory
    untested = [p for p in packages - {"marlhub"}
                if not (REPO / "tests" / Path(*p.split(".")[1:])).is_dir()]
    assert not untested, f"packages without a tests/ folder: {untested}"
