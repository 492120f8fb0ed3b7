"""An SB3 ``VecEnv`` of agent slots: Stable-Baselines3 trains one shared policy on any hub env.

:class:`Sb3VecEnv` subclasses SB3's own ``VecEnv`` (so ``VecMonitor``, ``VecNormalize``,
``VecFrameStack`` and every SB3 or sb3-contrib algorithm take it) over
:class:`~marlhub.learners.slots.AgentSlots`: one SB3 env per (copy, agent), parameter
sharing as SuperSuit's ``concat_vec_envs_v1`` gives it, with no per-copy wrapper in the
way. What SB3 sees per slot follows SB3's own conventions: a done slot returns its next
observation, its final one in ``infos[k]["terminal_observation"]`` and
``infos[k]["TimeLimit.truncated"]`` where it was truncated (so PPO bootstraps it), and
slots that wait or are empty are never done (see :mod:`marlhub.learners.slots`), so
``VecMonitor`` reports each agent's episode once, with the hub's return.

Made by :func:`marlhub.learners.to_sb3`; this module imports SB3.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
from stable_baselines3.common.vec_env import VecEnv
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices

from marlhub.display import html_table
from marlhub.errors import VectorEnvError
from marlhub.learners.slots import AgentSlots, SlotStep

__all__ = ["Sb3VecEnv"]

#: Attributes the slots answer themselves (the others are the copies').
_OWN = ("render_mode", "action_masks")


class Sb3VecEnv(VecEnv):
    """``num_envs * len(agents)`` SB3 envs: one per agent of each copy of a vector env.

    Args:
        slots: the slots of a vector env made with ``autoreset_mode="same_step"``.

    Attributes:
        slots: the :class:`~marlhub.learners.slots.AgentSlots` underneath.
        vector_env: the hub's vector env.
        agents: each copy's agents, in slot order (slot ``copy * len(agents) + k``).

    ``infos[k]`` holds, besides SB3's keys, ``"agent"``, ``"copy"``, ``"acting"`` (its action
    counts in the next step) and ``"alive"``; ``reset_infos`` likewise.
    """

    def __init__(self, slots: AgentSlots) -> None:
        self.slots = slots
        self.vector_env = slots.vector_env
        self.agents = slots.agents
        self._actions: Optional[np.ndarray] = None
        self.render_mode = self.vector_env.render_mode  # SB3's __init__ reads it
        super().__init__(slots.num_slots, slots.observation_space, slots.action_space)

    # -- SB3's VecEnv ------------------------------------------------------------------

    def reset(self) -> Any:
        """Reset every copy (with the seed and options set by :meth:`seed` and
        ``set_options``, then none); return the slots' first observations."""
        seed = self._seeds[0]
        options = self._options[0] or None
        if any(o != self._options[0] for o in self._options):
            raise VectorEnvError(self.vector_env.name(), "set_options() gave the slots "
                                 "different options", "Every copy takes the same reset "
                                 "options: pass one dict.")
        step = self.slots.reset(seed=seed, options=options)
        self.reset_infos = self._infos(step, reset=True)
        self._reset_seeds()
        self._reset_options()
        return step.obs

    def step_async(self, actions: np.ndarray) -> None:
        """Keep the actions, one per slot, for :meth:`step_wait`."""
        self._actions = actions

    def step_wait(self) -> Any:
        """Step every copy; return ``(obs, rewards, dones, infos)`` per slot."""
        if self._actions is None:
            raise VectorEnvError(self.vector_env.name(), "step_wait() was called without "
                                 "step_async()", "Call step(actions).")
        actions, self._actions = self._actions, None
        step = self.slots.step(actions)
        dones = step.terminated | step.truncated
        return step.obs, step.rewards, dones, self._infos(step, reset=False)

    def seed(self, seed: Optional[int] = None) -> Sequence[Optional[int]]:
        """Seed the next reset: copy ``i`` with ``seed + i``; return each slot's copy's seed."""
        if seed is None:
            seed = int(np.random.randint(0, np.iinfo(np.uint32).max, dtype=np.uint32))
        per_copy = len(self.agents)
        self._seeds = [seed + k // per_copy for k in range(self.num_envs)]
        return self._seeds

    def action_masks(self) -> np.ndarray:
        """Each slot's legal actions (sb3-contrib's ``MaskablePPO`` reads them): the env's
        mask for acting slots, only the first action for the others."""
        return self.slots.action_masks()

    def close(self) -> None:
        """Close the vector env and its copies."""
        self.slots.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Each slot's copy's attribute ``attr_name`` (``render_mode`` and ``action_masks``:
        the slots')."""
        slots = self._get_indices(indices)
        if attr_name in _OWN:
            if attr_name == "action_masks" and not _maskable(self.action_space):
                raise AttributeError(f"{self.action_space} has no action masks")
            value = getattr(self, attr_name)
            return [value for _ in slots]
        values = self.vector_env.get_attr(attr_name)
        return [values[k // len(self.agents)] for k in slots]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set attribute ``attr_name`` of the copies of the slots ``indices``.

        Raises:
            VectorEnvError: ``indices`` name some of a copy's slots but not all.
        """
        copies = self._copies(indices, "set_attr")
        current = list(self.vector_env.get_attr(attr_name)) if len(copies) < \
            self.vector_env.num_envs else [value] * self.vector_env.num_envs
        for i in copies:
            current[i] = value
        set_attr = getattr(self.vector_env, "set_attr", None)
        if set_attr is None:
            raise AttributeError(f"{self.vector_env.name()} sets no attributes of its copies "
                                 "(a batched simulator is one object)")
        set_attr(attr_name, current)

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        """Call ``method_name`` of every copy once; return each slot's copy's result
        (``action_masks``: each slot's mask)."""
        slots = self._get_indices(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[k] for k in slots]
        results = self.vector_env.call(method_name, *method_args, **method_kwargs)
        return [results[k // len(self.agents)] for k in slots]

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        """False for every slot: the copies are hub envs, never ``gymnasium.Wrapper`` s."""
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[Optional[np.ndarray]]:
        """Each copy's ``render()`` (``render_mode="rgb_array"``), once per slot."""
        frames = self.vector_env.render()
        return [frames[k // len(self.agents)] for k in range(self.num_envs)]

    # -- helpers ------------------------------------------------------------------------

    def _infos(self, step: SlotStep, reset: bool) -> list[dict[str, Any]]:
        per_copy = len(self.agents)
        infos: list[dict[str, Any]] = []
        truncated = step.truncated & ~step.terminated
        for k in range(self.num_envs):
            info: dict[str, Any] = {"agent": self.agents[k % per_copy], "copy": k // per_copy,
                                    "acting": bool(step.acting[k]), "alive": bool(step.alive[k])}
            final = step.final_obs.get(k)
            if final is not None:
                info["terminal_observation"] = final
                info["TimeLimit.truncated"] = bool(truncated[k])
            infos.append(info)
        return infos

    def _copies(self, indices: VecEnvIndices, call: str) -> list[int]:
        slots = list(self._get_indices(indices))
        per_copy = len(self.agents)
        copies = sorted({k // per_copy for k in slots})
        whole = {i * per_copy + j for i in copies for j in range(per_copy)}
        if whole != set(slots):
            raise VectorEnvError(self.vector_env.name(), f"{call}() named some of a copy's "
                                 f"slots but not all ({sorted(slots)})", "A copy's agents share "
                                 "its env: name all of its slots (copy * num_agents + k).")
        return copies

    def __repr__(self) -> str:
        return f"Sb3VecEnv({self.vector_env.name()}, slots={self.num_envs})"

    def _repr_html_(self) -> str:
        """In a notebook: the slots of one copy (its agents) and the spaces SB3 sees."""
        caption = (f"SB3 VecEnv of {self.num_envs} slots: {self.vector_env.name()} x "
                   f"{len(self.agents)} agents; observation {self.observation_space}, "
                   f"action {self.action_space}")
        rows = [[k, agent, self.vector_env.get_observation_space(agent),
                 self.vector_env.get_action_space(agent)] for k, agent in enumerate(self.agents)]
        return html_table(caption, ["slot of a copy", "agent", "its observation space",
                                    "its action space"], rows)


def _maskable(space: Any) -> bool:
    return type(space).__name__ in ("Discrete", "MultiDiscrete")
