"""What every vector env of marlhub shares: the base class, autoreset modes, seeds, reset masks.

:class:`VectorMultiAgentEnv` is call-compatible with RLlib's
``ray.rllib.env.vector.vector_multi_agent_env.VectorMultiAgentEnv`` and, when
Ray is installed, a subclass of it, so RLlib's env runners take it; yet
``import marlhub`` does not import Ray (its import takes seconds). Until Ray's
module is imported, the base class stands in for Ray's; as soon as it is
(by anyone, before or after marlhub), :func:`adopt_ray_base` puts Ray's class
in its place (an import hook calls it right after Ray's module runs).

The autoreset modes live in :mod:`marlhub.vector.autoreset` (named here too, for
code written against earlier releases).

Example:
    >>> seeds_for("VectorEnv", 7, 3)
    [7, 8, 9]
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import VectorEnvError
from marlhub.vector.autoreset import (
    AUTORESET_MODES,
    DISABLED,
    NEXT_STEP,
    SAME_STEP,
    parse_autoreset_mode,
)

__all__ = [
    "AUTORESET_MODES",
    "DISABLED",
    "NEXT_STEP",
    "SAME_STEP",
    "VectorMultiAgentEnv",
    "adopt_ray_base",
    "one_seed",
    "parse_autoreset_mode",
    "reset_mask_of",
    "seeds_for",
    "values_per_copy",
]

#: The module that defines Ray's class.
RAY_MODULE = "ray.rllib.env.vector.vector_multi_agent_env"


class _WithoutRay:
    """Stands where Ray's ``VectorMultiAgentEnv`` goes until Ray's module is imported."""


def seeds_for(env_name: str, seed: Any, num_envs: int) -> list[Optional[int]]:
    """Return one seed per copy: ``seed + i`` for an int, the list itself, or Nones.

    Raises:
        VectorEnvError: a list of the wrong length, or something that is no seed.
    """
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return [int(seed) + i for i in range(num_envs)]
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        if len(seed) != num_envs:
            raise VectorEnvError(
                env_name, f"reset() got {len(seed)} seeds for {num_envs} copies",
                "Pass one int (copy i is seeded seed + i), one seed per copy, or None.")
        return [None if s is None else int(s) for s in seed]
    raise VectorEnvError(env_name, f"reset() got the seed {seed!r}",
                         "Pass an int (copy i is seeded seed + i), a list of one seed per "
                         "copy, or None.")


def one_seed(env_name: str, seed: Any, mask: Any, seeding: str) -> Optional[int]:
    """Return the one seed of a natively batched simulator (seeded once for all copies), or None.

    Args:
        env_name: the vector env's name, for messages.
        seed: what ``reset`` got.
        mask: the ``reset_mask`` (None: every copy is reset).
        seeding: what the simulator's seed reproduces, in its words (for the message).

    Raises:
        VectorEnvError: one seed per copy, a seed with a ``reset_mask``, or no int.

    Example:
        >>> one_seed("Vec", 3, None, ""), one_seed("Vec", None, [True], "")
        (3, None)
    """
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        raise VectorEnvError(
            env_name, f"reset() got one seed per copy ({len(seed)}), and the batched "
            "simulator is seeded once for all copies", f"Pass one int. {seeding}")
    if seed is not None and mask is not None:
        raise VectorEnvError(
            env_name, "reset() got a seed with a reset_mask; the batched simulator seeds "
            "all copies at once", "Reset the masked copies without a seed, or reset every "
            "copy with reset(seed=s).")
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer))):
        raise VectorEnvError(env_name, f"reset() got the seed {seed!r}", "Pass an int, or None.")
    return None if seed is None else int(seed)


def reset_mask_of(env_name: str, options: Optional[Mapping[str, Any]],
                  num_envs: int) -> tuple[Optional[np.ndarray], Optional[dict[str, Any]]]:
    """Split ``options`` into the ``reset_mask`` (or None) and the options for the copies.

    Raises:
        VectorEnvError: a mask that is not one bool per copy, or that resets no copy.
    """
    if options is None or "reset_mask" not in options:
        return None, None if options is None else dict(options)
    rest = {k: v for k, v in options.items() if k != "reset_mask"}
    raw = options["reset_mask"]
    mask = np.asarray(raw)
    if mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise VectorEnvError(
            env_name, f"options['reset_mask'] must be {num_envs} bools, one per copy, got {raw!r}",
            f"Pass a numpy bool array of shape ({num_envs},) that is True for the copies to reset.")
    if not mask.any():
        raise VectorEnvError(env_name, "options['reset_mask'] resets no copy (all False)",
                             "Set it True for at least one copy, or do not call reset().")
    return mask, rest or None


def values_per_copy(name: str, values: Any, num_envs: int) -> list[Any]:
    """Return one value per copy: ``values`` itself (a list or tuple of the right length) or repeats.

    Raises:
        VectorEnvError: a list or tuple of the wrong length.
    """
    if not isinstance(values, (list, tuple)):
        return [values] * num_envs
    if len(values) != num_envs:
        raise VectorEnvError(name, f"set_attr() got {len(values)} values for {num_envs} copies",
                             "Pass one value per copy, or one value (not a list) for all.")
    return list(values)


class VectorMultiAgentEnv(_WithoutRay):
    """Many copies of a hub env stepped as one: lists of per-copy dicts in, lists out.

    ``reset`` returns ``(obs_list, infos_list)`` and ``step(action_list)`` the
    five lists, each holding ``num_envs`` dicts shaped exactly as the single
    env's. Subclasses: :class:`~marlhub.vector.SyncVectorMultiAgentEnv` (in this
    process) and :class:`~marlhub.vector.AsyncVectorMultiAgentEnv` (in worker
    processes).

    Attributes:
        num_envs: how many copies.
        autoreset_mode: one of :data:`AUTORESET_MODES`, also in ``metadata["autoreset_mode"]``.
        single_observation_spaces, single_action_spaces: the first copy's spaces by agent.
        single_observation_space, single_action_space: the same as ``gymnasium.spaces.Dict``.
        env_id: the registry id the copies were made from, when known (for messages).
    """

    metadata: dict[str, Any] = {}
    render_mode: Optional[str] = None
    closed: bool = False
    num_envs: int = 0
    env_id: Optional[str] = None
    autoreset_mode: str = NEXT_STEP
    # The copies (sync), or what the parent knows of each (async: RemoteCopy).
    envs: list[Any] = []
    single_observation_spaces: Optional[dict[AgentID, gym.Space]] = None
    single_action_spaces: Optional[dict[AgentID, gym.Space]] = None
    single_observation_space: Optional[gym.spaces.Dict] = None
    single_action_space: Optional[gym.spaces.Dict] = None
    # RLlib's class has them (old API stack); there is no batched space of lists of dicts.
    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None

    def _adopt_description(self, first: Mapping[str, Any]) -> None:
        """Take metadata, render mode and single spaces from the first copy's description
        (:func:`~marlhub.vector.copies.describe_env`)."""
        self.metadata = {**first["metadata"], "autoreset_mode": self.autoreset_mode}
        self.render_mode = first["render_mode"]
        possible_agents = first["possible_agents"]
        observation_spaces = first["observation_spaces"]
        action_spaces = first["action_spaces"]
        self.single_observation_spaces = {a: observation_spaces[a] for a in possible_agents}
        self.single_action_spaces = {a: action_spaces[a] for a in possible_agents}
        # Agent ids are any hashable; gymnasium's annotation says str.
        self.single_observation_space = gym.spaces.Dict(cast(Any, self.single_observation_spaces))
        self.single_action_space = gym.spaces.Dict(cast(Any, self.single_action_spaces))

    @property
    def actors(self) -> list[list[AgentID]]:
        """Each copy's agents that act in the next ``step`` (``[]`` for a copy that is reset
        in it, or that stays ended); the keys its action dict must have."""
        book = getattr(self, "_book", None)
        return [list(a) for a in book.actors] if book is not None else []

    @property
    def possible_agents(self) -> list[AgentID]:
        """The agents every copy may have, in order (the first copy's ``possible_agents``)."""
        return list(self.single_observation_spaces or ())

    def get_observation_space(self, agent: AgentID) -> gym.Space:
        """One copy's observation space of ``agent``."""
        assert self.single_observation_spaces is not None
        return self.single_observation_spaces[agent]

    def get_action_space(self, agent: AgentID) -> gym.Space:
        """One copy's action space of ``agent``."""
        assert self.single_action_spaces is not None
        return self.single_action_spaces[agent]

    @property
    def groups(self) -> dict[str, list[AgentID]]:
        """The groups of the array face: group name -> agents that share both spaces (found
        once: comparing the spaces is slow)."""
        found: Optional[dict[str, list[AgentID]]] = self.__dict__.get("_found_groups")
        if found is None:
            from marlhub.adapters.batched import group_agents

            observation, action = self.single_observation_spaces, self.single_action_spaces
            assert observation is not None and action is not None
            found = group_agents(self.possible_agents, observation.__getitem__,
                                 action.__getitem__)
            self._found_groups = found
        return found

    def reset_arrays(self, *, seed: Any = None, options: Optional[dict[str, Any]] = None) -> Any:
        """Reset as :meth:`reset` does; return the array face's
        :class:`~marlhub.vector.arrays.ArrayBatch` (per group, ``(num_envs, n, ...)``).

        The arrays are built from the copies' dicts. Use one face per episode: the array
        face keeps who is alive from the calls it makes.
        """
        obs, infos = self.reset(seed=seed, options=options)
        mask = None if not options or "reset_mask" not in options else options["reset_mask"]
        return self._dict_arrays().reset(obs, infos, self.actors, mask)

    def step_arrays(self, actions: Any) -> Any:
        """Step with one action array per group (``(num_envs, n, ...)``; slots that do not
        act are ignored); return the :class:`~marlhub.vector.arrays.ArrayBatch`.

        Raises:
            VectorEnvError: a missing group, or an array of the wrong shape or dtype.
            ActionError: an acting slot's action outside its space or mask.
        """
        per_copy = self._action_dicts(actions, range(self.num_envs), None)
        return self._dict_arrays().step(self.step(per_copy), self.actors)

    def async_reset_arrays(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """``async_reset`` on the array face: :meth:`recv_arrays` returns the copies reset."""
        self.async_reset(seed=seed, options=options)  # type: ignore[attr-defined]
        mask, _ = reset_mask_of(self.name(), options, self.num_envs)
        self._dict_arrays().restart(range(self.num_envs) if mask is None
                                    else np.flatnonzero(mask).tolist())

    def recv_arrays(self) -> Any:
        """``recv()`` on the array face: the next ``batch_size`` ready copies as
        :class:`~marlhub.vector.ready.ReceivedArrays`, the
        :class:`~marlhub.vector.arrays.ArrayBatch` of their rows and their ``copy_ids``."""
        from marlhub.vector.ready import ReceivedArrays

        got = self.recv()  # type: ignore[attr-defined]
        rows = got.copy_ids.tolist()
        batch = self._dict_arrays().step(tuple(got[:5]), self.actors, rows=rows)
        return ReceivedArrays(batch, got.copy_ids)

    def send_arrays(self, actions: Any, copy_ids: Any) -> None:
        """``send()`` on the array face: per group, one row of actions per copy id
        (``(len(copy_ids), n, ...)``); :meth:`recv_arrays` returns their results."""
        rows = self._cycle.check_send(copy_ids)  # type: ignore[attr-defined]
        self.send(self._action_dicts(actions, rows, rows), rows)  # type: ignore[attr-defined]

    def _action_dicts(self, actions: Any, rows: Sequence[int],
                      copy_ids: Optional[Sequence[int]]) -> list[dict[AgentID, Any]]:
        """The action dicts of the copies ``rows`` from one array per group (one row per
        copy of ``rows``), checked against the spaces (the masks: by the dicts' check)."""
        face = self._dict_arrays()
        actors = [self.actors[i] for i in rows]
        acting = {name: np.array([[a in copy for a in members] for copy in actors], bool)
                  .reshape(len(actors), len(members))
                  for name, members in face.groups.items()}
        face.checker.check(actions, acting, {}, copy_ids)
        per_copy: list[dict[AgentID, Any]] = [{} for _ in actors]
        for name, members in face.groups.items():
            values = face.checker.host(name, actions[name])
            for k, copy_actors in enumerate(actors):
                for j, agent in enumerate(members):
                    if agent in copy_actors:
                        per_copy[k][agent] = values[k, j]
        return per_copy

    def _dict_arrays(self) -> Any:
        face = getattr(self, "_array_face", None)
        if face is None:
            from marlhub.vector.arrays import DictArrays

            assert self.single_observation_spaces is not None
            assert self.single_action_spaces is not None
            face = DictArrays(self.num_envs, self.autoreset_mode, self.groups,
                              self.single_observation_spaces.__getitem__,
                              self.single_action_spaces.__getitem__, self.name())
            self._array_face = face
        return face

    @property
    def unwrapped(self) -> "VectorMultiAgentEnv":
        """The vector env itself (RLlib reads ``env.unwrapped``)."""
        return self

    def reset(self, *, seed: Any = None,
              options: Optional[dict[str, Any]] = None) -> tuple[list[Any], list[Any]]:
        """Reset the copies; see the subclasses."""
        raise NotImplementedError

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        """Step the copies; see the subclasses."""
        raise NotImplementedError

    def render(self) -> Any:
        """Return each copy's ``render()``, as a tuple."""
        return self.call("render")

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call method ``name`` of every copy (or read the attribute); return the results."""
        raise NotImplementedError

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """Return attribute ``name`` of every copy, as a tuple."""
        return self.call(name)

    def close(self, **kwargs: Any) -> None:
        """Close every copy and release what the vector env holds; a second call does nothing."""
        if self.closed:
            return
        self.close_extras(**kwargs)
        self.closed = True

    def close_extras(self, **kwargs: Any) -> None:
        """Release the copies (subclasses)."""

    def __enter__(self) -> "VectorMultiAgentEnv":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "closed", True):
            self.close()

    def name(self) -> str:
        """Return how the vector env is named in messages: ``Class(env_id, num_envs=N)``."""
        inner = f"{self.env_id}, " if self.env_id else ""
        return f"{type(self).__name__}({inner}num_envs={self.num_envs})"

    def __repr__(self) -> str:
        return self.name()


def adopt_ray_base(module: Optional[ModuleType] = None) -> bool:
    """Make :class:`VectorMultiAgentEnv` a subclass of Ray's, if Ray's module is loaded.

    Args:
        module: Ray's module, when known; else looked up in ``sys.modules``.

    Returns:
        Whether the class is now a subclass of Ray's.

    Example:
        >>> adopt_ray_base() == (RAY_MODULE in sys.modules)
        True
    """
    module = module if module is not None else sys.modules.get(RAY_MODULE)
    ray_base = getattr(module, "VectorMultiAgentEnv", None)
    if not isinstance(ray_base, type):
        return False
    if VectorMultiAgentEnv.__bases__ == (_WithoutRay,):
        VectorMultiAgentEnv.__bases__ = (ray_base,)
    return issubclass(VectorMultiAgentEnv, ray_base)


class _AdoptAfterLoading(importlib.abc.Loader):
    """Runs Ray's module with its own loader, then calls :func:`adopt_ray_base`."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        adopt_ray_base(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, ... of the real loader
        return getattr(self.loader, name)


class _RayImportHook(importlib.abc.MetaPathFinder):
    """Finds Ray's module as the path finder does, with a loader that adopts its class."""

    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != RAY_MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _AdoptAfterLoading(spec.loader)
        return spec


def _install_hook() -> None:
    if adopt_ray_base():
        return
    try:
        ray_installed = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        ray_installed = False
    if ray_installed and not any(isinstance(f, _RayImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _RayImportHook())


_install_hook()
