"""pytest's hooks for the whole repository (the tests and the package's doctests).

The package's examples are collected as doctests. An example of an adapter whose
backend is not installed stops at the backend's import with the
:class:`~marlhub.errors.MissingDependencyError` every missing backend raises (it
names the extra that installs it), or at a plain ``import torch``; such an example
is skipped with that message as the reason, as the tests' ``importorskip`` does.
Any other failure fails, and an installed backend runs every example.
"""

from __future__ import annotations

import doctest
import importlib.util
from collections.abc import Generator
from typing import Any

import pytest
from _pytest.doctest import DoctestItem

from marlhub.errors import MissingDependencyError

#: Backends an example may import itself, and the extra that installs each.
EXTRAS = {"torch": "rl", "torchrl": "torchrl", "tensordict": "torchrl", "vmas": "vmas",
          "gym": "vmas",  # the old gym package comes with VMAS
          "ray": "rllib", "pettingzoo": "pettingzoo", "pyspiel": "openspiel",
          "open_spiel": "openspiel", "supersuit": "supersuit", "mpe2": "mpe2",
          "magent2": "magent2", "grpc": "remote", "dm_env_rpc": "remote",
          "jax": "jaxmarl", "jaxmarl": "jaxmarl", "jumanji": "jumanji",
          "lbforaging": "epymarl", "rware": "epymarl",
          "momaland": "momaland", "dm_env": "dmc", "dm_control": "dmc", "shimmy": "dmc"}

#: Modules that import a backend at their top which the newest end cannot install (AgileRL
#: needs PettingZoo before 1.27): their doctests are not collected where it is missing.
collect_ignore = [path for package, path in [("agilerl", "marlhub/learners/agilerl_env.py")]
                  if importlib.util.find_spec(package) is None]


def _missing_backend(exc: BaseException) -> str:
    """The skip reason when ``exc`` says that an optional backend is missing, else ''."""
    if isinstance(exc, MissingDependencyError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError):
        top = (exc.name or "").partition(".")[0]
        if top in EXTRAS:
            return f"{exc}: install it with pip install 'marlhub[{EXTRAS[top]}]'"
    return ""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    try:
        return (yield)
    except doctest.UnexpectedException as failure:
        reason = _missing_backend(failure.exc_info[1]) if isinstance(item, DoctestItem) else ""
        if reason:
            pytest.skip(reason)
        raise
