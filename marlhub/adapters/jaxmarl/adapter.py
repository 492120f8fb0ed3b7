"""JaxMARL -> hub: :class:`JaxMarlHubEnv`, one JaxMARL env (pure JAX functions) as a hub env.

The env is JaxMARL's own object; the hub holds its state and PRNG key and calls
its jitted ``reset`` and ``step_env`` (:mod:`~marlhub.adapters.jaxmarl.functions`
says how every key is derived, so an episode replays with JaxMARL alone).

Example:
    >>> import jaxmarl
    >>> env = JaxMarlHubEnv(jaxmarl.make("MPE_simple_spread_v3", max_steps=3))
    >>> env.possible_agents, env.action_spaces["agent_0"]
    (['agent_0', 'agent_1', 'agent_2'], Discrete(5))
    >>> obs, infos = env.reset(seed=0)
    >>> for _ in range(4):                         # MPE's episodes: max_steps + 1 steps
    ...     obs, rewards, terminateds, truncateds, infos = env.step({a: 0 for a in obs})
    >>> truncateds["__all__"], sorted(obs)        # the true last observations
    (True, ['agent_0', 'agent_1', 'agent_2'])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.jax_env import PureJaxHubEnv, to_numpy
from marlhub.adapters.jaxmarl.functions import functions_for, is_turn_based
from marlhub.adapters.jaxmarl.natives import cached_make
from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import ActionChecker
from marlhub.episode.status import EPISODE_OVER
from marlhub.errors import ConfigError
from marlhub.spaces import ACTION_MASK_KEY, zero_like

__all__ = ["JaxMarlHubEnv", "as_space", "gymnasium_space", "jaxmarl_spaces", "step_count"]


def gymnasium_space(space: Any, sample: Any = None) -> gym.Space:
    """Return a JaxMARL space as the gymnasium space of the same kind.

    ``sample``, one observation, corrects a ``Box`` whose declared shape is not the
    shape JaxMARL returns (Overcooked declares ``(5, 4, 26)`` and returns
    ``(4, 5, 26)``): the returned shape is taken, with the declared bounds where
    they are scalars, else unbounded.
    """
    kind = type(space).__name__
    if kind == "Discrete":
        return gym.spaces.Discrete(int(space.n))
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(np.asarray(space.num_categories, dtype=np.int64))
    if kind == "Box":
        declared = (int(space.shape),) if np.ndim(space.shape) == 0 else \
            tuple(int(s) for s in space.shape)
        shape = tuple(int(s) for s in np.shape(sample)) if sample is not None else declared
        low, high = np.asarray(space.low), np.asarray(space.high)
        dtype = np.dtype(space.dtype)
        if shape != declared:
            low = low if low.ndim == 0 else np.array(-np.inf)
            high = high if high.ndim == 0 else np.array(np.inf)
        if dtype.kind != "f":
            low, high = np.maximum(low, np.iinfo(dtype).min), np.minimum(high, np.iinfo(dtype).max)
        return gym.spaces.Box(np.broadcast_to(low, shape).astype(dtype),
                              np.broadcast_to(high, shape).astype(dtype), shape, dtype)
    if kind == "Dict":
        return gym.spaces.Dict({k: gymnasium_space(s, None if sample is None else sample[k])
                                for k, s in space.spaces.items()})
    if kind == "Tuple":
        return gym.spaces.Tuple([gymnasium_space(s, None if sample is None else sample[i])
                                 for i, s in enumerate(space.spaces)])
    raise ConfigError("from_jaxmarl", f"JaxMARL gave a {kind} space ({space!r}), which the hub "
                      "does not map", fix="Use an env with Discrete, MultiDiscrete, Box, Dict or "
                      "Tuple spaces.")


def jaxmarl_spaces(env: Any, obs: Mapping[Any, Any]) -> tuple[dict[AgentID, gym.Space],
                                                                dict[AgentID, gym.Space]]:
    """Each agent's observation and action space, the Boxes checked against ``obs``."""
    observation = {a: gymnasium_space(env.observation_space(a), np.asarray(obs[a])
                                      if type(env.observation_space(a)).__name__ == "Box"
                                      else obs[a]) for a in env.agents}
    action = {a: gymnasium_space(env.action_space(a)) for a in env.agents}
    return observation, action


