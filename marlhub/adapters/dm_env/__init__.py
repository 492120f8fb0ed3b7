"""Multi-player dm_env -> hub: dm_control's soccer and other dm_envs of lists per player.

* :func:`from_dm_env` gives a ``dm_env.Environment`` whose specs, actions and
  ``TimeStep`` values are lists with one entry per player (dm_control's
  ``soccer.load(team_size=2)``) as a
  :class:`~marlhub.adapters.dm_env.adapter.DmEnvHubEnv` (``adapter.py``), its specs
  read as gymnasium spaces (``specs.py``) and ``reset(seed=...)`` reaching the env's
  own random state (``seeding.py``).
* The ``dmc_soccer/`` registry family (``family.py``): ``dmc_soccer/2vs2`` is
  ``soccer.load(team_size=2, ...)``, its config checked against ``soccer.load``'s
  signature; ``--against-native`` compares it with Shimmy's
  ``DmControlMultiAgentCompatibilityV0`` over another copy (``lockstep.py``).

Single-agent dm_envs are Shimmy's (``DmControlCompatibilityV0``, a Gymnasium env) and
reach the hub through :func:`marlhub.adapters.gymnasium.from_gymnasium`; dm_env_rpc's
``DmEnvAdaptor`` is the ``remote`` API's. Importing this package imports neither dm_env
nor dm_control (pip extra ``dmc``).

Example:
    >>> from dm_control.locomotion import soccer
    >>> env = from_dm_env(soccer.load(team_size=1, time_limit=1.0))
    >>> env.possible_agents
    ['player_0', 'player_1']
    >>> sorted(env.get_observation_space("player_0"))[:3]
    ['ball_ego_angular_velocity', 'ball_ego_linear_velocity', 'ball_ego_position']
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Callable, Optional, Union

from marlhub.backends import derives_from, import_backend
from marlhub.core import AgentID

__all__ = ["compare_with_native", "from_dm_env", "is_dm_env"]

_DM_ENV_BASE = ("dm_env._environment", "Environment")
#: dm_env_rpc's adaptor is a dm_env too, of one agent: the ``remote`` API takes it.
_RPC_ADAPTOR = ("dm_env_rpc.v1.dm_env_adaptor", "DmEnvAdaptor")


def is_dm_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a ``dm_env.Environment`` (not dm_env_rpc's); never imports dm_env.

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_dm_env(TicTacToe())
        False
    """
    return derives_from(obj, [_DM_ENV_BASE]) and not derives_from(obj, [_RPC_ADAPTOR])


def from_dm_env(env: Any, *, agent_ids: Optional[Sequence[AgentID]] = None,
                reseed: Union[str, Callable[[Any, int], None], None] = "auto") -> Any:
    """Return a multi-player dm_env as a hub env (``DmEnvHubEnv``).

    Args:
        env: a ``dm_env.Environment`` whose ``observation_spec()`` and
            ``action_spec()`` are lists with one entry per player.
        agent_ids: one id per player; default ``player_0`` ... (Shimmy's names).
        reseed: how ``reset(seed=s)`` seeds the env: ``"auto"`` (dm_control's
            envs: their own ``RandomState``, in place), ``None`` (the env takes no
            seed) or ``function(env, seed)``.

    Raises:
        ConfigError: a single-agent env (its ``action_spec()`` is no list), specs
            without a gymnasium space, bad ``agent_ids``, or ``reseed="auto"`` for an
            env whose random state marlhub cannot find.
        MissingDependencyError: dm_env is not installed.
    """
    import_backend("dm_env", package="dm_env", extra="dmc", feature="from_dm_env()")
    adapter = importlib.import_module("marlhub.adapters.dm_env.adapter")
    return adapter.DmEnvHubEnv(env, agent_ids=agent_ids, reseed=reseed)


def compare_with_native(hub: Any, make_native: Callable[[], Any], *, episodes: int = 3,
                        seed: Optional[int] = 0, max_steps: int = 1000) -> Any:
    """Step ``hub`` and Shimmy's env over ``make_native()`` in lockstep; list the differences.

    See :mod:`marlhub.adapters.dm_env.lockstep`.

    Raises:
        MissingDependencyError: Shimmy (or dm_control, which its wrapper imports) is
            not installed.
    """
    lockstep = importlib.import_module("marlhub.adapters.dm_env.lockstep")
    return lockstep.compare_with_native(hub, make_native, episodes=episodes, seed=seed,
                                        max_steps=max_steps)
