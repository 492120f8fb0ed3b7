"""Fixtures shared across test folders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[None]:
    """Ray with 2 CPUs, no dashboard, for the module (or the instance already running).

    Tests that use it train with RLlib; they import Ray (or skip) themselves.
    """
    import ray

    if ray.is_initialized():
        yield
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()
