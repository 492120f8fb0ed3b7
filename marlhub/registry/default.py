"""The default registry behind ``marlhub.make``, ``marlhub.register_env`` and ``marlhub list``.

It is built on first use, not at import: the built-in envs of
:data:`marlhub.envs.BUILTIN_ENVS` are registered by plain name, the built-in
families named in :data:`marlhub.adapters.apis.APIS` are
instantiated (their backends are imported only when one of their ids is
used), and entry points of the group ``marlhub.envs`` are discovered on the
first look-up that needs them. A built-in family whose module fails to import
is recorded in :attr:`Registry.problems` and named in the error when one of
its ids is made.

Example:
    >>> "tic_tac_toe" in registered("tic*")
    True
    >>> env = make("tic_tac_toe", {"max_steps": 50})
    >>> env.possible_agents
    ['player1', 'player2']
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional, overload

from marlhub.adapters.apis import BUILTIN_FAMILIES
from marlhub.context import set_id_resolver
from marlhub.core import MultiAgentEnv
from marlhub.envs import BUILTIN_ENVS
from marlhub.registry.entry_points import ENTRY_POINT_GROUP
from marlhub.registry.gymnasium_ids import register_names
from marlhub.registry.registry import Registry
from marlhub.registry.spec import EnvSpec, RegistryProblem

__all__ = ["create_default_registry", "default_registry", "make", "register_env", "registered",
           "simultaneous_config"]

#: The family of simulators that drive (``external/HOST:PORT``): no API to convert, so it is
#: no row of the API table.
EXTERNAL_FAMILY = ("marlhub.external.family", "ExternalFamily")

_default: Optional[Registry] = None
_default_lock = threading.Lock()


def create_default_registry(*, entry_point_group: Optional[str] = ENTRY_POINT_GROUP) -> Registry:
    """Build a new registry holding what the default one holds: built-ins, families, entry points.

    Args:
        entry_point_group: the entry point group to discover; None for none.

    Example:
        >>> registry = create_default_registry(entry_point_group=None)
        >>> registry.registered("r*", families=False)
        ['rock_paper_scissors']
    """
    registry = Registry(entry_point_group=entry_point_group)
    for name, (env_class, description) in BUILTIN_ENVS.items():
        registry.register(name, env_class, description=description)
    for module_name, class_name in [*BUILTIN_FAMILIES, EXTERNAL_FAMILY]:
        family_name = module_name.rsplit(".", 2)[-2]
        try:
            family = getattr(importlib.import_module(module_name), class_name)()
        except Exception as exc:  # one broken built-in family must not take the others down
            registry.record_problem(
                RegistryProblem(
                    f"family {family_name!r}",
                    f"{module_name}.{class_name} failed to load ({type(exc).__name__}: {exc})",
                    family=family_name,
                    error=exc,
                )
            )
            continue
        registry.register_family(family)
    return registry


def default_registry() -> Registry:
    """Return the process-wide registry, building it on first call.

    Example:
        >>> default_registry() is default_registry()
        True
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = create_default_registry()
    return _default


def register_env(
    name: str,
    creator: Callable[..., Any],
    *,
    overwrite: bool = False,
    description: Optional[str] = None,
) -> EnvSpec:
    """Register ``creator`` under ``name`` in the default registry (see :meth:`Registry.register`).

    The name is also registered in Gymnasium's registry as ``marlhub/<name>``
    (where Gymnasium can parse it), for learners that call ``gym.make(key)``
    (:mod:`marlhub.registry.gymnasium_ids`).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> spec = register_env("short_tic_tac_toe", lambda config: TicTacToe({"max_steps": 4}))
        >>> make("short_tic_tac_toe").possible_agents
        ['player1', 'player2']
        >>> default_registry().unregister("short_tic_tac_toe")
    """
    spec = default_registry().register(
        name, creator, overwrite=overwrite, description=description
    )
    register_names([name])
    return spec


@overload
def make(env_id: str, config: Optional[Mapping[str, Any]] = None, *,
         to: None = None) -> MultiAgentEnv: ...
@overload
def make(env_id: str, config: Optional[Mapping[str, Any]] = None, *,
         to: str, **convert_options: Any) -> Any: ...
def make(
    env_id: str,
    config: Optional[Mapping[str, Any]] = None,
    *,
    to: Optional[str] = None,
    **convert_options: Any,
) -> Any:
    """Build ``env_id`` from the default registry, as a hub env or in the API ``to`` names.

    Args:
        env_id: a registered name (``"traffic"``), a family id
            (``"openspiel/kuhn_poker(players=3)"``, ``"pettingzoo/classic/tictactoe-v3"``,
            ``"gymnasium/CartPole-v1"``) or an entry point's name; ``marlhub list`` shows them.
        config: the env's config (its keys are checked; unknown ones are listed).
        to: None for a hub env (a :class:`~marlhub.core.MultiAgentEnv`), or one of
            ``"marlhub"``, ``"pettingzoo.aec"``, ``"pettingzoo.parallel"``,
            ``"openspiel"``, ``"rllib"``, ``"gymnasium"``, ``"gymnasium.tuple"``, ``"torchrl"``
            (:data:`marlhub.adapters.apis.TARGETS`).
        convert_options: options of the converter ``to`` names, e.g.
            ``turn_based="pad"`` (pettingzoo.parallel), ``short_name=`` (openspiel),
            ``agent_id=``, ``joint=True``, ``illegal_action=`` (gymnasium),
            ``check=``, ``illegal_action=``, ``mask_observation=`` (rllib),
            ``group_map=``, ``categorical_actions=`` (torchrl).

    Raises:
        UnknownEnvError: no id of that name (with close matches).
        ConfigError: the env rejects the config.
        ConversionError: ``to`` names no supported API.
        NotParallelizableError: ``to="pettingzoo.parallel"`` of a turn-based env.
        MissingDependencyError: the family's or the target's backend is not installed.

    Example:
        >>> env = make("traffic", {"num_cars": 2})
        >>> env.possible_agents
        ['car_0', 'car_1', 'light']
        >>> type(make("tic_tac_toe", to="pettingzoo.aec")).__name__
        'HubAECEnv'
    """
    return default_registry().make(env_id, config, to=to, **convert_options)


def simultaneous_config(env_id: str,
                        config: Optional[Mapping[str, Any]] = None) -> Optional[Mapping[str, Any]]:
    """Return the config that builds ``env_id`` with every agent acting in every step.

    The config of the env's natively parallel version where its family has one
    (``mpe2/``, ``magent2/``, PettingZoo's butterfly and sisl envs) and ``config``
    does not choose ``api``; else ``config`` unchanged (see
    :meth:`Registry.simultaneous_config`). For learner bridges and vector envs of
    simultaneous-step learners: ``make_vec(env_id, n, simultaneous_config(env_id, config))``.

    Example:
        >>> simultaneous_config("rock_paper_scissors") is None
        True
    """
    return default_registry().simultaneous_config(env_id, config)


def registered(pattern: str = "*", *, families: bool = True) -> list[str]:
    """Return the ids of the default registry matching glob ``pattern``, sorted.

    Example:
        >>> registered("t*", families=False)
        ['tic_tac_toe', 'traffic']
    """
    return default_registry().registered(pattern, families=families)


set_id_resolver(make)
# gym.make("marlhub/traffic"): the built-in names in Gymnasium's registry (specs only).
register_names(BUILTIN_ENVS)
