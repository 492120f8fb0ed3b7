"""Registry ids for Ray: picklable env creators that resolve on the worker that builds the env.

:class:`RayEnvCreator` is what :func:`marlhub.adapters.rllib.register_with_ray`
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

from marlhub.registry.context import EnvContext

__all__ = ["RayEnvCreator", "to_marlhub_context"]


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
        check: passed to :class:`~marlhub.adapters._rllib_to.HubRLlibEnv`.

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
        from marlhub.adapters.rllib import to_rllib
        from marlhub.registry import Registry, default_registry

        ctx = to_marlhub_context(config)
        if self.creator is None:
            hub = default_registry().make(self.env_id, ctx)
        else:
            # A registry of its own: the creator may not be registered in this process.
            registry = Registry()
            registry.register(self.env_id, self.creator)
            hub = registry.make(self.env_id, ctx)
        return to_rllib(hub, check=self.check)

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
