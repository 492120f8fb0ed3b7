"""skrl's multi-agent env of agent slots: IPPO and MAPPO on any hub env, every agent always there.

skrl's multi-agent learners keep one model and one memory per agent and read every
agent's observation, reward and done flags at every step, as tensors of ``num_envs``
rows; they reset nothing themselves when ``num_envs > 1`` (the env starts the next
episode of a copy in the step that ends it). Agents that come and go break that
through skrl's own PettingZoo wrapper (a missing agent is a ``KeyError``).
:class:`SkrlEnv` subclasses skrl's ``MultiAgentEnvWrapper`` over
:class:`~marlhub.learners.slots.AgentSlots`: agent ``k``'s tensors are its slots' rows,
copy by copy, with the slots' one documented treatment (a waiting agent shows its
latest observation and its action is ignored; an agent that left or has not joined
shows zeros, reward 0, never done; a done agent is done once, the next episode's
observation returned). Observations that are not float ``Box`` es are flattened as
``gymnasium.spaces.flatten`` flattens them (one-hot for discrete values: skrl's networks
take float rows); observations and actions then go through skrl's own space
conversions (``tensorize_space``, ``flatten_tensorized_space``), as its PettingZoo
wrapper passes them. Where the copies have a global state (``state_space``), every
agent's ``state()`` is its copy's, for MAPPO's critic.

skrl has no action masks: a learner on a game with masks takes
``illegal_action="substitute"`` (or ``"terminate"``) in :func:`marlhub.learners.to_skrl`,
and waiting agents' transitions enter its memory as plain PPO's do in SB3.

Made by :func:`marlhub.learners.to_skrl`; this module imports skrl and torch.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np
import torch
from skrl import config
from skrl.envs.wrappers.torch import MultiAgentEnvWrapper
from skrl.utils.spaces.torch import (
    flatten_tensorized_space,
    tensorize_space,
    unflatten_tensorized_space,
    untensorize_space,
)

from marlhub.errors import VectorEnvError
from marlhub.learners.padding import flat_rows, padded_observation_space
from marlhub.learners.slots import AgentSlots, SlotStep

__all__ = ["SkrlEnv"]


class SkrlEnv(MultiAgentEnvWrapper):
    """A skrl multi-agent env: every agent of the slots, ``num_envs`` copies each.

    Args:
        slots: the slots of a vector env made with ``autoreset_mode="same_step"``.
        device: the torch device of the tensors (skrl's default device for None).
        seed: the seed of the first reset (copy ``i`` seeded ``seed + i``); None: skrl's
            own (``skrl.config.torch.key``, which ``skrl.utils.set_seed`` sets), as skrl's
            PettingZoo wrapper seeds it. Later resets are unseeded.

    Attributes:
        slots: the :class:`~marlhub.learners.slots.AgentSlots` underneath.
        last: the last :class:`~marlhub.learners.slots.SlotStep` (``final_obs`` of the
            agents done in it, ``acting``, ``alive``).
    """

    def __init__(self, slots: AgentSlots, device: Any = None,
                 seed: Optional[int] = None) -> None:
        super().__init__(slots)
        self._seed: Optional[int] = int(config.torch.key) if seed is None else seed
        if device is not None:
            self._device = torch.device(device)
        self.slots = slots
        self.vector_env = slots.vector_env
        agents = [str(a) for a in slots.agents]
        if len(set(agents)) != len(agents):
            raise VectorEnvError(self.vector_env.name(), f"agents {slots.agents!r} are not "
                                 "told apart as strings", "skrl names agents by str: give "
                                 "them distinct names (RenameAgents).")
        self._agents = agents
        self._state_space: Optional[gym.Space] = _state_space(self.vector_env)
        # skrl's networks take float rows: other observations are flattened as gymnasium
        # flattens them (one-hot for discrete values), as one_space's slots are
        space = slots.observation_space
        self._flatten = not (isinstance(space, gym.spaces.Box)
                             and np.issubdtype(space.dtype, np.floating))
        self._observation_space = padded_observation_space(self.vector_env.name(),
                                                           {"all": space}) \
            if self._flatten else space
        self.last: Optional[SlotStep] = None

    # -- what skrl reads ---------------------------------------------------------------

    @property
    def num_envs(self) -> int:
        """How many copies (rows of every agent's tensors)."""
        return int(self.slots.num_envs)

    @property
    def agents(self) -> list[str]:
        """Every agent, always (an agent that is not in the episode has an empty slot)."""
        return list(self._agents)

    @property
    def possible_agents(self) -> list[str]:
        """Every agent, in slot order."""
        return list(self._agents)

    @property
    def observation_spaces(self) -> dict[str, gym.Space]:
        """One slot's observation space, for every agent."""
        return {a: self._observation_space for a in self._agents}

    @property
    def action_spaces(self) -> dict[str, gym.Space]:
        """One slot's action space, for every agent."""
        return {a: self.slots.action_space for a in self._agents}

    @property
    def state_spaces(self) -> dict[str, Optional[gym.Space]]:
        """The copies' global state space for every agent (None where they have none)."""
        return {a: self._state_space for a in self._agents}

    # -- the calls ---------------------------------------------------------------------

    def reset(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Reset every copy; return each agent's observations and ``{"copies": infos}``."""
        self.last = self.slots.reset(seed=self._seed)
        self._seed = None
        return self._observations(self.last), {"copies": self.last.infos}

    def step(self, actions: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], ...]:
        """Step every copy with each agent's ``(num_envs, ...)`` actions (ignored where the
        agent does not act); return observations, rewards, terminated, truncated (each
        ``(num_envs, 1)`` per agent) and ``{"copies": infos}``.

        Raises:
            VectorEnvError: an agent's actions are missing.
        """
        space, n = self.slots.action_space, self.num_envs
        rows = np.zeros((n, len(self._agents)) + tuple(space.shape or ()), space.dtype)
        for k, agent in enumerate(self._agents):
            if agent not in actions:
                raise VectorEnvError(self.vector_env.name(), f"step() got no actions of "
                                     f"{agent!r}", "Pass every agent's actions (those of "
                                     "agents that do not act are ignored).")
            value = untensorize_space(space, unflatten_tensorized_space(space, actions[agent]))
            rows[:, k] = np.asarray(value).reshape((n,) + tuple(space.shape or ()))
        self.last = step = self.slots.step(rows.reshape((-1,) + rows.shape[2:]))
        per_agent = len(self._agents)

        def columns(values: np.ndarray, dtype: torch.dtype) -> dict[str, torch.Tensor]:
            table = torch.as_tensor(values.reshape(n, per_agent), dtype=dtype,
                                    device=self.device)
            return {a: table[:, k:k + 1] for k, a in enumerate(self._agents)}

        infos: Any = {"copies": step.infos}
        return (self._observations(step), columns(step.rewards, torch.float32),
                columns(step.terminated, torch.bool), columns(step.truncated, torch.bool),
                infos)

    def state(self) -> dict[str, Optional[torch.Tensor]]:
        """Each copy's global state (the same for every agent), or None without one."""
        if self._state_space is None:
            return {a: None for a in self._agents}
        states = np.stack([np.asarray(s) for s in self.vector_env.call("state")])
        value = flatten_tensorized_space(tensorize_space(self._state_space, states,
                                                         device=self.device))
        return {a: value for a in self._agents}

    def render(self, *args: Any, **kwargs: Any) -> Any:
        """Each copy's ``render()``."""
        return self.vector_env.render()

    def close(self) -> None:
        """Close the vector env underneath."""
        self.slots.close()

    def _observations(self, step: SlotStep) -> dict[str, torch.Tensor]:
        space, n, per_agent = self._observation_space, self.num_envs, len(self._agents)
        obs = flat_rows(self.slots.observation_space, step.obs) if self._flatten else step.obs
        out = {}
        for k, agent in enumerate(self._agents):
            rows = {key: np.asarray(v).reshape((n, per_agent) + np.shape(v)[1:])[:, k]
                    for key, v in obs.items()} if isinstance(obs, dict) else \
                np.asarray(obs).reshape((n, per_agent) + np.shape(obs)[1:])[:, k]
            out[agent] = flatten_tensorized_space(tensorize_space(space, rows,
                                                                  device=self.device))
        return out


def _state_space(vector_env: Any) -> Optional[gym.Space]:
    """The copies' global state space, or None when they have none."""
    try:
        spaces = vector_env.get_attr("state_space")
    except Exception:  # noqa: BLE001 - no state, or copies that refuse the attribute
        return None
    space = spaces[0] if spaces else None
    return space if isinstance(space, gym.Space) else None
