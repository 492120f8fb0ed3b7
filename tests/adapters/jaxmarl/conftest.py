"""JAX's persistent compilation cache for the JaxMARL tests, in a temporary folder.

The tests build the same envs again and again (the hub's, the native twin's, a batch's,
and the suite's fresh processes that replay an episode), and JAX compiles each env
object's functions anew in each process; with the cache on, a computation compiled once
in the run is read back instead (the folder starts empty: nothing from another run is
used). It cuts this folder's time by about a third; what runs is the same executable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

#: JAX's settings, each also an environment variable (upper case) for the child processes.
SETTINGS: dict[str, object] = {
    "jax_persistent_cache_min_compile_time_secs": 0.0,  # every computation, not only slow ones
    "jax_persistent_cache_min_entry_size_bytes": 0,
}


@pytest.fixture(scope="package", autouse=True)
def _compilation_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    jax = pytest.importorskip("jax")
    from jax.experimental.compilation_cache import compilation_cache

    settings = {"jax_compilation_cache_dir": str(tmp_path_factory.mktemp("jax_cache")),
                **SETTINGS}
    before = {name: getattr(jax.config, name) for name in settings}
    environ = {name.upper(): os.environ.get(name.upper()) for name in settings}
    compilation_cache.reset_cache()  # read the settings afresh at the next compile
    for name, value in settings.items():
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)
    try:
        yield
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        for variable, old in environ.items():
            if old is None:
                os.environ.pop(variable, None)
            else:
                os.environ[variable] = old
        compilation_cache.reset_cache()
