"""Fixtures shared across test folders, and the ``versions`` mark of the oldest-versions end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.versions import at_both_ends


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "versions: the outcome depends on the backends' versions, so the README's "
        "oldest-versions command runs it too (set by where the test lives: tests/versions.py)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``versions`` the tests that the oldest-versions end runs too, by where they live.

    ``tests/versions.py`` (``AT_BOTH_ENDS``) places every module; the README's
    oldest-versions command runs ``pytest tests -m versions``, the newest end everything.
    """
    for item in items:
        if at_both_ends(item.path):
            item.add_marker(pytest.mark.versions)


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
