"""Jumanji -> hub: :class:`JumanjiHubEnv`, one multi-agent Jumanji env (pure JAX) as a hub env.

The env is Jumanji's own object; the hub holds its state and the reset key and
calls its jitted ``reset`` and ``step``
(:mod:`~marlhub.adapters.jumanji.functions` says how the keys are derived, so an
episode replays with Jumanji alone). What is an agent, and each agent's spaces,
are read from the env's specs (:mod:`~marlhub.adapters.jumanji.specs`).

Example:
    >>> import jumanji
    >>> env = JumanjiHubEnv(jumanji.make("Cleaner-v0", time_limit=3))
    >>> env.possible_agents, env.action_spaces["agent_0"]
    (['agent_0', 'agent_1', 'agent_2'], Discrete(4))
    >>> obs, infos = env.reset(seed=0)
    >>> obs["agent_0"]["action_mask"].shape, obs["agent_0"]["grid"].shape  # its mask row
    ((4,), (10, 10))
    >>> for _ in range(3):                            # Cleaner's time limit: 3 steps
    ...     obs, rewards, terminateds, truncateds, infos = env.step(
    ...         {a: int(o["action_mask"].argmax()) for a, o in obs.items()})
    >>> terminateds["__all__"], sorted(infos["__common__"])   # Jumanji's discount 0
    (True, ['num_dirty_tiles', 'ratio_dirty_tiles'])
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from marlhub.adapters.jax_env import PureJaxHubEnv, to_numpy
from marlhub.adapters.jumanji.functions import LAST, functions_for
from marlhub.adapters.jumanji.natives import cached_make
from marlhub.adapters.jumanji.specs import layout_of, plain_tree
from marlhub.core import (
    ALL,
    COMMON,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import ActionChecker
from marlhub.episode.status import EPISODE_OVER
from marlhub.spaces import ACTION_MASK_KEY, zero_like

__all__ = ["DISCOUNT_KEY", "JumanjiHubEnv"]

#: ``infos[agent]`` key of an agent's discount, in envs whose discount is one per agent.
DISCOUNT_KEY = "discount"


class JumanjiHubEnv(PureJaxHubEnv, MultiAgentEnv):
    """A multi-agent Jumanji env as a hub env (see the module and the JaxMARL guide).

    * **Agents**: ``agent_0 .. agent_{n-1}``, row ``i`` of Jumanji's action; every agent
      with a legal action acts, in every step until the episode ends. An agent whose mask
      allows nothing (MMST's agents that have finished) waits: it gets no observation, the
      adapter plays its action space's zero (which Jumanji ignores), and team rewards
      still reach it.
    * **Observations and masks**: Jumanji's observation of the team, a ``Dict`` of its
      fields, with the agent's own row of ``action_mask`` (``int8``), which the hub
      enforces (:mod:`~marlhub.adapters.jumanji.specs`); the row is also
      ``infos[agent]["action_mask"]`` while the agent acts, where a batch of copies puts it.
    * **Rewards**: one per agent where Jumanji gives one per agent; a team reward is paid
      to every agent.
    * **Done**: the episode ends at Jumanji's ``StepType.LAST``; an agent whose discount is
      0 then is terminated, the others truncated (a time limit), and ``__all__`` is
      terminated when every agent is. An agent whose own discount drops to 0 earlier
      (Connector's connected or blocked agents) stays in the episode, since Jumanji still
      steps and pays it; ``infos[agent]["discount"]`` carries each agent's discount (from
      the reset on) in envs that have one per agent.
    * **Infos**: Jumanji's ``timestep.extras`` under ``infos["__common__"]`` after each
      step, as numpy.
    * **Seeds**: ``reset(seed=s)`` starts the key at ``jax.random.PRNGKey(s)``
      (:mod:`~marlhub.adapters.jumanji.functions`).

    Args:
        env: a multi-agent Jumanji ``Environment`` (``jumanji.make(...)``).
        made_as: ``(name, config)`` of ``jumanji.make``, when known (the ``jumanji/``
            family passes it): a pickled hub env then makes its Jumanji env again.

    Raises:
        ConfigError: ``env`` is single-agent, or has a spec the hub does not map.
    """

    native_attribute = "jumanji_env"
    _make_again = staticmethod(cached_make)
    _functions = staticmethod(functions_for)

    def __init__(self, env: Any, *, made_as: Optional[tuple[str, dict[str, Any]]] = None) -> None:
        super().__init__()
        self.jumanji_env = env
        self.made_as = made_as
        self._name = made_as[0] if made_as is not None else type(env).__name__
        self.layout = layout_of(env, self._name)
        self._fns = functions_for(env)
        self.possible_agents = list(self.layout.agents)
        self.agents = []
        self.observation_spaces = {a: self.layout.observation_space for a in self.possible_agents}
        self.action_spaces = dict(self.layout.action_spaces)
        self._checker = ActionChecker(self.action_spaces.__getitem__)

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Start an episode (``jax.random.PRNGKey(seed)`` first when a seed is given)."""
        super().reset(seed=seed)
        self._key, self._state, timestep = self._fns.reset(self._start_key(seed))
        timestep = to_numpy(timestep)
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return self._observations(timestep, over=False)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply the actors' actions (the space's zero for an agent without a legal one).

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: a missing or extra agent, an action outside its space or mask.
        """
        checked = self._checked_actions(action_dict)
        actions = [checked[a] if a in checked else zero_like(self.layout.action_spaces[a])
                   for a in self.possible_agents]
        self._state, timestep = self._fns.step(self._state, self.layout.native_action(actions))
        timestep = to_numpy(timestep)
        over = int(timestep.step_type) == LAST
        ended = [over and d == 0 for d in self.layout.per_agent(timestep.discount)]
        terminateds = dict(zip(self.possible_agents, ended))
        truncateds = {a: over and not t for a, t in terminateds.items()}
        terminateds[ALL] = over and all(ended)
        truncateds[ALL] = over and not terminateds[ALL]
        obs, infos = self._observations(timestep, over)
        if timestep.extras:
            infos[COMMON] = dict(timestep.extras)
        if over:
            self.agents = []
            self._cannot_step = EPISODE_OVER
        rewards = self.layout.per_agent(timestep.reward)
        return (obs, {a: float(r) for a, r in zip(self.possible_agents, rewards)},
                terminateds, truncateds, infos)

    def _observations(self, timestep: Any, over: bool) -> tuple[MultiAgentDict, dict[Any, Any]]:
        """The observations and infos of Jumanji's ``timestep`` (numpy): of every agent at the
        end, else of the actors (who act next); refreshes the actors and their masks."""
        tree = plain_tree(self.layout.observation_spec, timestep.observation)
        masks = self.layout.masks(tree)
        self._actors = [] if over else [a for a in self.possible_agents
                                        if a not in masks or masks[a].any()]
        self._masks = {a: masks[a] for a in self._actors if a in masks}
        seen = self.possible_agents if over else self._actors
        obs = {a: self.layout.observation(tree, i)
               for i, a in enumerate(self.possible_agents) if a in seen}
        discounts = dict(zip(self.possible_agents, self.layout.per_agent(timestep.discount)))
        infos: dict[Any, Any] = {a: {} for a in seen}
        for agent in seen:
            if np.ndim(timestep.discount):  # one per agent
                infos[agent][DISCOUNT_KEY] = float(discounts[agent])
            if agent in self._masks:  # where a batch of copies reports it too
                infos[agent][ACTION_MASK_KEY] = self._masks[agent].copy()
        return obs, {a: info for a, info in infos.items() if info}