class JaxMarlHubEnv(PureJaxHubEnv, MultiAgentEnv):
    """A JaxMARL env as a hub env (see the module and the JaxMARL guide).

    * **Agents**: JaxMARL's ``env.agents``, in its order; every agent that is not
      done acts. In a turn-based game (Hanabi, one of
      :data:`~marlhub.adapters.jaxmarl.functions.TURN_BASED`) only the agents whose
      legal moves leave them a choice act: the player who waits has one legal move (a no-op) and gets no
      observation. JaxMARL needs an action from every agent: the adapter plays each
      waiting or done agent's first legal action (the action space's zero where
      there are no masks).
    * **Masks**: ``infos[agent]["action_mask"]`` (int8) for acting agents, where the
      env has legal actions and every agent has Discrete actions.
    * **Done**: ``dones[agent]`` ends an agent (terminated); ``dones["__all__"]`` the
      episode, as truncated when the env's step count has reached its ``max_steps``,
      else terminated. (The hub env declares no ``max_steps`` of its own: JaxMARL's
      MPE episodes last ``max_steps + 1`` steps, others ``max_steps``.) The last step
      returns the true last observations.
    * **Infos**: JaxMARL's step infos under ``infos["__common__"]``, as numpy.
    * **Seeds**: ``reset(seed=s)`` starts the key at ``jax.random.PRNGKey(s)``
      (:mod:`~marlhub.adapters.jaxmarl.functions`).

    Args:
        env: a JaxMARL ``MultiAgentEnv`` (``jaxmarl.make(...)``).
        made_as: ``(name, config)`` of ``jaxmarl.make``, when known (the ``jaxmarl/``
            family passes it): a pickled hub env then makes its JaxMARL env again, as
            JaxMARL envs that keep jitted functions (the coin game) do not pickle.
    """

    native_attribute = "jaxmarl_env"
    _make_again = staticmethod(cached_make)
    _functions = staticmethod(functions_for)

    def __init__(self, env: Any, *, made_as: Optional[tuple[str, dict[str, Any]]] = None) -> None:
        super().__init__()
        self.jaxmarl_env = env
        self.made_as = made_as
        self._fns = functions_for(env)
        _, first, _ = self._fns.reset(self._fns.seed_key(0))
        self.possible_agents = list(env.agents)
        self.agents = []
        self.observation_spaces, self.action_spaces = jaxmarl_spaces(env, first)
        self._checker = ActionChecker(self.action_spaces.__getitem__)
        self._turn_based = is_turn_based(env)
        # Legal actions are masks of Discrete actions (JaxNav's of its Box actions are not).
        self._discrete = all(isinstance(s, gym.spaces.Discrete) for s in self.action_spaces.values())
        self._name = type(env).__name__

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Start an episode (``jax.random.PRNGKey(seed)`` first when a seed is given)."""
        super().reset(seed=seed)
        self._key, obs, self._state = self._fns.reset(self._start_key(seed))
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        obs = to_numpy(obs)
        self._actors = self._acting(set(self.agents))
        return self._observations(obs, self._actors), self._infos({}, self._actors)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply the actors' actions (and the only legal action of the others).

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: a missing or extra agent, an action outside its space or mask.
        """
        actions = self._checked_actions(action_dict)
        for agent in self.possible_agents:  # the idle and the done: their first legal action
            if agent not in actions:
                actions[agent] = self._only_action(agent)
        live = list(self.agents)
        self._key, obs, self._state, rewards, dones, infos = self._fns.step(
            self._key, self._state, {a: np.asarray(actions[a]) for a in self.possible_agents})
        obs, rewards, dones, infos = to_numpy((obs, rewards, dones, infos))
        over = bool(dones[ALL])
        limit = getattr(self.jaxmarl_env, "max_steps", None)
        count = step_count(self._state)
        truncated = over and limit is not None and count is not None and int(count) >= int(limit)
        terminateds = {a: (bool(dones[a]) or over) and not truncated for a in live}
        truncateds = {a: truncated for a in live}
        terminateds[ALL], truncateds[ALL] = over and not truncated, truncated
        self.agents = [] if over else [a for a in live if not dones[a]]
        self._actors = [] if over else self._acting(set(self.agents))
        seen = live if over else [a for a in live if a in self._actors or dones[a]]
        if over:
            self._cannot_step = EPISODE_OVER
        paid = {a: float(rewards[a]) for a in live}
        return (self._observations(obs, seen), paid, terminateds, truncateds,
                self._infos(infos, seen))

    # -- JaxMARL values ----------------------------------------------------------------

    def _acting(self, live: set[AgentID]) -> list[AgentID]:
        """The live agents with a choice; refreshes the legal-action masks."""
        if not self._fns.has_masks or not self._discrete:
            self._masks = {}
            return [a for a in self.possible_agents if a in live]
        legal = to_numpy(self._fns.legal(self._state))
        self._masks = {a: np.asarray(legal[a]).astype(np.int8).reshape(-1)
                       for a in self.possible_agents}
        if not self._turn_based:
            return [a for a in self.possible_agents if a in live]
        choosing = [a for a in self.possible_agents if a in live and self._masks[a].sum() > 1]
        return choosing or [a for a in self.possible_agents
                            if a in live and self._masks[a].sum() >= 1]

    def _only_action(self, agent: AgentID) -> Any:
        mask = self._masks.get(agent)
        if mask is not None and mask.any():
            return int(np.argmax(mask))
        return zero_like(self.get_action_space(agent))

    def _observations(self, obs: Mapping[Any, Any], agents: list[AgentID]) -> MultiAgentDict:
        return {a: as_space(obs[a], self.get_observation_space(a)) for a in agents}

    def _infos(self, infos: Mapping[str, Any], agents: list[AgentID]) -> dict[Any, Any]:
        found: dict[Any, Any] = {}
        for agent in agents:
            if agent in self._actors and agent in self._masks:
                found[agent] = {ACTION_MASK_KEY: self._masks[agent]}
        if infos:
            found[COMMON] = dict(infos)
        return found


def step_count(state: Any) -> Any:
    """The episode's step count in a JaxMARL state (or in the state a wrapper holds), one per
    copy for a batch of states (traced inside a jitted function); None where the state counts
    no steps."""
    while state is not None:
        if hasattr(state, "step"):
            return state.step
        state = getattr(state, "state", None)
    return None


def as_space(value: Any, space: gym.Space, lead: tuple[int, ...] = ()) -> Any:
    """``value`` (JaxMARL's) as an element of ``space``: its dtype and shape, after ``lead``
    dimensions (a batch's ``(num_envs, n)``)."""
    if isinstance(space, gym.spaces.Dict):
        return {k: as_space(value[k], s, lead) for k, s in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(as_space(v, s, lead) for v, s in zip(value, space.spaces))
    if isinstance(space, gym.spaces.Discrete):
        return np.int64(value) if not lead else np.asarray(value, np.int64).reshape(lead)
    return np.asarray(value, dtype=space.dtype).reshape(lead + tuple(space.shape or ()))
