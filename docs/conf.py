"""Sphinx configuration of marlhub's documentation site.

Build (offline; README.md has the same line)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The generated parts come from the code and from committed data, at build time:
``docs/_ext/marlhub_api.py`` writes the API reference (``docs/api/``, git-ignored)
and ``docs/_ext/marlhub_pages.py`` renders the rules, the CLI reference, the
catalogue, the compatibility table and the benchmark tables and plot
(``docs/data/*.json``, written by the scripts in ``benchmarks/``).
"""

from __future__ import annotations

import doctest
import importlib.util
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))

import marlhub  # noqa: E402

project = "marlhub"
author = "the marlhub authors"
copyright = "the marlhub authors, Apache-2.0"  # noqa: A001  (Sphinx's name)
release = marlhub.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.viewcode",
    "marlhub_api",
    "marlhub_pages",
    "marlhub_notebook",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]
html_css_files = ["marlhub.css"]
html_title = f"marlhub {release}"
html_theme = "furo" if importlib.util.find_spec("furo") else "alabaster"
html_last_updated_fmt = None
html_copy_source = False
language = "en"

# Every reference to a marlhub name must resolve (a broken one fails the build under -W).
# Names of other libraries are not linked: the build is offline, without intersphinx.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(gymnasium|gym|numpy|np|torch|torchrl|tensordict|ray|pyspiel|open_spiel|"
               r"pettingzoo|supersuit|vmas|mpe2|magent2|grpc|dm_env_rpc|dm_env|shimmy|"
               r"stable_baselines3|sb3_contrib|pufferlib|skrl|tianshou|agilerl|"
               r"argparse|dataclasses|enum|pathlib|types|concurrent|multiprocessing|"
               r"collections|typing_extensions|os|io|json|logging|subprocess|warnings|abc|"
               r"functools|contextlib|inspect|importlib|threading|socket|queue|random|"
               r"xml|tracemalloc|signal|difflib|numbers|datetime|weakref|copy|pickle|fnmatch)"
               r"(\..*)?"),
]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
autodoc_preserve_defaults = True
autodoc_default_options = {"exclude-members": "__weakref__, __dict__, __module__"}
# A backend that is not installed is stood in for by a mock, so the reference builds
# with only the `all` extra; CI installs every backend and mocks nothing.
OPTIONAL_BACKENDS = ["ray", "torch", "torchrl", "tensordict", "vmas", "pyspiel", "open_spiel",
                     "pettingzoo", "supersuit", "mpe2", "magent2", "grpc", "dm_env_rpc",
                     "stable_baselines3", "pufferlib", "skrl", "agilerl"]
autodoc_mock_imports = [name for name in OPTIONAL_BACKENDS
                        if importlib.util.find_spec(name) is None]

napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = False
napoleon_use_rtype = False
napoleon_attr_annotations = True

# Only the pages' explicit `.. doctest::` / `.. testcode::` blocks run under the doctest
# builder; the docstrings' examples are run by pytest (--doctest-modules) already.
doctest_test_doctest_blocks = ""
doctest_default_flags = (doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
                         | doctest.DONT_ACCEPT_TRUE_FOR_1)
# The pages' examples of the heavy extras (rl: Ray, TorchRL, VMAS) are skipped where
# those are not installed (`:skipif: "ray" in MISSING_BACKENDS`), as pytest skips their tests.
doctest_global_setup = f"""
import importlib.util
import pathlib
import warnings
warnings.simplefilter("ignore")  # the backends' own deprecation and precision notes
REPO = pathlib.Path({str(DOCS.parent)!r})
MISSING_BACKENDS = {{name for name in ("ray", "torchrl", "vmas", "jaxmarl", "jumanji",
                                         "dm_control")
                    if importlib.util.find_spec(name) is None}}
"""
os.environ.setdefault("RAY_DISABLE_IMPORT_WARNING", "1")
