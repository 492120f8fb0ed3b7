"""RLlib <-> hub, and marlhub ids for every env runner of a Ray cluster.

* :func:`to_rllib` gives any hub env (or anything :func:`~marlhub.adapters.to_hub`
  accepts) as an instance of a real ``ray.rllib.env.multi_agent_env.MultiAgentEnv``
  subclass, ``HubRLlibEnv``, so RLlib's own checks and env runners take it.
* :func:`from_rllib` takes an RLlib ``MultiAgentEnv`` (or anything shaped like
  one) to the hub, adding the contract's guarantees (:class:`RLlibEnv`).
* :func:`register_with_ray` registers marlhub ids with
  ``ray.tune.registry.register_env``, so
  ``PPOConfig().environment("marlhub/openspiel/leduc_poker")`` builds the env on
  every env runner; the creators are picklable and resolve
  the id on the worker.

Converting back unwraps: ``from_rllib(to_rllib(h)) is h`` and
``to_rllib(from_rllib(e)) is e``. Ray is imported only by :func:`to_rllib` and
:func:`register_with_ray` (pip extra ``rllib``).

Example:
    >>> from marlhub.envs import TicTacToe
    >>> hub = TicTacToe()
    >>> from_rllib(hub) is hub          # hub envs already follow the protocol
    True
    >>> import gymnasium as gym
    >>> class Echo:  # written RLlib's way: static agents, no __all__ in truncateds
    ...     possible_agents = agents = ["a", "b"]
    ...     observation_spaces = action_spaces = {x: gym.spaces.Discrete(2) for x in "ab"}
    ...     def reset(self, *, seed=None, options=None):
    ...         return {"a": 0, "b": 0}, {}
    ...     def step(self, actions):
    ...         obs = {"a": actions["b"], "b": actions["a"]}
    ...         return obs, {"a": 1.0, "b": 1.0}, {"__all__": True}, {}, {}
    >>> env = from_rllib(Echo())   # any RLlib-style env gets the contract's guarantees
    >>> env.step({"a": 0, "b": 1})
    Traceback (most recent call last):
    ...
    marlhub.errors.ResetNeededError: Echo.step() was called but reset() has not been called yet. Call reset() to start a new episode.
    >>> obs, infos = env.reset(seed=0)
    >>> env.step({"a": 0, "b": 1})[3], env.agents
    ({'__all__': False}, [])
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.adapters._rllib_from import RLlibEnv, read_possible_agents
from marlhub.adapters._rllib_register import RayEnvCreator, to_marlhub_context
from marlhub.core import MultiAgentEnv, is_multi_agent_env, missing_protocol_members
from marlhub.errors import MissingDependencyError, ProtocolError, UnknownEnvError
from marlhub.registry.ids import GLOB_CHARS

__all__ = [
    "RLlibEnv",
    "RayEnvCreator",
    "from_rllib",
    "is_rllib_env",
    "is_rllib_view_of_hub",
    "read_possible_agents",
    "register_with_ray",
    "to_marlhub_context",
    "to_rllib",
]

_RLLIB_BASE = ("ray.rllib.env.multi_agent_env", "MultiAgentEnv")


def is_rllib_env(obj: Any) -> bool:
    """Tell whether ``obj`` is an instance of RLlib's ``MultiAgentEnv`` (never imports Ray).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_rllib_env(TicTacToe())
        False
    """
    if isinstance(obj, type):
        return False
    return any((c.__module__, c.__name__) == _RLLIB_BASE for c in type(obj).__mro__)


def is_rllib_view_of_hub(obj: Any) -> bool:
    """Tell whether ``obj`` is what :func:`to_rllib` made of a hub env (never imports Ray).

    :func:`marlhub.adapters.to_hub` unwraps such views; other RLlib envs are
    taken as they are, so the conformance suite judges them unrepaired.

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_rllib_view_of_hub(TicTacToe())
        False
    """
    return bool(getattr(type(obj), "_marlhub_view_of_hub", False)) and is_rllib_env(obj)


def to_rllib(env: Any, *, check: bool = True) -> Any:
    """Return ``env`` as an instance of RLlib's ``MultiAgentEnv``; :func:`from_rllib` envs unwrap.

    Args:
        env: a hub env, or anything :func:`marlhub.adapters.to_hub` accepts
            (PettingZoo, OpenSpiel, Gymnasium envs go through the hub). An RLlib
            ``MultiAgentEnv`` is returned as it is.
        check: judge every reset and step against the rules whose breach makes
            RLlib raise (done agents that reappear, missing rewards, truncation
            without a last observation, a missing ``__all__``...) and raise
            :class:`~marlhub.errors.EnvContractError` naming the rule at the
            step where it happens, instead of RLlib's assertion deep in an env runner.

    Returns:
        A ``HubRLlibEnv`` (a subclass of ``ray.rllib.env.multi_agent_env.MultiAgentEnv``)
        whose ``env`` is the hub env, or ``env`` itself when it already is an RLlib env.

    Raises:
        MissingDependencyError: Ray is not installed.
        ProtocolError: ``env`` cannot be turned into a hub env.
    """
    if type(env) is RLlibEnv and is_rllib_env(env.env):
        return env.env
    if is_rllib_env(env):
        return env
    # An RLlibEnv around an env that is no RLlib subclass is wrapped as it is, keeping
    # the guarantees it adds.
    if not isinstance(env, MultiAgentEnv):
        from marlhub.adapters import to_hub

        env = to_hub(env)
    return _to_module().hub_rllib_env_class()(env, check=check)


def from_rllib(env: Any, *, check: bool = True) -> Any:
    """Return an RLlib ``MultiAgentEnv`` as a hub env that keeps the contract; views unwrap.

    Args:
        env: an RLlib ``MultiAgentEnv`` subclass instance, or any object with
            RLlib's ``reset``/``step`` protocol (old-API-stack envs that declare
            agents through ``_agent_ids`` included).
        check: judge every transition against the rules RLlib enforces
            (see :class:`RLlibEnv`).

    Returns:
        The hub env itself when ``env`` came from :func:`to_rllib` or already is a
        marlhub env; otherwise an :class:`RLlibEnv` around ``env``.

    Raises:
        ProtocolError: ``env`` does not follow the protocol (the message lists
            what it lacks).
    """
    if is_rllib_view_of_hub(env):
        return env.env
    if isinstance(env, MultiAgentEnv):
        return env
    if not (is_rllib_env(env) or is_multi_agent_env(env) or _old_stack_env(env)):
        raise ProtocolError(
            env, missing_protocol_members(env), expected="an RLlib MultiAgentEnv"
        )
    return RLlibEnv(env, check=check)


def register_with_ray(
    env_id_or_pattern: str,
    *,
    prefix: str = "marlhub/",
    registry: Any = None,
    check: bool = True,
) -> list[str]:
    """Register marlhub ids with ``ray.tune.registry.register_env`` under ``prefix + id``.

    Each id gets a :class:`RayEnvCreator`: picklable, and resolving the id only
    when an env runner calls it, with RLlib's ``env_config`` as the env's config
    (worker and vector indices kept). Ids a family resolves (``openspiel/...``,
    ``pettingzoo/...``, ``gymnasium/...``) are resolved by each worker's own
    registry; ids registered by name carry their creator to the workers.

    Args:
        env_id_or_pattern: one id (``"openspiel/kuhn_poker(players=3)"``) or a
            glob over ids (``"openspiel/*"``, ``"*"``), as ``marlhub list`` takes.
        prefix: put before each id to make the name RLlib sees.
        registry: the :class:`~marlhub.registry.Registry` to read; the default
            registry when None.
        check: passed to :func:`to_rllib` on the workers.

    Returns:
        The names registered with Ray, sorted.

    Raises:
        MissingDependencyError: Ray is not installed.
        UnknownEnvError: the id is not registered, or the glob matches nothing.
        TypeError: ``env_id_or_pattern`` or ``prefix`` is not a string.
    """
    if not isinstance(env_id_or_pattern, str):
        raise TypeError(
            f"env_id_or_pattern must be a registry id or a glob such as 'openspiel/*', got "
            f"{type(env_id_or_pattern).__name__} {env_id_or_pattern!r}."
        )
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string such as 'marlhub/', got {prefix!r}.")
    register_env = _ray_register_env()
    from marlhub.registry import default_registry
    from marlhub.registry.ids import split_id

    reg = default_registry() if registry is None else registry
    if GLOB_CHARS & set(env_id_or_pattern):
        ids = reg.registered(env_id_or_pattern)
        if not ids:
            raise UnknownEnvError(
                env_id_or_pattern, (),
                "The pattern matches no registered id; `marlhub list PATTERN` shows what it "
                "matches.",
            )
    else:
        ids = [env_id_or_pattern]
    names = []
    for env_id in ids:
        spec = reg.spec(env_id)  # UnknownEnvError with suggestions for a typo
        creator: Optional[Callable[..., Any]] = spec.creator
        if creator is None and registry is not None:
            family_name, rest = split_id(env_id)
            creator = _FamilyCreator(reg.families[str(family_name)], rest)
        register_env(prefix + env_id, RayEnvCreator(env_id, creator, check=check))
        names.append(prefix + env_id)
    return sorted(names)


class _FamilyCreator:
    """``creator(config)`` making ``rest`` with a family of a non-default registry (picklable)."""

    def __init__(self, family: Any, rest: str) -> None:
        self.family = family
        self.rest = rest

    def __call__(self, config: Mapping[str, Any]) -> Any:
        return self.family.make(self.rest, config)


def _old_stack_env(env: Any) -> bool:
    # RLlib's old API stack: agents through `_agent_ids`, one shared or a Dict space.
    return (
        callable(getattr(env, "reset", None))
        and callable(getattr(env, "step", None))
        and bool(getattr(env, "_agent_ids", None))
        and getattr(env, "observation_space", None) is not None
        and getattr(env, "action_space", None) is not None
    )


def _to_module() -> Any:
    return _checked_import("marlhub.adapters._rllib_to", "to_rllib()")


def _checked_import(module: str, feature: str) -> Any:
    module_obj = importlib.import_module(module)
    try:
        module_obj.hub_rllib_env_class()
    except ImportError as exc:
        if getattr(exc, "name", "") and not str(exc.name).startswith("ray"):
            raise
        raise MissingDependencyError("ray", "rllib", feature) from exc
    return module_obj


def _ray_register_env() -> Callable[[str, Callable[..., Any]], None]:
    _checked_import("marlhub.adapters._rllib_to", "register_with_ray()")
    from ray.tune.registry import register_env  # type: ignore[import-not-found, unused-ignore]

    return register_env


def __getattr__(name: str) -> Any:
    if name == "HubRLlibEnv":
        return _to_module().hub_rllib_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
