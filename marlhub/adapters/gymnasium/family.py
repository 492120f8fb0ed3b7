"""The ``gymnasium/`` family: every registered Gymnasium env, as independent copies.

``gymnasium/CartPole-v1`` is ``make_multi_agent("CartPole-v1")(config)``:
config ``num_agents`` (default 1) copies, agents ``0 .. num_agents - 1``, copy
``i`` reset with ``seed + i``; every other config key goes to
``gymnasium.make`` (``max_episode_steps``, ``render_mode``, the env's own
keyword arguments such as FrozenLake's ``is_slippery``), and one it rejects
raises :class:`~marlhub.errors.ConfigError` with the accepted keys. Ids are
Gymnasium's own, namespaces included (``gymnasium/phys2d/CartPole-v1``);
:meth:`GymnasiumFamily.ids` lists ``gymnasium.registry``, so envs that other
packages register on import (``ale_py``, say) appear once those are imported.

Example:
    >>> family = GymnasiumFamily()
    >>> env = family.make("FrozenLake-v1", EnvContext({"num_agents": 2, "is_slippery": False}))
    >>> env.possible_agents
    [0, 1]
    >>> dict(family.ids())["gymnasium/CartPole-v1"]
    'CartPoleEnv (gymnasium.envs.classic_control.cartpole); config num_agents + gymnasium.make keys'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import gymnasium as gym

from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.errors import UnknownEnvError, closest

__all__ = ["GymnasiumFamily"]


class GymnasiumFamily:
    """Resolve ``gymnasium/<id>`` through ``gymnasium.make`` and ``make_multi_agent``."""

    name = "gymnasium"
    description = (
        "Gymnasium envs as independent copies (gymnasium/CartPole-v1); config: num_agents, "
        "plus gymnasium.make keys"
    )

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every env in ``gymnasium.registry`` that can load.

        Left out: the ids Gymnasium keeps only to say where they went (MuJoCo's v2 and
        v3 envs, moved to gymnasium-robotics; ``GymV21Environment`` and
        ``GymV26Environment``, moved to Shimmy): their entry point only raises that.
        Making one still says so.
        """
        for env_id, spec in sorted(gym.registry.items()):
            if not _moved(spec):
                yield f"{self.name}/{env_id}", _describe(spec)

    def make(self, rest: str, config: EnvContext) -> Any:
        """Build ``gymnasium/<rest>`` with ``config``.

        Raises:
            UnknownEnvError: Gymnasium has no env ``rest`` (with close matches).
            ConfigError: ``num_agents`` is not an integer >= 1, or
                ``gymnasium.make`` rejects a key.
        """
        from marlhub.adapters.gymnasium import make_multi_agent

        self._require_known(rest)
        return make_multi_agent(rest)(config)

    def lockstep(
        self, rest: str, config: EnvContext, *, episodes: int, seed: int, max_steps: int
    ) -> list[Finding]:
        """Compare ``gymnasium/<rest>`` with native Gymnasium copies, step by step.

        See :func:`marlhub.adapters.gymnasium.compare_with_native`.
        """
        from marlhub.adapters.gymnasium import compare_with_native

        self._require_known(rest)
        return compare_with_native(rest, config, episodes=episodes, seed=seed, max_steps=max_steps)

    def _require_known(self, rest: str) -> None:
        if rest not in gym.registry:
            prefix = self.name + "/"
            raise UnknownEnvError(
                prefix + rest, [prefix + i for i in closest(rest, gym.registry)],
                "Gymnasium has no env of that id.",
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}/...>"


def _moved(spec: Any) -> bool:
    """Tell whether a spec's entry point only raises that the env moved elsewhere."""
    name = getattr(spec.entry_point, "__name__", "")
    return not isinstance(spec.entry_point, str) and name.startswith("_raise")


def _describe(spec: Any) -> str:
    entry = spec.entry_point
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        where = f"{attr} ({module})" if attr else module
    else:
        where = getattr(entry, "__qualname__", type(entry).__name__)
    return f"{where}; config num_agents + gymnasium.make keys"
