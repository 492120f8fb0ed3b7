"""The vector-env scaling plot: agent-steps/s against the number of copies, ours and the peers'.

The documentation reads ``docs/data/vector_throughput.json`` at build time,
written by ``python benchmarks/vector_throughput.py --json
docs/data/vector_throughput.json``; this module also runs alone::

    python docs/_ext/marlhub_plots.py docs/data/vector_throughput.json scaling.png

It accepts the benchmark's own shape, one row per env, copies and contestant
(a panel per env, a line per contestant through the rows' medians)::

    {"measured": "...", "machine": {...}, "command": "...", "unit": "agent-steps/s, wall time",
     "results": [{"env": "pistonball", "copies": 4, "contestant": "sync", "median": 5200.0}, ...]}

or panels spelled out (extra keys are ignored)::

    {
      "measured": "2026-11-23T12:00:00+00:00",          # when (ISO 8601)
      "machine": {"cpus": 2, "cpu": "...", "platform": "...", "python": "3.11.7",
                  "load_average": [0.5, 0.4, 0.3]},      # where
      "command": "python benchmarks/vector_throughput.py --json ...",
      "versions": {"marlhub": "0.2.0", "supersuit": "3.11.0", "ray": "2.60.0"},
      "plots": [                                         # one panel per env
        {"title": "mpe2/simple_spread-v3 (parallel, 3 agents)",
         "series": [
           {"name": "marlhub sync",  "points": [{"num_envs": 1, "agent_steps_per_s": 9000.0},
                                                {"num_envs": 8, "agent_steps_per_s": 52000.0}]},
           {"name": "marlhub async", "points": [...]},
           {"name": "SuperSuit concat_vec_envs_v1", "points": [...]},
           {"name": "RLlib VectorMultiAgentEnv", "points": [...]}]}
      ]
    }

A document with ``"series"`` at the top level (and an optional ``"title"``) is
one panel. Points may also give ``"steps_per_s"`` instead of agent-steps.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

#: What the page says when there is no data yet (the build does not fail).
NOT_MEASURED_RST = [
    ".. note::", "",
    "   **Not measured yet.** ``python benchmarks/vector_throughput.py --json "
    "docs/data/vector_throughput.json`` writes the data; the next build of this site draws",
    "   agent-steps per second against the number of copies from it (marlhub's sync and "
    "async vector envs against SuperSuit's and RLlib's), with the machine it ran on.", "",
]


def read_vector_scaling(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the panels ``[{"title", "series": [{"name", "x": [...], "y": [...]}]}]``.

    Raises:
        ValueError: the document has no panel, a series no point, or a point no
            copy count or rate (the message says which).
    """
    panels = document.get("plots")
    if panels is None and "results" in document:
        panels = _panels_of_results(document["results"])
    if panels is None and "series" in document:
        panels = [{"title": document.get("title", ""), "series": document["series"]}]
    if not panels:
        raise ValueError("no 'plots' (or top-level 'series') to draw")
    out = []
    for p, panel in enumerate(panels):
        series = []
        for s in panel.get("series") or []:
            points = sorted(s.get("points") or [], key=lambda pt: pt.get("num_envs", 0))
            if not points:
                raise ValueError(f"plot {p}: series {s.get('name')!r} has no points")
            xs, ys = [], []
            for point in points:
                rate = point.get("agent_steps_per_s", point.get("steps_per_s"))
                if not isinstance(point.get("num_envs"), int) or not isinstance(rate, (int, float)):
                    raise ValueError(f"plot {p}: series {s.get('name')!r} has a point without "
                                     f"an int 'num_envs' and a numeric 'agent_steps_per_s': "
                                     f"{point!r}")
                xs.append(point["num_envs"])
                ys.append(float(rate))
            series.append({"name": str(s.get("name", "?")), "x": xs, "y": ys})
        if not series:
            raise ValueError(f"plot {p} ({panel.get('title', '')!r}) has no series")
        out.append({"title": str(panel.get("title", "")), "series": series})
    return out


def _panels_of_results(results: Any) -> list[dict[str, Any]]:
    """``vector_throughput.py``'s rows as panels: one per env, one series per contestant."""
    if not isinstance(results, list):
        raise ValueError("'results' is not a list of rows")
    panels: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in results:
        if not isinstance(row, dict) or not {"env", "copies", "contestant", "median"} <= set(row):
            raise ValueError(f"a row of 'results' lacks env, copies, contestant or median: {row!r}")
        points = panels.setdefault(str(row["env"]), {}).setdefault(str(row["contestant"]), [])
        points.append({"num_envs": row["copies"], "agent_steps_per_s": row["median"]})
    return [{"title": env, "series": [{"name": name, "points": points}
                                      for name, points in series.items()]}
            for env, series in panels.items()]


def plot_vector_scaling(panels: list[dict[str, Any]], path: Path) -> None:
    """Draw the panels side by side (log-log) into the PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 3.8), squeeze=False)
    names = list(dict.fromkeys(s["name"] for panel in panels for s in panel["series"]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, panel in zip(axes[0], panels):
        for s in panel["series"]:  # one colour per contestant across the panels
            ax.plot(s["x"], s["y"], marker="o", label=s["name"],
                    color=colours[names.index(s["name"]) % len(colours)])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        copies = sorted({x for s in panel["series"] for x in s["x"]})
        ax.set_xticks(copies, [str(c) for c in copies])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("copies (num_envs)")
        ax.set_ylabel("agent-steps / s")
        ax.set_title(panel["title"], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling_rst(document: dict[str, Any], panels: list[dict[str, Any]], image: str,
                escape: Callable[[Any], str], literal: Callable[[Any], str]) -> list[str]:
    """The figure and a table of the same numbers (for readers who do not see the plot)."""
    from marlhub_data import measured_line

    lines = [f".. figure:: {image}", "   :alt: agent-steps per second against copies", "",
             f"   {measured_line(document, escape)}", ""]
    for panel in panels:
        copies = sorted({x for s in panel["series"] for x in s["x"]})
        lines += [f"**{escape(panel['title'])}** (agent-steps/s)", "", ".. list-table::",
                  "   :header-rows: 1", ""]
        lines += ["   * - copies"] + [f"     - {c}" for c in copies]
        for s in panel["series"]:
            rates = dict(zip(s["x"], s["y"]))
            lines += [f"   * - {escape(s['name'])}"]
            lines += [f"     - {rates[c]:,.0f}" if c in rates else "     - --" for c in copies]
        lines.append("")
    return lines


def main(argv: list[str]) -> int:
    """``marlhub_plots.py DATA.json OUT.png``: draw the plot outside the docs build."""
    import json

    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    panels = read_vector_scaling(json.loads(Path(argv[0]).read_text(encoding="utf-8")))
    plot_vector_scaling(panels, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
