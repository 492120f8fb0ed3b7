"""The base of every vector env: the faces, written once over each source's five calls.

:class:`VectorMultiAgentEnv` is call-compatible with RLlib's ``VectorMultiAgentEnv`` and
a subclass of it once Ray's module is imported, by anyone, before or after marlhub
(:func:`adopt_ray_base`); ``import marlhub`` imports no Ray. The autoreset modes and the
argument checks are named here too, for code written against earlier releases.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> from marlhub.vector import SyncVectorMultiAgentEnv
    >>> envs = SyncVectorMultiAgentEnv([RockPaperScissors] * 2)
    >>> isinstance(envs, VectorMultiAgentEnv), envs.batch_size
    (True, 2)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.backends import when_imported
from marlhub.core import AgentID
from marlhub.errors import VectorEnvError
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

__all__ = ["AUTORESET_MODES", "DISABLED", "NEXT_STEP", "SAME_STEP", "VectorMultiAgentEnv",
           "adopt_ray_base", "one_seed", "parse_autoreset_mode", "reset_mask_of", "seeds_for",
           "values_per_copy"]

#: The module that defines Ray's class.
RAY_MODULE = "ray.rllib.env.vector.vector_multi_agent_env"


class _WithoutRay:
    """Stands where Ray's ``VectorMultiAgentEnv`` goes until Ray's module is imported."""


class VectorMultiAgentEnv(_WithoutRay):
    """Many copies of a hub env stepped as one: lists of ``num_envs`` per-copy dicts in and
    out (``reset``, ``step``), arrays per group (``reset_arrays``, ``step_arrays``), and
    whichever copies are ready (``async_reset``, ``send``, ``recv`` and their array forms).

    Attributes:
        num_envs: how many copies; ``env_id``: the registry id, when known.
        autoreset_mode: one of :data:`AUTORESET_MODES`, also in ``metadata["autoreset_mode"]``.
        single_observation_spaces, single_action_spaces: one copy's spaces by agent (and
            as ``gymnasium.spaces.Dict``: ``single_observation_space``, ...).
    """

    metadata: dict[str, Any] = {}
    render_mode: Optional[str] = None
    closed: bool = False
    num_envs: int = 0
    env_id: Optional[str] = None
    autoreset_mode: str = NEXT_STEP
    _book: Any = None  # the source's CopyBook
    envs: list[Any] = []  # the copies, or RemoteCopy views of them
    single_observation_spaces: Optional[dict[AgentID, gym.Space]] = None
    single_action_spaces: Optional[dict[AgentID, gym.Space]] = None
    single_observation_space: Optional[gym.spaces.Dict] = None
    single_action_space: Optional[gym.spaces.Dict] = None
    observation_space: Optional[gym.Space] = None
    action_space: Optional[gym.Space] = None
    reward_spaces: dict[AgentID, gym.Space] = {}  # agents paid arrays (marlhub.rewards)

    def _adopt_description(self, first: Mapping[str, Any]) -> None:
        """Take metadata, render mode and spaces from one copy's :func:`describe_env
        <marlhub.vector.copies.describe_env>`."""
        self.metadata = {**first["metadata"], "autoreset_mode": self.autoreset_mode}
        self.render_mode = first["render_mode"]
        possible_agents = first["possible_agents"]
        observation_spaces = first["observation_spaces"]
        action_spaces = first["action_spaces"]
        self.single_observation_spaces = {a: observation_spaces[a] for a in possible_agents}
        self.single_action_spaces = {a: action_spaces[a] for a in possible_agents}
        self.reward_spaces = {a: s for a, s in (first.get("reward_spaces") or {}).items() if s}
        # Agent ids are any hashable; gymnasium's annotation says str.
        self.single_observation_space = gym.spaces.Dict(cast(Any, self.single_observation_spaces))
        self.single_action_space = gym.spaces.Dict(cast(Any, self.single_action_spaces))

    @property
    def actors(self) -> list[list[AgentID]]:
        """Each copy's agents that act in the next ``step``: the keys its action dict takes."""
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
        """The array face's groups: name -> agents that share both spaces (and reward shape)."""
        found: Optional[dict[str, list[AgentID]]] = self.__dict__.get("_found_groups")
        if found is None:
            from marlhub.adapters.batched import group_agents

            observation, action = self.single_observation_spaces, self.single_action_spaces
            assert observation is not None and action is not None
            found = group_agents(self.possible_agents, observation.__getitem__,
                                 action.__getitem__, self.reward_spaces.get)
            self._found_groups = found
        return found

    # -- the faces, over the source's _reset, _step, _async_reset, _send and _recv -------

    def reset(self, *, seed: Any = None,
              options: Optional[dict[str, Any]] = None) -> tuple[list[Any], list[Any]]:
        """Reset every copy (copy ``i`` seeded ``seed + i``, or one seed per copy); return
        ``(obs_list, infos_list)``. ``options["reset_mask"]`` (one bool per copy) resets only
        those copies; the others return their actors' last obs and infos and go on."""
        self._check_open()
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
            ActionError: a bad list or action dict (copy and agent named); no copy moved.
            ResetNeededError: before ``reset``, or after a copy raised.
        """
        if self.closed:
            self._check_open()
        if self._book.face is not DICTS:
            self._book.check_face(DICTS, "step()")
        return self._step(actions)

    def async_reset(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """Start a reset of every copy (or of the held or parked ones a ``reset_mask``
        selects); :meth:`recv` returns them."""
        self._check_open()
        self._async_reset(seed, options, DICTS)

    def send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        """Step the copies ``copy_ids`` (``actions[k]`` for ``copy_ids[k]``); :meth:`recv`
        returns their results.

        Raises:
            VectorEnvError: a copy not held (not returned by the last :meth:`recv`), or twice.
            ActionError: a bad action dict (copy and agent named); no copy moved.
        """
        self._check_open()
        self._book.check_face(DICTS, "send()", cycle=True)
        self._send(actions, copy_ids)

    def recv(self) -> Any:
        """The next :attr:`batch_size` ready copies, first in first out, as
        :class:`~marlhub.vector.ready.Received` (the five lists and ``copy_ids``).

        Raises:
            VectorEnvError: no copy is ready or running.
        """
        self._check_open()
        self._book.check_face(DICTS, "recv()", cycle=True)
        return self._recv()

    @property
    def batch_size(self) -> int:
        """How many copies :meth:`recv` returns."""
        return int(self._book.cycle.batch_size)

    def reset_arrays(self, *, seed: Any = None, options: Optional[dict[str, Any]] = None) -> Any:
        """Reset as :meth:`reset` does; return the
        :class:`~marlhub.vector.faces.arrays.ArrayBatch` (per group, ``(num_envs, n, ...)``).
        The array face then holds the episode (one face per episode)."""
        self._check_open()
        masked = _masked(options)
        if masked:
            self._book.check_face(ARRAYS, "reset_arrays()")
        batch = self._reset_batch(seed, options)
        if not masked:
            self._book.claim_face(ARRAYS)
        return batch

    def step_arrays(self, actions: Any) -> Any:
        """Step with one action array per group (``(num_envs, n, ...)``; slots that do not
        act are ignored); return the :class:`~marlhub.vector.faces.arrays.ArrayBatch`.

        Raises:
            VectorEnvError: a missing group, or an array of the wrong shape or dtype.
            ActionError: an acting slot's action outside its space or mask.
        """
        self._check_open()
        self._book.check_face(ARRAYS, "step_arrays()")
        return self._step_batch(actions)

    def async_reset_arrays(self, seed: Any = None, options: Optional[dict[str, Any]] = None) -> None:
        """``async_reset`` on the array face: :meth:`recv_arrays` returns the copies reset."""
        self._check_open()
        self._async_reset(seed, options, ARRAYS)

    def recv_arrays(self) -> Any:
        """``recv()`` on the array face: :class:`~marlhub.vector.ready.ReceivedArrays`."""
        self._check_open()
        self._book.check_face(ARRAYS, "recv_arrays()", cycle=True)
        return self._recv_batch()

    def send_arrays(self, actions: Any, copy_ids: Any) -> None:
        """``send()`` on the array face: per group, ``(len(copy_ids), n, ...)`` actions."""
        self._check_open()
        self._book.check_face(ARRAYS, "send_arrays()", cycle=True)
        self._send_batch(actions, copy_ids)

    # The array forms of the source's calls: built from its dicts, unless it has arrays.
    def _reset_batch(self, seed: Any, options: Optional[dict[str, Any]]) -> Any:
        obs, infos = self._reset(seed, options)
        mask = options["reset_mask"] if _masked(options) else None  # type: ignore[index]
        return self._dict_arrays().reset(obs, infos, self.actors, mask)

    def _step_batch(self, actions: Any) -> Any:
        per_copy = self._action_dicts(actions, range(self.num_envs), None)
        return self._dict_arrays().step(self._step(per_copy), self.actors, self._book.outcomes)

    def _recv_batch(self) -> Any:
        got = self._recv()
        batch = self._dict_arrays().step(tuple(got[:5]), self.actors, self._book.outcomes,
                                         rows=got.copy_ids.tolist())
        return ReceivedArrays(batch, got.copy_ids)

    def _send_batch(self, actions: Any, copy_ids: Any) -> None:
        rows = self._book.cycle.check_send(copy_ids)
        self._send(self._action_dicts(actions, rows, rows), rows)

    # The source's calls, each recording what it did in the book.
    def _reset(self, seed: Any, options: Optional[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
        raise NotImplementedError

    def _step(self, actions: Sequence[Any]) -> tuple[list[Any], ...]:
        raise NotImplementedError

    def _async_reset(self, seed: Any, options: Optional[dict[str, Any]], face: str) -> None:
        raise NotImplementedError

    def _send(self, actions: Sequence[Any], copy_ids: Any) -> None:
        raise NotImplementedError

    def _recv(self) -> Any:
        raise NotImplementedError

    def _action_dicts(self, actions: Any, rows: Sequence[int],
                      copy_ids: Optional[Sequence[int]]) -> list[dict[AgentID, Any]]:
        """The action dicts of the copies ``rows`` from one array per group, checked against
        the spaces (the masks: by the dicts' check)."""
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
                              self.single_action_spaces.__getitem__, self.name(),
                              self.reward_spaces.get)
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

    def _check_open(self) -> None:
        if self.closed:
            raise VectorEnvError(self.name(), "it was closed",
                                 "Make a new vector env; close() is final.")

    def close(self, **kwargs: Any) -> None:
        """Close every copy; a second call does nothing."""
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
    """Make :class:`VectorMultiAgentEnv` a subclass of Ray's (found in ``module``, or in
    ``sys.modules``) if Ray's module is loaded; return whether it is.

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


when_imported(RAY_MODULE, adopt_ray_base)
