"""The versions marlhub supports, for the tests: ids that differ, and which tests run at each.

The README's two test commands run the tests on the newest builds and on the oldest
versions marlhub supports; an env's newest version differs between them
(Gymnasium 1.1's ``Taxi-v3`` is 1.2's ``Taxi-v4``). PettingZoo ids need no helper:
``butterfly/pistonball`` (no version) is PettingZoo's spelling of the newest one.

It also says which tests the oldest-versions command runs (:data:`AT_BOTH_ENDS`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Optional

TESTS = Path(__file__).resolve().parent

#: Where each test module runs, by where it lives: a path under tests/ (a folder or a
#: module) and whether the module runs at both ends, the newest builds and the oldest
#: supported versions (True), or at the newest end only (False). The longest path that
#: contains a module decides; every module must be under one (tests/test_readme.py
#: checks). The README's oldest-versions command runs those marked True
#: (``pytest tests -m versions``: ``conftest.py`` marks them ``versions``).
#:
#: True: what the module checks depends on the versions of the backends (Gymnasium,
#: PettingZoo, OpenSpiel, SuperSuit, MPE2, VMAS, TorchRL and tensordict, grpcio, JaxMARL,
#: Jumanji, AgileRL). False: marlhub's own machinery, the same whatever their versions, or the
#: repository itself (layout, types, docs, README), which the newest end checks.
AT_BOTH_ENDS: dict[str, bool] = {
    # The adapters, their families and lockstep twins, and the learners through them.
    "adapters": True,
    # Jumanji installs at both ends: 1.1.1 beside JaxMARL's JAX, the newest beside the rest.
    "adapters/jumanji": True,
    # Families as the registry lists, resolves and suggests them.
    "registry": True,
    # The suite: the consumers' own checkers, native envs' known faults, batched VMAS.
    "conformance": True,
    "conformance/test_vector.py": False,  # copies in workers equal the env: the vector layer
    # gRPC and protobuf (grpcio 1.70 at the oldest end).
    "remote": True,
    "external": True,
    "external/test_in_process.py": False,  # simulators in threads, no gRPC: marlhub's own
    "test_tls.py": True,  # both servers over gRPC's own TLS credentials
    # The core over Gymnasium's spaces and seeding (gymnasium 1.1.1 at the oldest end).
    "envs": True,
    "episode": True,
    "contract": True,
    "wrappers": True,
    "test_core.py": True,
    "test_spaces.py": True,
    "test_convert.py": True,
    "test_rollout.py": True,
    # The examples run on the backends as a user's copy of them would.
    "examples": True,
    # marlhub's own machinery: vector envs (worker processes, shared memory, arrays) and
    # the command line's plumbing.
    "vector": False,
    # The learner bridges (SB3, PufferLib), which the oldest-versions command does not install.
    "learners": False,
    "learners/test_agilerl.py": True,  # AgileRL needs PettingZoo before 1.27: the oldest end
    "cli": False,
    "test_errors.py": False,
    "test_display.py": False,  # the HTML tables of marlhub's own objects
    "test_renamed.py": False,
    # The repository: layout, mypy and the docs (both check the newest APIs), the README.
    "test_layout.py": False,
    "test_typing.py": False,
    "test_docs.py": False,
    "test_readme.py": False,
}

#: Module names that run at the newest end only wherever they live: a benchmark script's
#: smoke test (the script runs and prints its table: marlhub's tooling, not the backends').
NEWEST_ONLY_NAMES = frozenset({"test_benchmark.py"})


def placed(path: Path) -> Optional[str]:
    """The key of :data:`AT_BOTH_ENDS` that places the test module ``path``, or None.

    Example:
        >>> placed(TESTS / "adapters" / "vmas" / "test_family.py")
        'adapters'
        >>> placed(TESTS / "conformance" / "test_vector.py")
        'conformance/test_vector.py'
    """
    try:
        parts = Path(path).resolve().relative_to(TESTS).parts
    except ValueError:
        return None
    for end in range(len(parts), 0, -1):
        key = "/".join(parts[:end])
        if key in AT_BOTH_ENDS:
            return key
    return None


@lru_cache(maxsize=None)
def at_both_ends(path: Path) -> bool:
    """Whether the oldest-versions end runs the tests of ``path`` too (see above).

    A module under tests/ that no key places runs at both ends (tests/test_readme.py fails
    until it is placed); a path outside tests/ (the package's doctests) at the newest only.

    Example:
        >>> at_both_ends(TESTS / "adapters" / "pettingzoo" / "test_learners.py")
        True
        >>> at_both_ends(TESTS / "vector" / "test_base.py")
        False
        >>> at_both_ends(TESTS / "adapters" / "torchrl" / "test_benchmark.py")
        False
    """
    if Path(path).name in NEWEST_ONLY_NAMES or not Path(path).resolve().is_relative_to(TESTS):
        return False
    key = placed(path)
    return True if key is None else AT_BOTH_ENDS[key]


def gymnasium_id(name: str) -> str:
    """The newest registered version of the Gymnasium env ``name``.

    Example:
        >>> gymnasium_id("CartPole")
        'CartPole-v1'
    """
    import gymnasium as gym

    versions = [spec.version for spec in gym.registry.values()
                if spec.name == name and spec.namespace is None and spec.version is not None]
    if not versions:
        raise LookupError(f"Gymnasium registers no env named {name!r}")
    return f"{name}-v{max(versions)}"


def kaz_dying() -> dict[str, object]:
    """Config under which knights_archers_zombies' agents die early: zombies every 2 steps.

    PettingZoo 1.27's ``knights_archers_zombies-v11`` calls the setting ``spawn_delay``;
    ``-v10`` before it, ``spawn_rate``.
    """
    import inspect

    from pettingzoo.butterfly.knights_archers_zombies.knights_archers_zombies import (
        raw_env,
    )

    takes = inspect.signature(raw_env.__init__).parameters
    return {"spawn_delay" if "spawn_delay" in takes else "spawn_rate": 2, "line_death": True}
