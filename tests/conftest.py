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
    for attempt in (1, 2):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
            break
        except RuntimeError:
            # Seen once in CI: Ray's GCS server, started from this busy test process,
            # never wrote its port within Ray's 30 s. Ray stops what it started; try once more.
            ray.shutdown()
            if attempt == 2:
                raise
    try:
        yield
    finally:
        ray.shutdown()
