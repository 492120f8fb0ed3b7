"""Ids that differ between the versions marlhub supports, for tests that run on each.

The README's two test commands run the tests on the newest builds and on the oldest
versions marlhub supports; an env's newest version differs between them
(Gymnasium 1.1's ``Taxi-v3`` is 1.2's ``Taxi-v4``). PettingZoo ids need no helper:
``butterfly/pistonball`` (no version) is PettingZoo's spelling of the newest one.
"""

from __future__ import annotations


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
