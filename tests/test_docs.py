"""The documentation site: it builds with warnings as errors, its examples pass, it covers the API.

The site is built once per test session, as the README's docs command builds it
(``python -m sphinx -W --keep-going -b html docs ...``) but into a temporary
folder, then the doctest builder runs the examples embedded in the pages with
the same doctrees. Sphinx is required (the README's test command installs the
``docs`` extra): nothing here is skipped.
"""

from __future__ import annotations

import ast
import html.parser
import importlib
import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import marlhub
from marlhub.conformance import RULES
from marlhub.errors import MissingDependencyError

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BUILD_SECONDS = 900  # a cold build takes tens of seconds; a loaded CI machine gets slack

sys.path.insert(0, str(DOCS / "_ext"))
import marlhub_data  # noqa: E402
import marlhub_plots  # noqa: E402


def sphinx(builder: str, out: Path, doctrees: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", builder,
         "-d", str(doctrees), str(DOCS), str(out / builder)],
        capture_output=True, text=True, timeout=BUILD_SECONDS, cwd=REPO)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML site, built with -W; the build's own output is the failure message."""
    out = tmp_path_factory.mktemp("site")
    run = sphinx("html", out, out / "doctrees")
    assert run.returncode == 0, f"the docs build failed or warned:\n{run.stdout}\n{run.stderr}"
    return out


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Any]]) -> None:
        self.ids.update(value for name, value in attrs if name == "id" and value)


def ids_in(*pages: Path) -> set[str]:
    parser = _Ids()
    for page in pages:
        parser.feed(page.read_text(encoding="utf-8"))
    return parser.ids


def public_names() -> list[tuple[str, str]]:
    """``(module, name)`` of every ``__all__`` name of every public module of marlhub."""
    found = []
    modules = ["marlhub"] + [m.name for m in pkgutil.walk_packages(marlhub.__path__, "marlhub.")]
    for module in sorted(modules):
        if any(part.startswith("_") for part in module.split(".")):
            continue
        try:
            names = getattr(importlib.import_module(module), "__all__", [])
        except MissingDependencyError:  # a backend the docs build mocks (AgileRL's)
            names = _static_all(module)
        found += [(module, name) for name in names]
    return found


