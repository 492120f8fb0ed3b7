"""The example notebook (make -> check -> convert -> train -> plot) runs in a real Jupyter kernel.

``nbclient`` starts an IPython kernel (``ipykernel``) in a process of its own and runs
every cell in order; the test reads what Jupyter would show: the HTML tables of the env,
the report, the view and the vector env, and the plot of the returns.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
pytest.importorskip("sb3_contrib")
pytest.importorskip("matplotlib")

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "notebook_make_check_train.ipynb"


def test_the_notebook_runs_in_a_kernel_and_shows_tables_and_a_plot(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code")
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}},
                                     allow_errors=False)
    client.execute()  # raises CellExecutionError on the first cell that fails
    outputs = [cell.outputs for cell in notebook.cells if cell.cell_type == "code"]
    shown = [out["data"] for cell in outputs for out in cell if "data" in out]
    pages = [data["text/html"] for data in shown if "text/html" in data]
    assert any("Traffic: 5 agents" in page for page in pages)  # the env
    assert any("PASS" in page and "traffic" in page for page in pages)  # the report
    assert any("PettingZoo ParallelEnv view of Traffic" in page for page in pages)
    assert any("SyncVectorMultiAgentEnv(traffic, num_envs=4)" in page for page in pages)
    episodes = [int(data["text/plain"]) for data in shown
                if data.get("text/plain", "").isdigit()]
    assert episodes and episodes[0] > 0  # the monitor recorded agent episodes
    assert any("image/png" in data for data in shown)  # the plot
