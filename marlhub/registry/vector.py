"""``make_vec``: a vector env of ``num_envs`` copies of a registry id, in this process or in workers.

Each copy is made by a :class:`RegistryEnvFn`, a picklable ``env_fn()`` that
resolves the id when called, so async workers build their own copies (the
family's backend is imported in the worker, not sent to it). An id registered
by name carries its creator to the workers, so ids registered in a notebook
work under any start method.

Example:
    >>> envs = make_vec("rock_paper_scissors", 3)
    >>> envs
    SyncVectorMultiAgentEnv(rock_paper_scissors, num_envs=3)
    >>> obs, infos = envs.reset(seed=0)
    >>> len(obs), envs.single_action_spaces["player1"]
    (3, Discrete(3))
    >>> envs.close()
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.context import EnvContext
from marlhub.errors import VectorEnvError
from marlhub.registry.default import default_registry
from marlhub.registry.registry import Registry
from marlhub.vector import (
    AsyncVectorMultiAgentEnv,
    BatchedVectorEnv,
    SyncVectorMultiAgentEnv,
    VectorMultiAgentEnv,
)

__all__ = ["VECTORIZATION_MODES", "RegistryEnvFn", "batched_maker", "env_fns_for", "make_vec",
           "own_vector_maker"]

#: ``vectorization_mode`` values: copies in this process, in worker processes, or the rows
#: of one natively batched simulator (for families that have one: ``vmas/``).
VECTORIZATION_MODES = ("sync", "async", "batched")


class RegistryEnvFn:
    """``env_fn()`` making one copy of a registry id; picklable, resolved when called.

    Args:
        env_id: the registry id.
        config: the env's config (its ``EnvContext`` fields kept when it is one).
        vector_index: the copy's index, set as ``config.vector_index``.
        creator: the creator registered under ``env_id`` here, carried to the
            process that calls this (None for ids every process resolves itself,
            such as family ids).

    Example:
        >>> import pickle
        >>> fn = pickle.loads(pickle.dumps(RegistryEnvFn("traffic", {"num_cars": 2})))
        >>> fn().possible_agents
        ['car_0', 'car_1', 'light']
    """

    def __init__(self, env_id: str, config: Optional[Mapping[str, Any]] = None, *,
                 vector_index: int = 0, creator: Optional[Callable[..., Any]] = None) -> None:
        self.env_id = env_id
        self.config = config
        self.vector_index = vector_index
        self.creator = creator

    def context(self) -> EnvContext:
        """Return the ``EnvContext`` the copy is made with."""
        if isinstance(self.config, EnvContext):
            return self.config.copy_with_overrides(vector_index=self.vector_index)
        return EnvContext(dict(self.config or {}), vector_index=self.vector_index)

    def __call__(self) -> Any:
        """Make the copy (a hub env)."""
        if self.creator is None:
            return default_registry().make(self.env_id, self.context())
        registry = Registry()  # the creator may not be registered in this process
        registry.register(self.env_id, self.creator)
        return registry.make(self.env_id, self.context())

    def __repr__(self) -> str:
        return f"RegistryEnvFn({self.env_id!r}, vector_index={self.vector_index})"


def env_fns_for(env_id: str, num_envs: int,
                config: Optional[Mapping[str, Any]] = None) -> list[RegistryEnvFn]:
    """Return ``num_envs`` env_fns making copies of ``env_id`` (copy ``i`` with ``vector_index=i``).

    Raises:
        UnknownEnvError: ``env_id`` is not registered (with close matches).
        VectorEnvError: ``num_envs`` is not an integer >= 1.
    """
    if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
        raise VectorEnvError(f"make_vec({env_id!r})",
                             f"num_envs must be an integer >= 1, got {num_envs!r}",
                             "Pass how many copies to make, e.g. make_vec(env_id, 4).")
    creator = default_registry().spec(env_id).creator  # UnknownEnvError for a typo
    return [RegistryEnvFn(env_id, config, vector_index=i, creator=creator)
            for i in range(num_envs)]


def make_vec(
    env_id: str,
    num_envs: int = 1,
    config: Optional[Mapping[str, Any]] = None,
    *,
    vectorization_mode: Any = None,
    autoreset_mode: Any = "next_step",
    **vector_kwargs: Any,
) -> VectorMultiAgentEnv:
    """Make ``num_envs`` copies of ``env_id`` stepped as one vector env (Gymnasium's name).

    Args:
        env_id: a registry id (``marlhub list`` shows them).
        num_envs: how many copies; copy ``i`` is seeded ``seed + i`` by ``reset(seed=seed)``.
        config: the env's config, the same for every copy.
        vectorization_mode: ``"sync"`` (:class:`~marlhub.vector.SyncVectorMultiAgentEnv`,
            in this process), ``"async"`` (:class:`~marlhub.vector.AsyncVectorMultiAgentEnv`,
            in worker processes) or ``"batched"`` (:class:`~marlhub.vector.BatchedVectorEnv`:
            ONE natively batched simulator of ``num_envs`` copies, for families that have
            one, such as ``vmas/``); None (the default) is ``"batched"`` where the family
            has it, else ``"sync"``. Gymnasium's ``VectorizeMode`` members are taken too.
        autoreset_mode: ``"next_step"`` (RLlib's and Gymnasium's default), ``"same_step"``
            or ``"disabled"``; see :mod:`marlhub.vector.copies`.
        vector_kwargs: options of the vector env class: ``num_workers``,
            ``shared_memory``, ``copy``, ``context``, ``daemon``, ``timeout``,
            ``array_face`` (async); ``copy`` (sync); ``batch_size`` (every mode: how many
            copies ``recv()`` returns; a batched simulator steps once every copy is sent);
            ``as_torch``, ``check_masks`` (batched).

    Raises:
        UnknownEnvError: ``env_id`` is not registered (with close matches).
        VectorEnvError: a bad ``num_envs``, ``vectorization_mode``, ``autoreset_mode``
            or ``num_workers``.
        WorkerError: a worker could not make its copies (async).

    Example:
        >>> with make_vec("tic_tac_toe", 4, vectorization_mode="async", num_workers=2) as envs:
        ...     obs, infos = envs.reset(seed=0)
        ...     envs.num_envs, envs.num_workers, envs.metadata["autoreset_mode"]
        (4, 2, 'next_step')
    """
    own = own_vector_maker(env_id)
    if own is not None:  # external/: the copies are episodes of simulators that call in
        if vectorization_mode not in (None, "sync"):
            raise VectorEnvError(f"make_vec({env_id!r})", f"vectorization_mode="
                                 f"{vectorization_mode!r} for an id that makes its own vector "
                                 "env", "Leave vectorization_mode out.")
        return own(config or {}, num_envs, autoreset_mode=autoreset_mode, **vector_kwargs)
    make_batched = batched_maker(env_id)
    mode = ("batched" if make_batched is not None else "sync") if vectorization_mode is None \
        else str(getattr(vectorization_mode, "value", vectorization_mode)).lower()
    if mode not in VECTORIZATION_MODES or (mode == "batched" and make_batched is None):
        raise VectorEnvError(f"make_vec({env_id!r})",
                             f"unknown vectorization_mode {vectorization_mode!r}" if mode not in
                             VECTORIZATION_MODES else f"{env_id!r} has no batched simulator",
                             "Pass 'sync' (copies in this process) or 'async' (in worker "
                             "processes); 'batched' is for families with a natively batched "
                             "simulator (vmas/).")
    cls: Any = {"sync": SyncVectorMultiAgentEnv, "async": AsyncVectorMultiAgentEnv,
                "batched": BatchedVectorEnv}[mode]
    accepted = [name for name in inspect.signature(cls).parameters
                if name not in ("env_fns", "autoreset_mode", "env_id", "source")]
    unknown = sorted(set(vector_kwargs) - set(accepted))
    if unknown:
        raise VectorEnvError(f"make_vec({env_id!r})",
                             f"unknown option{'s' if len(unknown) > 1 else ''} "
                             f"{', '.join(map(repr, unknown))} for vectorization_mode={mode!r}",
                             f"It takes {', '.join(map(repr, accepted))}.")
    env_fns = env_fns_for(env_id, num_envs, config)
    prefix, slash, _ = env_id.partition("/")
    start_method = getattr(default_registry().families.get(prefix) if slash else None,
                           "start_method", None)  # "spawn" for the families on JAX
    if mode == "async" and isinstance(start_method, str):
        vector_kwargs.setdefault("context", start_method)
    if mode == "batched":
        assert make_batched is not None
        source = make_batched(env_fns[0].context(), num_envs)
        return BatchedVectorEnv(source, autoreset_mode=autoreset_mode, env_id=env_id,
                                **vector_kwargs)
    return cls(env_fns, autoreset_mode=autoreset_mode, env_id=env_id, **vector_kwargs)


def own_vector_maker(env_id: str) -> Optional[Callable[..., Any]]:
    """``make(config, num_envs, **options)`` of a family that makes its own vector env
    (``make_vector(rest, config, num_envs, **options)``: ``external/``), or None."""
    make_vector, rest = _family_method(env_id, "make_vector")
    if make_vector is None:
        return None
    return lambda config, num_envs, **options: make_vector(rest, config, num_envs, **options)


def batched_maker(env_id: str) -> Optional[Callable[[EnvContext, int], Any]]:
    """Return ``make(config, num_envs)`` of the batched simulator behind ``env_id``, or None.

    A family has one when it defines ``make_batched(rest, config, num_envs)``
    (``vmas/``: one VMAS env of ``num_envs`` copies).

    Example:
        >>> batched_maker("vmas/balance") is not None, batched_maker("tic_tac_toe")
        (True, None)
    """
    make_batched, rest = _family_method(env_id, "make_batched")
    if make_batched is None:
        return None
    return lambda config, num_envs: make_batched(rest, config, num_envs)


def _family_method(env_id: str, name: str) -> tuple[Optional[Callable[..., Any]], str]:
    """The method ``name`` of the family ``env_id`` belongs to (None when there is no such
    family or method), and the rest of the id after the family's prefix."""
    prefix, slash, rest = env_id.partition("/")
    family = default_registry().families.get(prefix) if slash else None
    method = getattr(family, name, None)
    return (method if callable(method) else None), rest
