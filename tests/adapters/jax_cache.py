"""JAX's persistent compilation cache in a temporary folder, for the JAX backends' tests.

The JaxMARL and Jumanji tests build the same envs again and again (the hub's, the
native twin's, a batch's, and the suite's fresh processes that replay an episode),
and JAX compiles each env object's functions anew in each process; with the cache
on, a computation compiled once in the run is read back instead (the folder starts
empty: nothing from another run is used). What runs is the same executable.
Each backend's ``conftest.py`` turns it on for its folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

#: JAX's settings, each also an environment variable (upper case) for the child processes.
SETTINGS: dict[str, object] = {
    "jax_persistent_cache_min_compile_time_secs": 0.0,  # every computation, not only slow ones
    "jax_persistent_cache_min_entry_size_bytes": 0,
}


def compilation_cache(folder: Path) -> Iterator[None]:
    """Turn JAX's persistent compilation cache on in ``folder`` (and for child processes)
    while the generator is suspended; restore JAX's settings and the environment after."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache as cache

    settings = {"jax_compilation_cache_dir": str(folder), **SETTINGS}
    before = {name: getattr(jax.config, name) for name in settings}
    environ = {name.upper(): os.environ.get(name.upper()) for name in settings}
    cache.reset_cache()  # read the settings afresh at the next compile
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
        cache.reset_cache()
