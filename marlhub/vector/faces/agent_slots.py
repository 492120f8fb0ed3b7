"""A ``gymnasium.vector.VectorEnv`` of fixed agent slots: arrays of ``(num_envs, num_agents, ...)``.

:class:`AgentSlotVectorEnv` reads a vector env's array face for agents that share one
observation and one action space. Nobody pads for dead or idle agents:
``infos["acting"]`` says which slots act next (the others' actions are ignored),
``infos["alive"]`` which agents were seen this episode and are not done.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> from marlhub.vector import SyncVectorMultiAgentEnv
    >>> envs = AgentSlotVectorEnv(SyncVectorMultiAgentEnv([RockPaperScissors] * 3))
    >>> obs, infos = envs.reset(seed=0)
    >>> obs.shape, infos["acting"].all()
    ((3, 2), np.True_)
    >>> obs, rewards, terminations, truncations, infos = envs.step(np.array([[0, 1]] * 3))
    >>> rewards[0], envs.action_space
    (array([-1.,  1.]), Box(0, 2, (3, 2), int64))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from marlhub.core import AgentID
from marlhub.errors import VectorEnvError
from marlhub.vector.base import VectorMultiAgentEnv
from marlhub.vector.faces.arrays import ArrayBatch
from marlhub.vector.sources.batched import BatchedVectorEnv

__all__ = ["AgentSlotVectorEnv"]

_GYMNASIUM_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
                    "disabled": AutoresetMode.DISABLED}


class AgentSlotVectorEnv(VectorEnv):
    """``num_envs`` copies x ``num_agents`` slots of any ``vector_env`` (its autoreset mode
    kept; a batched simulator's or the workers' shared arrays handed on as they are).

    ``agents`` orders the slots (``possible_agents`` by default). ``reset`` and ``step``
    return arrays ``(num_envs, num_agents, ...)``, float64 rewards, bool terminations and
    truncations (a slot ends when its agent is done or the episode ends while it is
    alive), and infos ``"acting"``, ``"alive"``, ``"action_mask"`` (once shown; zeros for
    slots that do not act) and ``"infos"`` (each copy's own). Raises ``VectorEnvError``
    when the agents' spaces differ or the copies have other agents.
    """

    def __init__(self, vector_env: VectorMultiAgentEnv,
                 agents: Optional[Sequence[AgentID]] = None) -> None:
        self.vector_env = vector_env
        # a batched simulator's or the workers' shared arrays keep the group's order
        own_arrays = isinstance(vector_env, BatchedVectorEnv) or \
            bool(getattr(vector_env, "array_face", False))
        first = vector_env.envs[0] if vector_env.envs else vector_env
        self.agents = list(agents if agents is not None else getattr(first, "possible_agents", []))
        self.num_envs = vector_env.num_envs
        self.num_agents = len(self.agents)
        self.agent_observation_space = _one_space(vector_env, self.agents, "observation")
        self.agent_action_space = _one_space(vector_env, self.agents, "action")
        self._group, self._order = _one_group(vector_env, self.agents, own_arrays)
        self.single_observation_space = batch_space(self.agent_observation_space, self.num_agents)
        self.single_action_space = batch_space(self.agent_action_space, self.num_agents)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**vector_env.metadata,
                         "autoreset_mode": _GYMNASIUM_MODES[vector_env.autoreset_mode]}
        self.render_mode = vector_env.render_mode

    def reset(self, *, seed: Any = None,
              options: Optional[dict[str, Any]] = None) -> tuple[Any, dict[str, Any]]:
        """Reset the copies (see the vector env's ``reset``); return the obs array and infos."""
        batch = self.vector_env.reset_arrays(seed=seed, options=options)
        obs_array, _, _, _, found = self._from_batch(batch)
        return obs_array, found

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step with one action per slot, ``(num_envs, num_agents, ...)``; idle slots' are
        ignored (raises ``VectorEnvError`` for a wrong shape, ``ActionError`` for a bad action)."""
        if self._order is not None or not hasattr(actions, "detach"):
            actions = self._checked_shape(actions)
        if self._order is not None:  # back to the group's order
            actions = actions[:, np.argsort(self._order)]
        return self._from_batch(self.vector_env.step_arrays({self._group: actions}))

    def _from_batch(self, batch: ArrayBatch) -> tuple[Any, ...]:
        """The five values of the slots' group of ``batch``, in the slots' order."""
        group, pick = self._group, self._slots
        acting = pick(batch.acting[group])
        infos: dict[str, Any] = {"acting": acting, "alive": pick(batch.alive[group]),
                                 "infos": batch.infos}
        if group in batch.action_mask:  # zeros for slots that do not act
            infos["action_mask"] = pick(batch.action_mask[group]) * acting[..., None]
        rewards = pick(batch.rewards[group])
        if not hasattr(rewards, "detach"):
            rewards = np.asarray(rewards, dtype=np.float64)
        return (pick(batch.obs[group]), rewards, pick(batch.terminated[group]),
                pick(batch.truncated[group]), infos)

    def _slots(self, value: Any) -> Any:
        """``value``'s columns in the slots' order (itself where that is the group's)."""
        if self._order is None:
            return value
        if isinstance(value, dict):
            return {key: self._slots(sub) for key, sub in value.items()}
        return value[:, self._order]

    def _checked_shape(self, actions: Any) -> np.ndarray:
        """``actions`` as a numpy array of one action per copy and slot, or raise."""
        shape = (self.num_envs, self.num_agents)
        if isinstance(self.agent_action_space, gym.spaces.Box):
            actions = np.asarray(actions, dtype=self.agent_action_space.dtype)
        else:
            actions = np.asarray(actions)
        if actions.shape[:2] != shape:
            raise VectorEnvError(
                self.vector_env.name(), f"step() got actions of shape {actions.shape}, not "
                f"{shape} + the action's own shape",
                "Pass one action per copy and slot, e.g. action_space.sample(); slots that do "
                "not act are ignored (infos['acting'] says which act).")
        return actions

    def render(self) -> Any:
        """Each copy's ``render()``."""
        return self.vector_env.render()

    def close_extras(self, **kwargs: Any) -> None:
        """Close the vector env underneath."""
        self.vector_env.close(**kwargs)

    def __enter__(self) -> "AgentSlotVectorEnv":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _one_group(vector_env: VectorMultiAgentEnv, agents: list[AgentID],
               own_arrays: bool) -> tuple[str, Optional[list[int]]]:
    """The group whose slots are ``agents``, and each slot's place in it (None: the same
    order); raise when there is none (or the order differs in arrays the env makes itself)."""
    for name, members in vector_env.groups.items():
        if members == agents:
            return name, None
        if not own_arrays and sorted(map(str, members)) == sorted(map(str, agents)) \
                and len(members) == len(agents):
            return name, [members.index(agent) for agent in agents]
    raise VectorEnvError(
        vector_env.name(), f"the agents {agents} are not one group of the vector env's array "
        f"face (its groups: {vector_env.groups})",
        "Agent slots over a batched simulator or the workers' array face are the agents of "
        "its one group, in its order; for several groups, use the vector env's step_arrays "
        "(one array per group).")


def _one_space(vector_env: VectorMultiAgentEnv, agents: list[AgentID], kind: str) -> gym.Space:
    """The one space of ``kind`` that every slot's agent has in every copy, or raise."""
    spaces: dict[AgentID, gym.Space] = {}
    for copy_index, env in enumerate(vector_env.envs or [vector_env]):
        possible = list(getattr(env, "possible_agents", []))
        if set(possible) != set(agents):
            raise VectorEnvError(
                vector_env.name(), f"copy {copy_index} has the agents {possible}, not the slots' "
                f"{agents}", "Give every copy the same possible_agents; agents= only orders "
                "the slots.")
        getter = getattr(env, f"get_{kind}_space")
        for agent in agents:
            spaces.setdefault(agent, getter(agent))
    first = next(iter(spaces.values()))
    if not all(space == first for space in spaces.values()):
        raise VectorEnvError(
            vector_env.name(), f"the agents' {kind} spaces differ "
            f"({', '.join(f'{a!r}: {s}' for a, s in spaces.items())})",
            "Agent slots need one space for all agents: use the vector env itself (lists of "
            "dicts), or group the agents that share a space (with_agent_groups).")
    return first
