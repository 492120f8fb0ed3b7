"""AgileRL's PettingZoo vector env of agent slots: IPPO on any hub env, every agent always there.

AgileRL's multi-agent trainers step a ``PettingZooVecEnv``: per agent, arrays of
``num_envs`` rows. Its own vector envs mark an agent that is not in a copy's episode with
NaN, which reaches its policy (on ``traffic``: "probability tensor contains either inf,
nan") or its one-hot encoder (MultiDiscrete observations). :class:`AgileRLVecEnv`
subclasses AgileRL's ``PettingZooVecEnv`` over :class:`~marlhub.learners.slots.AgentSlots`:
each agent's rows are its slots, in the slots' one documented treatment (a waiting agent
shows its latest observation, its action ignored; an agent that left or has not joined
shows zeros, reward 0; a done agent is done once, the copy's next episode starting in the
same step). An agent that is not there reports ``terminated`` True (and reward 0): its
rows are zeros that nothing bootstraps across, and AgileRL's trainer, which ends a copy's
episode in the step every agent is done, counts it complete when every agent is done or
absent, with each agent's summed reward: the hub's returns. (AgileRL's own vector envs
mark an absent agent with NaN, which its IPPO cannot take: the NaN reaches its policy,
"probability tensor contains either inf, nan", and its advantages.)

The infos carry no action masks: AgileRL 2.58's IPPO stacks them with ``None in masks``,
which numpy arrays of more than one element refuse ("truth value of an array ... is
ambiguous"), natively too. On a game with masks pass ``illegal_action="substitute"`` (or
``"terminate"``) to :func:`marlhub.learners.to_agilerl`; :meth:`AgileRLVecEnv.action_masks`
has the slots' masks for a learner that reads them.

Made by :func:`marlhub.learners.to_agilerl`; this module imports AgileRL.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from marlhub.backends import import_backend
from marlhub.learners.slots import AgentSlots, SlotStep

# AgileRL needs PettingZoo before 1.27, so it is often absent: say so, as to_agilerl() does
PettingZooVecEnv: Any = import_backend(
    "agilerl.vector.pz_vec_env", package="agilerl", extra="learners",
    feature="marlhub.learners.agilerl_env",
    install="pip install agilerl peft (with PettingZoo before 1.27)").PettingZooVecEnv

__all__ = ["AgileRLVecEnv"]


class AgileRLVecEnv(PettingZooVecEnv):
    """AgileRL's vector env over agent slots: ``num_envs`` rows per agent.

    Args:
        slots: the slots of a vector env made with ``autoreset_mode="same_step"``.
        seed: the first reset's seed when the trainer passes none (copy ``i`` seeded
            ``seed + i``).

    Attributes:
        slots: the :class:`~marlhub.learners.slots.AgentSlots` underneath.
        last: the last :class:`~marlhub.learners.slots.SlotStep`.
    """

    def __init__(self, slots: AgentSlots, seed: Optional[int] = None) -> None:
        agents = [str(a) for a in slots.agents]
        super().__init__(slots.num_envs, dict.fromkeys(agents, slots.observation_space),
                         dict.fromkeys(agents, slots.action_space), agents,
                         metadata=dict(slots.vector_env.metadata),
                         render_mode=slots.vector_env.render_mode)
        self.slots = slots
        self._seed = seed
        self.last: Optional[SlotStep] = None

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset every copy; return each agent's observations and infos (its masks)."""
        first = seed if seed is not None else self._seed
        self._seed = None
        self.last = step = self.slots.reset(seed=first, options=options)
        return self._per_agent(step.obs), self._infos(step)

    def step(self, actions: Any, *args: Any, **kwargs: Any) -> tuple[dict[str, Any], ...]:
        """Step every copy with each agent's ``num_envs`` actions (ignored where it does not
        act); return observations, rewards, terminated (True where the agent is not there)
        and truncated, and infos, per agent."""
        space, n = self.slots.action_space, self.num_envs
        shape = tuple(space.shape or ())
        rows = np.zeros((n, len(self.agents)) + shape, space.dtype)
        for k, agent in enumerate(self.agents):
            value = np.asarray(actions[agent].cpu() if hasattr(actions[agent], "cpu")
                               else actions[agent])
            rows[:, k] = np.nan_to_num(value).astype(space.dtype).reshape((n,) + shape)
        before = self.last
        self.last = step = self.slots.step(rows.reshape((-1,) + shape))
        # there in the episode this step played: alive before it (after a copy's autoreset
        # ``alive`` is the next episode's), or done in it
        present = ((before.alive if before is not None else step.alive)
                   | step.terminated | step.truncated).reshape(n, -1)
        terminated = np.where(present, step.terminated.reshape(n, -1), True)
        truncated = step.truncated.reshape(n, -1)
        rewards = step.rewards.reshape(n, -1)
        return (self._per_agent(step.obs),
                {a: rewards[:, k] for k, a in enumerate(self.agents)},
                {a: terminated[:, k] for k, a in enumerate(self.agents)},
                {a: truncated[:, k] for k, a in enumerate(self.agents)},
                self._infos(step))

    def render(self) -> Any:
        """Each copy's ``render()``."""
        return self.slots.vector_env.render()

    def close_extras(self, **kwargs: Any) -> None:
        """Close the vector env underneath."""
        self.slots.close()

    def _per_agent(self, obs: Any) -> dict[str, Any]:
        n, per_agent = self.num_envs, len(self.agents)
        if isinstance(obs, dict):
            table = {key: np.asarray(v).reshape((n, per_agent) + np.shape(v)[1:])
                     for key, v in obs.items()}
            return {a: {key: v[:, k] for key, v in table.items()}
                    for k, a in enumerate(self.agents)}
        rows = np.asarray(obs).reshape((n, per_agent) + np.shape(obs)[1:])
        return {a: rows[:, k] for k, a in enumerate(self.agents)}

    def action_masks(self) -> dict[str, np.ndarray]:
        """Each agent's legal actions, ``(num_envs, n)`` int8 (only the first action where the
        agent does not act)."""
        masks = self.slots.action_masks().reshape(self.num_envs, len(self.agents), -1)
        return {a: masks[:, k].astype(np.int8) for k, a in enumerate(self.agents)}

    def _infos(self, step: SlotStep) -> dict[str, Any]:
        return {a: {"copies": step.infos} for a in self.agents}
