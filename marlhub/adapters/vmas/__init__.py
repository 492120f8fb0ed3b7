"""VMAS -> hub: vectorized multi-agent simulator scenarios as hub envs, and the ``vmas/`` family.

* :func:`from_vmas` gives a VMAS ``Environment`` of one copy (``vmas.make_env(...,
  num_envs=1)``) as a :class:`~marlhub.adapters.vmas.adapter.VmasHubEnv`, stepped
  through VMAS directly (``adapter.py``).
* The ``vmas/`` registry family (``family.py``) lists VMAS's own scenario
  catalogue (``vmas/balance``, ``vmas/navigation``, ``vmas/simple_spread``...) and
  passes the config to ``vmas.make_env``; ``marlhub check 'vmas/*'
  --against-native`` compares each with a native VMAS env (``lockstep.py``).
* TorchRL's ``VmasEnv`` reaches the same adapter through
  :func:`marlhub.adapters.torchrl.from_torchrl`.

Importing this package imports neither VMAS nor torch (pip extra ``vmas``).

Example:
    >>> import marlhub
    >>> env = marlhub.make("vmas/navigation", {"n_agents": 2, "max_steps": 5})
    >>> type(env).__name__, env.possible_agents
    ('VmasHubEnv', ['agent_0', 'agent_1'])
    >>> is_vmas_env(env), is_vmas_env(env.vmas_env)
    (False, True)
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.backends import derives_from, import_backend

__all__ = ["from_vmas", "is_vmas_env"]

_VMAS_BASE = ("vmas.simulator.environment.environment", "Environment")


def is_vmas_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a VMAS ``Environment`` (never imports VMAS).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_vmas_env(TicTacToe())
        False
    """
    return derives_from(obj, [_VMAS_BASE])


def from_vmas(env: Any) -> Any:
    """Return a VMAS ``Environment`` of one copy as a hub env (``VmasHubEnv``).

    Args:
        env: ``vmas.make_env(scenario, num_envs=1, ...)`` (no ``wrapper``).

    Raises:
        ConfigError: ``num_envs`` is not 1.
        MissingDependencyError: VMAS is not installed.
    """
    import_backend("vmas", package="vmas", extra="vmas", feature="from_vmas()",
                   provides=("torch",))
    return importlib.import_module("marlhub.adapters.vmas.adapter").VmasHubEnv(env)
