"""A native PufferLib env of agent slots: PufferLib's vector envs and trainer on any hub env.

:class:`HubPufferEnv` is a ``pufferlib.PufferEnv`` (PufferLib 3's native array interface,
no emulation on top of ours): one agent row per (copy, agent) of
:class:`~marlhub.learners.slots.AgentSlots` in the ``one_space`` layout (PufferLib takes
one ``Box`` of observations; a mixed team's agents are padded into it with their kind),
written into the buffers PufferLib hands it, so ``pufferlib.vector.Serial`` and
``Multiprocessing`` run it in their shared memory. Where the actions are discrete, each
row ends with the row's action mask (1 for a legal action; only the first for a row that
does not act): PufferLib's vector envs carry observations only, and a policy that reads
the mask's columns never sends what a kind of agent cannot do. Done rows reset inside the env, as
PufferLib's own envs do; ``masks`` marks the rows that carry an agent this step (alive, or
done in it); ``infos`` holds one ``{"episode_return", "episode_length"}`` per agent
episode that ended.

Made by :func:`marlhub.learners.to_pufferlib`; this module imports PufferLib.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pufferlib  # type: ignore[import-untyped]

from marlhub.learners.slots import AgentSlots, SlotStep

__all__ = ["HubPufferEnv"]


class HubPufferEnv(pufferlib.PufferEnv):
    """A PufferLib env of ``num_envs`` copies of a hub env, one agent row per (copy, agent).

    Args:
        env: a registry id, a function that makes one env, or a vector env made with
            ``autoreset_mode="same_step"`` (see :func:`marlhub.learners.vector_env_for`).
        num_envs: copies in this PufferLib env (1 by default: PufferLib's vector envs
            make many of them).
        config: the env's config, for a registry id.
        buf: PufferLib's buffers (its vector envs pass rows of their shared memory).
        seed: the seed of the first reset (PufferLib passes one per env).
        vector_kwargs: the hub vector env's options.
    """

    def __init__(self, env: Any, num_envs: Optional[int] = None,
                 config: Optional[Mapping[str, Any]] = None, buf: Optional[dict[str, Any]] = None,
                 seed: Optional[int] = 0, **vector_kwargs: Any) -> None:
        from marlhub.learners import vector_env_for

        vector_env = vector_env_for(env, num_envs, config, caller="to_pufferlib()",
                                    **vector_kwargs)
        self.slots = AgentSlots(vector_env, one_space=True)
        self.single_observation_space = self.slots.observation_space
        self.mask_size = 0
        action_space = self.slots.action_space
        if isinstance(action_space, gym.spaces.Discrete):  # the mask after the observation
            self.mask_size = int(action_space.n)
            space = self.slots.observation_space
            self.single_observation_space = gym.spaces.Box(
                np.concatenate([space.low, np.zeros(self.mask_size, space.dtype)]),
                np.concatenate([space.high, np.ones(self.mask_size, space.dtype)]),
                dtype=space.dtype)
        self.single_action_space = self.slots.action_space
        self.num_agents = self.slots.num_slots
        self.render_mode = vector_env.render_mode
        self._seed = seed
        self._returns = np.zeros(self.num_agents, np.float64)
        self._lengths = np.zeros(self.num_agents, np.int64)
        super().__init__(buf)

    def reset(self, seed: Optional[int] = None) -> tuple[np.ndarray, list[dict[str, Any]]]:
        """Reset every copy (copy ``i`` seeded ``seed + i``; the env's own seed the first
        time when None); return the observations and ``[]``."""
        if seed is None:
            seed, self._seed = self._seed, None
        step = self.slots.reset(seed=seed)
        self._returns[:] = 0
        self._lengths[:] = 0
        self._write(step)
        return self.observations, []

    def step(self, actions: Any) -> tuple[Any, ...]:
        """Step every copy with one action per agent row; return PufferLib's five buffers
        and infos (one dict per agent episode that ended)."""
        step = self.slots.step(np.asarray(actions))
        self._write(step)
        done = step.terminated | step.truncated
        self._returns += step.rewards
        self._lengths += step.alive | done
        infos: list[dict[str, Any]] = []
        for k in np.flatnonzero(done):
            infos.append({"episode_return": float(self._returns[k]),
                          "episode_length": int(self._lengths[k])})
            self._returns[k], self._lengths[k] = 0.0, 0
        return self.observations, self.rewards, self.terminals, self.truncations, infos

    def action_masks(self) -> np.ndarray:
        """Each row's legal actions (only the first for rows that do not act)."""
        return self.slots.action_masks()

    def render(self) -> Any:
        """Each copy's ``render()``."""
        return self.slots.vector_env.render()

    def close(self) -> None:
        """Close the copies."""
        self.slots.close()

    def _write(self, step: SlotStep) -> None:
        if self.mask_size:
            self.observations[:, :-self.mask_size] = step.obs
            self.observations[:, -self.mask_size:] = self.slots.action_masks()
        else:
            self.observations[:] = step.obs
        self.rewards[:] = step.rewards
        self.terminals[:] = step.terminated
        self.truncations[:] = step.truncated
        self.masks[:] = step.alive | step.terminated | step.truncated
