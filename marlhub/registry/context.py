"""``EnvContext``: the config dict an env creator receives, as in RLlib.

It is a plain ``dict`` of the user's config with four extra attributes that tell
a creator where it runs, so one creator serves a notebook, a test and an RLlib
env runner alike.

Example:
    >>> ctx = EnvContext({"num_agents": 3}, worker_index=2, num_workers=4)
    >>> ctx["num_agents"], ctx.worker_index, ctx.vector_index, ctx.remote
    (3, 2, 0, False)
    >>> ctx.copy_with_overrides(vector_index=1).vector_index
    1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

__all__ = ["EnvContext"]


class EnvContext(dict):
    """A config dict plus ``worker_index``, ``vector_index``, ``num_workers`` and ``remote``.

    Args:
        env_config: the user's config; copied, never mutated.
        worker_index: which worker builds the env (0 for the local one).
        vector_index: which sub-env of a vectorized worker this is.
        remote: whether the env runs as a remote actor.
        num_workers: how many workers there are in all.
        recreated_worker: whether the worker was rebuilt after a failure.
    """

    def __init__(
        self,
        env_config: Optional[Mapping[str, Any]] = None,
        worker_index: int = 0,
        vector_index: int = 0,
        remote: bool = False,
        num_workers: Optional[int] = None,
        recreated_worker: bool = False,
    ) -> None:
        super().__init__(env_config or {})
        self.worker_index = worker_index
        self.vector_index = vector_index
        self.remote = remote
        self.num_workers = num_workers
        self.recreated_worker = recreated_worker

    def copy_with_overrides(
        self,
        env_config: Optional[Mapping[str, Any]] = None,
        worker_index: Optional[int] = None,
        vector_index: Optional[int] = None,
        remote: Optional[bool] = None,
        num_workers: Optional[int] = None,
        recreated_worker: Optional[bool] = None,
    ) -> "EnvContext":
        """Return a copy with the given fields replaced (RLlib's signature)."""
        return EnvContext(
            dict(self) if env_config is None else env_config,
            worker_index=self.worker_index if worker_index is None else worker_index,
            vector_index=self.vector_index if vector_index is None else vector_index,
            remote=self.remote if remote is None else remote,
            num_workers=self.num_workers if num_workers is None else num_workers,
            recreated_worker=self.recreated_worker if recreated_worker is None else recreated_worker,
        )

    def set_defaults(self, defaults: Mapping[str, Any]) -> "EnvContext":
        """Fill in keys the user did not give; return self."""
        for key, value in defaults.items():
            self.setdefault(key, value)
        return self

    def __reduce__(self) -> Any:  # keep the attributes across pickling (Ray ships configs)
        return (
            EnvContext,
            (dict(self), self.worker_index, self.vector_index, self.remote,
             self.num_workers, self.recreated_worker),
        )

    def __repr__(self) -> str:
        return (
            f"EnvContext({dict(self)!r}, worker_index={self.worker_index}, "
            f"vector_index={self.vector_index}, num_workers={self.num_workers}, remote={self.remote})"
        )
