"""Jumanji -> hub: Jumanji's multi-agent JAX envs as hub envs, batched under ``jax.vmap``.

* :func:`from_jumanji` gives a multi-agent Jumanji env (``jumanji.make(...)``:
  RobotWarehouse, LevelBasedForaging, Cleaner, Connector, MMST, SearchAndRescue) as a
  :class:`~marlhub.adapters.jumanji.adapter.JumanjiHubEnv` (``adapter.py``); what is
  multi-agent, and each agent's spaces and values, are read from the env's specs
  (``specs.py``); its keys are derived as ``functions.py`` says.
* The ``jumanji/`` registry family (``family.py``) lists the multi-agent envs of
  Jumanji's own registry (``jumanji/RobotWarehouse-v0``, ``jumanji/Cleaner-v0`` ...),
  each env made once per name and config (``natives.py``);
  ``marlhub.make_vec("jumanji/<env>", N)`` is ONE batch of ``N`` copies under
  ``jax.vmap`` and ``jit`` (``batched.py``); ``--against-native`` compares with
  Jumanji's own ``reset`` and ``step`` (``lockstep.py``).

Jumanji runs on JAX (pip extra ``jumanji``); importing this package imports neither.

Example:
    >>> import marlhub
    >>> env = marlhub.make("jumanji/Cleaner-v0")
    >>> type(env).__name__, env.possible_agents
    ('JumanjiHubEnv', ['agent_0', 'agent_1', 'agent_2'])
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.backends import derives_from, import_backend

__all__ = ["from_jumanji", "is_jumanji_env"]

_JUMANJI_BASE = ("jumanji.env", "Environment")


def is_jumanji_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a Jumanji ``Environment`` (never imports Jumanji).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_jumanji_env(TicTacToe())
        False
    """
    return derives_from(obj, [_JUMANJI_BASE])


def from_jumanji(env: Any) -> Any:
    """Return a multi-agent Jumanji env as a hub env (``JumanjiHubEnv``).

    Raises:
        MissingDependencyError: Jumanji is not installed.
        ConfigError: ``env`` is a single-agent env (its specs have no agent dimension).
    """
    import_jumanji("from_jumanji()")
    return importlib.import_module("marlhub.adapters.jumanji.adapter").JumanjiHubEnv(env)


def import_jumanji(feature: str) -> Any:
    """Import Jumanji for ``feature``, or raise MissingDependencyError naming the extra."""
    return import_backend("jumanji", package="jumanji", extra="jumanji", feature=feature,
                          provides=("jax",))
