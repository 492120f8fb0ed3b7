"""A batched face for array learners: fixed agent slots, arrays of ``(num_envs, num_agents, ...)``.

:class:`AgentSlotVectorEnv` turns a vector env of lists of dicts into a
``gymnasium.vector.VectorEnv`` whose observations, actions, rewards and done
flags are arrays with one row per copy and one column per agent slot (the
agents of ``possible_agents``, in that order), as SuperSuit and PufferLib
learners take them; ``arr.reshape(num_envs * num_agents, ...)`` makes it one
flat batch of agents. The agents must share one observation space and one
action space. Nobody pads for dead or idle agents: ``infos["acting"]`` says
which slots act in the next step (the others' actions are ignored) and
``infos["alive"]`` which agents have had an observation this episode and are
not done; slots without an observation this call hold zeros.

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
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from marlhub.core import ALL, AgentID
from marlhub.episode.status import done_agents, episode_over, flag
from marlhub.errors import VectorEnvError
from marlhub.spaces import find_action_mask, zero_like
from marlhub.vector.base import DISABLED, NEXT_STEP, VectorMultiAgentEnv

__all__ = ["AgentSlotVectorEnv"]

_GYMNASIUM_MODES = {"next_step": AutoresetMode.NEXT_STEP, "same_step": AutoresetMode.SAME_STEP,
                    "disabled": AutoresetMode.DISABLED}


class AgentSlotVectorEnv(VectorEnv):
    """``num_envs`` copies x ``num_agents`` slots, as one ``gymnasium.vector.VectorEnv``.

    Args:
        vector_env: a :class:`~marlhub.vector.SyncVectorMultiAgentEnv` or
            :class:`~marlhub.vector.AsyncVectorMultiAgentEnv` (its autoreset mode is kept).
        agents: the order of the slots: ``possible_agents`` (of every copy) in another
            order; ``possible_agents`` of the first copy by default.

    Attributes:
        agents: the agent of each slot.
        num_agents: how many slots each copy has.

    ``reset`` and ``step`` return arrays shaped ``(num_envs, num_agents, ...)``
    (a dict of such arrays for ``Dict`` observations), rewards as float64,
    terminations and truncations as bools (a slot ends when its agent is done,
    or when the episode ends while it is alive), and infos with ``"acting"``,
    ``"alive"``, ``"action_mask"`` (once the env has shown a mask: one row per slot,
    zeros for slots that do not act) and ``"infos"`` (each copy's own infos dict).

    Raises:
        VectorEnvError: the agents' spaces differ, or the copies have other agents.
    """

    def __init__(self, vector_env: VectorMultiAgentEnv,
                 agents: Optional[Sequence[AgentID]] = None) -> None:
        self.vector_env = vector_env
        first = vector_env.envs[0] if vector_env.envs else None
        self.agents = list(agents if agents is not None else getattr(first, "possible_agents", []))
        self.num_envs = vector_env.num_envs
        self.num_agents = len(self.agents)
        self.agent_observation_space = _one_space(vector_env, self.agents, "observation")
        self.agent_action_space = _one_space(vector_env, self.agents, "action")
        self.single_observation_space = batch_space(self.agent_observation_space, self.num_agents)
        self.single_action_space = batch_space(self.agent_action_space, self.num_agents)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {**vector_env.metadata,
                         "autoreset_mode": _GYMNASIUM_MODES[vector_env.autoreset_mode]}
        self.render_mode = vector_env.render_mode
        self._blank = zero_like(self.agent_observation_space)
        self._alive: list[set[AgentID]] = [set() for _ in range(self.num_envs)]
        self._ended = [False] * self.num_envs
        self._mask_size: Optional[int] = None

    def reset(self, *, seed: Any = None,
              options: Optional[dict[str, Any]] = None) -> tuple[Any, dict[str, Any]]:
        """Reset the copies (see the vector env's ``reset``); return the obs array and infos."""
        obs, infos = self.vector_env.reset(seed=seed, options=options)
        mask = None if not options or "reset_mask" not in options else options["reset_mask"]
        for i, ob in enumerate(obs):
            if mask is None or mask[i]:
                self._alive[i] = set(ob)
                self._ended[i] = False
        return self._obs_array(obs), self._infos(obs, infos)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step with one action per slot (shape ``(num_envs, num_agents, ...)``); idle slots' are ignored.

        Raises:
            VectorEnvError: ``actions`` does not have one row per copy and one entry per slot.
            ActionError: an acting slot's action is not legal (copy and agent named).
        """
        per_copy = self._action_dicts(actions)
        obs, rewards, terminateds, truncateds, infos = self.vector_env.step(per_copy)
        reward_array = np.zeros((self.num_envs, self.num_agents), np.float64)
        terminations = np.zeros((self.num_envs, self.num_agents), np.bool_)
        truncations = np.zeros((self.num_envs, self.num_agents), np.bool_)
        slot = {agent: j for j, agent in enumerate(self.agents)}
        for i in range(self.num_envs):
            for agent, reward in rewards[i].items():
                reward_array[i, slot[agent]] += float(reward)
            self._record_ends(i, obs[i], terminateds[i], truncateds[i], slot, terminations[i],
                              truncations[i])
        return (self._obs_array(obs), reward_array, terminations, truncations,
                self._infos(obs, infos))

    def _record_ends(self, i: int, obs: Any, terminateds: Any, truncateds: Any,
                     slot: dict[AgentID, int], terminations: np.ndarray,
                     truncations: np.ndarray) -> None:
        """Set copy ``i``'s done flags per slot and update who is alive."""
        if self._ended[i]:  # this call reset the copy (next_step), or it stays ended
            self._ended[i] = self.vector_env.autoreset_mode == DISABLED
            self._alive[i] = set() if self._ended[i] else set(obs)
            return
        alive = self._alive[i] | set(obs)
        for agent in done_agents(terminateds):
            terminations[slot[agent]] = True
        for agent in done_agents(truncateds):
            truncations[slot[agent]] = True
        if episode_over(terminateds, truncateds):
            for agent in alive:
                terminations[slot[agent]] |= flag(terminateds, ALL)
                truncations[slot[agent]] |= flag(truncateds, ALL)
            self._ended[i] = self.vector_env.autoreset_mode in (NEXT_STEP, DISABLED)
            alive = set() if self._ended[i] else set(obs)  # same_step: obs is the reset's
        else:
            alive -= done_agents(terminateds, truncateds)
        self._alive[i] = alive

    def _action_dicts(self, actions: Any) -> list[dict[AgentID, Any]]:
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
        slot = {agent: j for j, agent in enumerate(self.agents)}
        return [{agent: actions[i, slot[agent]] for agent in actors}
                for i, actors in enumerate(self.vector_env.actors)]

    def _obs_array(self, obs: Sequence[Any]) -> Any:
        blank = self._blank
        items = [ob.get(agent, blank) for ob in obs for agent in self.agents]
        out: Any = create_empty_array(self.agent_observation_space, n=len(items), fn=np.zeros)
        flat = concatenate(self.agent_observation_space, items, out)
        return _reshape(flat, (self.num_envs, self.num_agents))

    def _infos(self, obs: Sequence[Any], infos: Sequence[Any]) -> dict[str, Any]:
        acting = np.zeros((self.num_envs, self.num_agents), np.bool_)
        alive = np.zeros((self.num_envs, self.num_agents), np.bool_)
        masks: Optional[np.ndarray] = None
        if self._mask_size is not None:
            masks = np.zeros((self.num_envs, self.num_agents, self._mask_size), np.int8)
        for i, actors in enumerate(self.vector_env.actors):
            for j, agent in enumerate(self.agents):
                acting[i, j] = agent in actors
                alive[i, j] = agent in self._alive[i]
                mask = find_action_mask(obs[i].get(agent), infos[i].get(agent)) \
                    if acting[i, j] else None
                if mask is not None:
                    if masks is None:  # the first mask seen: from now on, always a mask array
                        self._mask_size = mask.size
                        masks = np.zeros((self.num_envs, self.num_agents, mask.size), np.int8)
                    masks[i, j] = mask
        found: dict[str, Any] = {"acting": acting, "alive": alive, "infos": list(infos)}
        if masks is not None:
            found["action_mask"] = masks
        return found

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


def _one_space(vector_env: VectorMultiAgentEnv, agents: list[AgentID], kind: str) -> gym.Space:
    """The one space of ``kind`` that every slot's agent has in every copy, or raise."""
    spaces: dict[AgentID, gym.Space] = {}
    for copy_index, env in enumerate(vector_env.envs):
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


def _reshape(flat: Any, lead: tuple[int, int]) -> Any:
    if isinstance(flat, dict):
        return {key: _reshape(value, lead) for key, value in flat.items()}
    if isinstance(flat, tuple):
        return tuple(_reshape(value, lead) for value in flat)
    return flat.reshape(lead + flat.shape[1:])
