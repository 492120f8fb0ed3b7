"""Registry ids for Ray: ``register_with_ray`` and creators that resolve on the worker.

:class:`RayEnvCreator` is what :func:`register_with_ray`
hands to ``ray.tune.registry.register_env``. Ray pickles it once in the driver
and unpickles it in every env runner of the cluster; only there is the env id
resolved (the family's backend imported, the game loaded), so the driver never
builds an env it does not use.

Example:
    >>> import pickle
    >>> creator = RayEnvCreator("openspiel/kuhn_poker")
    >>> pickle.loads(pickle.dumps(creator)) == creator   # what Ray ships to the workers
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.adapters.rllib import to_rllib
from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.errors import UnknownEnvError
from marlhub.registry.default import default_registry
from marlhub.registry.ids import GLOB_CHARS, split_id
from marlhub.registry.registry import Registry

__all__ = ["RayEnvCreator", "register_with_ray", "to_marlhub_context"]


def to_marlhub_context(config: Optional[Mapping[str, Any]]) -> EnvContext:
    """Return RLlib's ``EnvContext`` (or any mapping) as marlhub's, keeping the worker fields.

    Example:
        >>> ctx = to_marlhub_context({"max_steps": 3})
        >>> dict(ctx), ctx.worker_index
        ({'max_steps': 3}, 0)
    """
    if isinstance(config, EnvContext):
        return config.copy_with_overrides()
    num_workers = getattr(config, "num_workers", None)
    return EnvContext(
        dict(config or {}),
        worker_index=int(getattr(config, "worker_index", 0) or 0),
        vector_index=int(getattr(config, "vector_index", 0) or 0),
        remote=bool(getattr(config, "remote", False)),
        num_workers=None if num_workers is None else int(num_workers),
        recreated_worker=bool(getattr(config, "recreated_worker", False)),
    )


class RayEnvCreator:
    """``creator(config) -> HubRLlibEnv`` for one marlhub id; picklable, resolved when called.

    Args:
        env_id: the marlhub registry id.
        creator: the creator registered under ``env_id`` in the driver, carried
            to the workers (by value when it is a lambda or local function, as
            Ray pickles with cloudpickle); None for ids that every process can
            resolve itself (family ids such as ``openspiel/leduc_poker``).
        check: passed to :class:`~marlhub.adapters.rllib.view.HubRLlibEnv`.

    Attributes:
        env_id: the marlhub registry id.
    """

    def __init__(
        self, env_id: str, creator: Optional[Callable[..., Any]] = None, *, check: bool = True
    ) -> None:
        self.env_id = env_id
        self.creator = creator
        self.check = check

    def __call__(self, config: Optional[Mapping[str, Any]] = None) -> Any:
        """Build the env for ``config`` (RLlib's ``EnvContext``) as a ``HubRLlibEnv``."""
        ctx = to_marlhub_context(config)
        if self.creator is None:
            hub = default_registry().make(self.env_id, ctx)
        else:
            # A registry of its own: the creator may not be registered in this process.
            registry = Registry()
            registry.register(self.env_id, self.creator)
            hub = registry.make(self.env_id, ctx)
        return to_rllib(hub, check=self.check)

    def make_vector(self, config: Optional[Mapping[str, Any]], num_envs: int) -> Any:
        """The vector env of ``num_envs`` copies the id's family makes itself (``external/``:
        one server, the copies its concurrent episodes), or None for ids made copy by copy.
        :class:`~marlhub.learners.rllib_runner.VectorEnvRunner` asks for it."""
        from marlhub.registry.vector import make_vec, own_vector_maker

        if self.creator is not None or own_vector_maker(self.env_id) is None:
            return None
        return make_vec(self.env_id, num_envs, to_marlhub_context(config),
                        autoreset_mode="next_step")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RayEnvCreator)
            and (self.env_id, self.creator, self.check)
            == (other.env_id, other.creator, other.check)
        )

    def __hash__(self) -> int:
        return hash((self.env_id, self.check))

    def __repr__(self) -> str:
        return f"RayEnvCreator({self.env_id!r})"


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
    # The workers build HubRLlibEnv, so RLlib itself must be there, not only Tune.
    import_backend("ray.rllib.env.multi_agent_env", package="ray", extra="rllib",
                   feature="register_with_ray()")
    register_env = import_backend("ray.tune.registry", package="ray", extra="rllib",
                                  feature="register_with_ray()").register_env
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