def _static_all(module: str) -> list[str]:
    """A module's ``__all__`` read from its source, without importing it."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def test_the_readme_builds_the_site_with_warnings_as_errors() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "python -m sphinx -W --keep-going -b html docs docs/_build/html" in readme
    assert "docs/_build/" in (REPO / ".gitignore").read_text(encoding="utf-8").split()


def test_the_site_builds_without_a_warning(site: Path) -> None:
    assert (site / "html" / "index.html").exists()


def test_the_examples_in_the_pages_pass_as_doctests(site: Path) -> None:
    run = sphinx("doctest", site, site / "doctrees")
    report = (site / "doctest" / "output.txt").read_text(encoding="utf-8")
    assert run.returncode == 0, f"{report}\n{run.stdout}\n{run.stderr}"
    summary = report[report.index("Doctest summary"):]
    assert " 0 failures in tests" in summary and "tests" in summary, summary
    tests = int(summary.split("\n")[2].split()[0])
    # Every guide's examples ran; those of the rl extra (Ray, TorchRL, VMAS) are skipped,
    # with their pages' `:skipif:`, only where it is not installed.
    heavy = ("ray", "torchrl", "vmas")
    if all(importlib.util.find_spec(name) is not None for name in heavy):
        assert tests >= 100, summary
    else:
        assert tests >= 60, summary


def test_every_public_name_has_an_anchor_in_the_api_reference(site: Path) -> None:
    ids = ids_in(*(site / "html" / "api").glob("*.html"))
    names = public_names()
    assert len(names) > 400
    missing = [f"{module}.{name}" for module, name in names if f"{module}.{name}" not in ids]
    assert not missing, f"not in the API reference: {missing}"
    modules = {module for module, _ in names}
    assert not [m for m in modules if f"module-{m}" not in ids]


def test_every_rule_id_is_an_anchor_of_the_rules_page(site: Path) -> None:
    ids = ids_in(site / "html" / "reference" / "rules.html")
    assert [rule for rule in RULES if rule not in ids] == []


def test_the_cli_reference_has_every_subcommand(site: Path) -> None:
    from marlhub.cli import build_parser

    text = (site / "html" / "reference" / "cli.html").read_text(encoding="utf-8")
    commands = [a for a in build_parser()._actions if hasattr(a, "choices") and a.choices]
    for name in commands[0].choices:
        assert f'id="cli-{name}"' in text, name


def test_the_compatibility_page_shows_the_committed_sweep(site: Path) -> None:
    sweep = json.loads((DOCS / "data" / "interop.json").read_text(encoding="utf-8"))
    text = (site / "html" / "reference" / "compatibility.html").read_text(encoding="utf-8")
    assert sweep["measured"] in text and str(sweep["machine"]["cpus"]) in text
    converted = [e["id"] for e in sweep["ids"] if "conversions" in e]
    assert f"{len(converted)} ids were converted" in text
    assert all(f">{env_id}<" in text for env_id in converted)


def _literal(text: Any) -> str:
    return f"``{text}``"


def test_a_page_says_not_measured_yet_when_the_data_is_missing(tmp_path: Path) -> None:
    assert "Not measured yet" in "\n".join(marlhub_data.compatibility_rst(None, str, _literal))
    note = "\n".join(marlhub_data.benchmark_rst("torchrl_overhead", None, str, _literal, None))
    assert "Not measured yet" in note and "--json docs/data/torchrl_overhead.json" in note
    assert "Not measured yet" in "\n".join(marlhub_plots.NOT_MEASURED_RST)
    assert marlhub_data.load_json(tmp_path / "absent.json", None) is None


def test_the_batched_benchmark_is_read_by_case_with_native_first() -> None:
    document = {
        "measured": "2026-01-01T00:00:00+00:00", "machine": {"cpus": 16, "gpu": "NVIDIA H200"},
        "command": "python benchmarks/batched_throughput.py --device cuda",
        "results": [{"scenario": "navigation", "copies": n, "contestant": name, "median": rate,
                     "ratio_to_native": rate / 100.0}
                    for n in (1024, 4096) for name, rate in (("marlhub arrays", 90.0),
                                                             ("native", 100.0))]}
    text = "\n".join(marlhub_data.benchmark_rst("batched_cuda", document, str, _literal, None))
    assert "16 CPUs, GPU NVIDIA H200" in text
    rows = [line for line in text.splitlines() if "navigation, " in line]
    assert rows == ["   * - navigation, 1,024 copies", "   * - navigation, 4,096 copies"]
    header = text.index("     - native")
    assert header < text.index("     - marlhub arrays") and "90 (**0.90**)" in text


def test_the_vector_scaling_plot_is_drawn_from_its_json(tmp_path: Path) -> None:
    document = {
        "measured": "2026-01-01T00:00:00+00:00", "machine": {"cpus": 2},
        "plots": [{"title": "mpe2/simple_spread-v3", "series": [
            {"name": "marlhub sync", "points": [{"num_envs": 1, "agent_steps_per_s": 10.0},
                                                {"num_envs": 4, "agent_steps_per_s": 35.0}]},
            {"name": "SuperSuit", "points": [{"num_envs": 4, "agent_steps_per_s": 20.0}]}]}],
    }
    panels = marlhub_plots.read_vector_scaling(document)
    marlhub_plots.plot_vector_scaling(panels, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
    table = "\n".join(marlhub_plots.scaling_rst(document, panels, "plot.png", str, _literal))
    assert "35" in table and "--" in table  # SuperSuit has no 1-copy point
    rows = [{"env": "pistonball", "copies": n, "contestant": c, "median": rate}
            for n, c, rate in ((1, "sync", 10.0), (4, "sync", 30.0), (4, "supersuit", 20.0))]
    panels = marlhub_plots.read_vector_scaling({"results": rows})  # vector_throughput.py's shape
    assert [(s["name"], s["x"], s["y"]) for s in panels[0]["series"]] == [
        ("sync", [1, 4], [10.0, 30.0]), ("supersuit", [4], [20.0])]
    with pytest.raises(ValueError, match="num_envs"):
        marlhub_plots.read_vector_scaling({"series": [{"name": "x", "points": [{"n": 1}]}]})
    with pytest.raises(ValueError, match="no 'plots'"):
        marlhub_plots.read_vector_scaling({})
