"""marlhub/ is mypy clean under the [tool.mypy] settings of pyproject.toml (STYLE.md, "Types")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

REPO = Path(__file__).resolve().parents[1]


def test_mypy_reports_no_errors_on_the_package() -> None:
    # From the repo root, so mypy reads pyproject.toml. Its incremental cache
    # (.mypy_cache, git-ignored) makes repeat runs take well under a second; a cold run ~7 s.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "marlhub"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"mypy marlhub failed (exit {result.returncode}):\n{output}"
    assert "Success: no issues found" in output, output
