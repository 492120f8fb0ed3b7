"""``.. marlhub-notebook:: PATH``: a Jupyter notebook of ``examples/`` as a page of the docs.

Its markdown cells become text (headings as rubrics; ``# Title`` is left to the page),
its code cells Python blocks, in order. The notebook is stored without outputs (the
tests run it in a kernel: ``tests/examples/test_notebook.py``), so the page shows the
code as a reader runs it. Only the markdown the examples use is read: headings,
paragraphs, inline code and links; anything else stays as it is written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def markdown_to_rst(text: str) -> list[str]:
    """The reST lines of a markdown cell (headings -> rubrics, `code` -> ``code``)."""
    lines: list[str] = []
    for line in text.splitlines():
        heading = re.match(r"^(#+)\s+(.*)$", line)
        if heading:
            if len(heading.group(1)) > 1:  # the page's own title stands for "# ..."
                lines += [f".. rubric:: {heading.group(2)}", ""]
            continue
        line = re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", line)
        line = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"`\1 <\2>`__", line)
        lines.append(line)
    return lines + [""]


class NotebookDirective(SphinxDirective):
    """Renders the notebook at the path given (relative to the page's file)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        path = (Path(self.env.doc2path(self.env.docname)).parent / self.arguments[0]).resolve()
        self.env.note_dependency(str(path))
        notebook = json.loads(path.read_text(encoding="utf-8"))
        out: list[nodes.Node] = []
        for cell in notebook["cells"]:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) \
                else cell["source"]
            if cell["cell_type"] == "markdown":
                container = nodes.container()
                self.state.nested_parse(StringList(markdown_to_rst(source)), self.content_offset,
                                        container)
                out += container.children
            elif cell["cell_type"] == "code":
                block = nodes.literal_block(source, source)
                block["language"] = "python"
                out.append(block)
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("marlhub-notebook", NotebookDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
