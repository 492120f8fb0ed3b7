"""What every vector env of marlhub shares: the base class, autoreset modes, seeds, reset masks.

:class:`VectorMultiAgentEnv` is call-compatible with RLlib's
``ray.rllib.env.vector.vector_multi_agent_env.VectorMultiAgentEnv`` and, when
Ray is installed, a subclass of it, so RLlib's env runners take it; yet
``import marlhub`` does not import Ray (its import takes seconds). Until Ray's
module is imported, the base class stands in for Ray's; as soon as it is
(by anyone, before or after marlhub), :func:`adopt_ray_base` puts Ray's class
in its place (an import hook calls it right after Ray's module runs).

The autoreset modes live in :mod:`marlhub.vector.autoreset` and the checks of the
calls' arguments in :mod:`marlhub.vector.arguments` (both named here too, for code
written against earlier releases).

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> from marlhub.vector import SyncVectorMultiAgentEnv
    >>> envs = SyncVectorMultiAgentEnv([RockPaperScissors] * 2)
    >>> isinstance(envs, VectorMultiAgentEnv), envs.batch_size
    (True, 2)
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
from marlhub.vector.arguments import one_seed, reset_mask_of, seeds_for, values_per_copy
from marlhub.vector.autoreset import (
    AUTORESET_MODES,
    DISABLED,
    NEXT_STEP,
    SAME_STEP,
    parse_autoreset_mode,
)
from marlhub.vector.book import ARRAYS, DICTS
from marlhub.vector.ready import ReceivedArrays

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
    # Where each copy stands, the cycle and the face that holds the episode (the source's).
    _book: Any = None
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

    # -- the faces, written once over each source's calls ---------------------------------
    # A source implements _reset(seed, options) -> (obs, infos), _step(actions) -> the five
    # lists, _async_reset(seed, options, face), _send(actions, copy_ids) and _recv() ->
    # Received, each recording in the book; the faces below check that they hold the
    # episode and convert. Sources with arrays of their own override the array forms.

    def reset(self, *, seed: Any = None,
              options: Optional[dict[str, Any]] = None) -> tuple[list[Any], list[Any]]:
        """Reset every copy (copy ``i`` seeded ``seed + i``); return ``(obs_list, infos_list)``.

        Args:
            seed: an int (copy ``i`` gets ``seed + i``), one seed per copy, or None.
            options: passed to every copy's ``reset``, except ``"reset_mask"``: a bool
                array, one per copy, that resets only the copies where it is True; the
                others return their actors' last obs and infos and go on.
        """
        masked = _masked(options)
        if masked:
            self._book.check_face(DICTS, "reset()")
        obs, infos = self._reset(seed, options)
        if not masked:
            self._book.claim_face(DICTS)
        return obs, infos

    def step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        """Step every copy with its action dict; return the five per-copy lists.

        Raises:
            ActionError: the list's length, or one copy's action dict, is wrong (the
                copy and agent are named); no copy was stepped.
            ResetNeededError: before ``reset``, or after a copy raised in the last call.
        """
        if self._book.face is not DICTS:
            self._book.check_face(DICTS, "step()")
        return self._step(actions)

    def async_reset(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """Start a reset of every copy (or of those ``options["reset_mask"]`` selects, which
        must be held or parked); :meth:`recv` returns them, rewards ``{}`` and done flags False."""
        self._async_reset(seed, options, DICTS)

    def send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Step exactly the copies ``copy_ids`` (``actions[k]`` for ``copy_ids[k]``); their
        results come from :meth:`recv`.

        Raises:
            VectorEnvError: a copy that is not held (not returned by the last :meth:`recv`,
                or sent twice), or a count of actions that does not match.
            ActionError: a bad action dict (copy and agent named); no copy was stepped.
        """
        self._book.check_face(DICTS, "send()", cycle=True)
        self._send(actions, copy_ids)

    def recv(self) -> Any:
        """Return the next :attr:`batch_size` ready copies' results, first stepped first (fewer
        when no more can come), as :class:`~marlhub.vector.ready.Received`: the five lists
        of :meth:`step` and ``copy_ids``.

        Raises:
            VectorEnvError: no copy is ready or running.
        """
        self._book.check_face(DICTS, "recv()", cycle=True)
        return self._recv()

    @property
    def batch_size(self) -> int:
        """How many copies :meth:`recv` returns."""
        return int(self._book.cycle.batch_size)

    def reset_arrays(self, *, seed: Any = None, options: Optional[dict[str, Any]] = None) -> Any:
        """Reset as :meth:`reset` does; return the array face's
        :class:`~marlhub.vector.faces.arrays.ArrayBatch` (per group, ``(num_envs, n, ...)``).

        The arrays are built from the copies' dicts; the array face holds the episode
        (one face per episode: it keeps who is alive from the calls it converts).
        """
        mask = options["reset_mask"] if _masked(options) else None  # type: ignore[index]
        if mask is not None:
            self._book.check_face(ARRAYS, "reset_arrays()")
        obs, infos = self._reset(seed, options)
        if mask is None:
            self._book.claim_face(ARRAYS)
        return self._dict_arrays().reset(obs, infos, self.actors, mask)

    def step_arrays(self, actions: Any) -> Any:
        """Step with one action array per group (``(num_envs, n, ...)``; slots that do not
        act are ignored); return the :class:`~marlhub.vector.faces.arrays.ArrayBatch`.

        Raises:
            VectorEnvError: a missing group, or an array of the wrong shape or dtype.
            ActionError: an acting slot's action outside its space or mask.
        """
        self._book.check_face(ARRAYS, "step_arrays()")
        per_copy = self._action_dicts(actions, range(self.num_envs), None)
        return self._dict_arrays().step(self._step(per_copy), self.actors, self._book.outcomes)

    def async_reset_arrays(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """``async_reset`` on the array face: :meth:`recv_arrays` returns the copies reset."""
        self._async_reset(seed, options, ARRAYS)

    def recv_arrays(self) -> Any:
        """``recv()`` on the array face: the next ``batch_size`` ready copies as
        :class:`~marlhub.vector.ready.ReceivedArrays`, the
        :class:`~marlhub.vector.faces.arrays.ArrayBatch` of their rows and their ``copy_ids``."""
        self._book.check_face(ARRAYS, "recv_arrays()", cycle=True)
        got = self._recv()
        rows = got.copy_ids.tolist()
        batch = self._dict_arrays().step(tuple(got[:5]), self.actors, self._book.outcomes,
                                         rows=rows)
        return ReceivedArrays(batch, got.copy_ids)

    def send_arrays(self, actions: Any, copy_ids: Any) -> None:
        """``send()`` on the array face: per group, one row of actions per copy id
        (``(len(copy_ids), n, ...)``); :meth:`recv_arrays` returns their results."""
        self._book.check_face(ARRAYS, "send_arrays()", cycle=True)
        rows = self._book.cycle.check_send(copy_ids)
        self._send(self._action_dicts(actions, rows, rows), rows)

    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        """Reset the copies (the source's); record it in the book; return the two lists."""
        raise NotImplementedError

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        """Step every copy with checked actions (the source's); record it; return the lists."""
        raise NotImplementedError

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        """Start a reset of some copies for ``recv`` in ``face`` (the source's)."""
        raise NotImplementedError

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Start a step of the copies ``copy_ids`` (the source's)."""
        raise NotImplementedError

    def _recv(self) -> Any:
        """The next ready copies' results, recorded in the book (the source's)."""
        raise NotImplementedError

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
            from marlhub.vector.faces.arrays import DictArrays

            assert self.single_observation_spaces is not None
            assert self.single_action_spaces is not None
            face = DictArrays(self.num_envs, self.groups,
                              self.single_observation_spaces.__getitem__,
                              self.single_action_spaces.__getitem__, self.name())
            self._array_face = face
        return face

    @property
    def unwrapped(self) -> "VectorMultiAgentEnv":
        """The vector env itself (RLlib reads ``env.unwrapped``)."""
        return self

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

    def _repr_html_(self) -> str:
        """In a notebook: its copies, how they run, and the array face's groups."""
        from marlhub.display import html_table

        observation, action = self.single_observation_spaces, self.single_action_spaces
        rows = [[name, ", ".join(map(str, agents)),
                 observation[agents[0]] if observation else "",
                 action[agents[0]] if action else ""]
                for name, agents in self.groups.items()] if observation else []
        caption = (f"{self.name()}: autoreset_mode={self.autoreset_mode!r}, "
                   f"batch_size={self.batch_size}")
        return html_table(caption, ["group", "agents", "observation space", "action space"],
                          rows)


def _masked(options: Optional[Mapping[str, Any]]) -> bool:
    return options is not None and "reset_mask" in options


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
