"""Jumanji's specs as the hub reads them: the agent dimension, each agent's spaces, its values.

A Jumanji env has one observation, one action, one reward and one discount for the
whole team. It is **multi-agent** when it says how many agents it has
(``env.num_agents``) and its action spec has one row per agent: a
``MultiDiscreteArray`` of shape ``(n,)`` (RobotWarehouse, LevelBasedForaging, Cleaner,
Connector, MMST) or a ``BoundedArray`` of shape ``(n, ...)`` (SearchAndRescue), and its
reward and discount specs are one value for the team (shape ``()``) or one per agent
(``(n,)``). :func:`agent_dimension` reads this from the env; :func:`layout_of` turns it
into :class:`AgentLayout`:

* **Agents**: ``agent_0 .. agent_{n-1}``, agent ``i`` being row ``i`` of the action.
* **Actions**: row ``i`` of the action spec: ``Discrete(num_values[i])`` (a
  ``MultiDiscrete`` where each agent has several), or a ``Box`` of the row's bounds.
* **Observations**: Jumanji's observation is the team's (its ``agents_view`` has a row per
  agent, Cleaner's ``grid`` is shared); every agent observes all of it, as a ``Dict`` with
  one entry per field of the ``Observation`` (nested specs nest), except the
  ``action_mask``, where each agent gets its own row: the hub reads masks from
  ``obs[agent]["action_mask"]``, as OpenSpiel's adapter carries them. ``BoundedArray``
  fields are ``Box`` es of their bounds, ``Array`` fields span their dtype, and bool
  fields (the masks) are ``int8`` ``{0, 1}``.

Example:
    >>> import jumanji
    >>> layout = layout_of(jumanji.make("Cleaner-v0"), "Cleaner-v0")
    >>> layout.agents, layout.action_spaces["agent_0"]
    (['agent_0', 'agent_1', 'agent_2'], Discrete(4))
    >>> sorted(layout.observation_space.spaces)
    ['action_mask', 'agents_locations', 'grid', 'step_count']
    >>> layout.observation_space["action_mask"]
    Box(0, 1, (4,), int8)
    >>> agent_dimension(jumanji.make("Snake-v1"))
    (None, 'it reports no num_agents (a single-agent env)')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import ConfigError
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["AgentLayout", "agent_dimension", "fields", "layout_of", "leaf_space", "plain_tree"]


def agent_dimension(env: Any) -> tuple[Optional[int], str]:
    """How many agents the Jumanji env ``env`` has, read from its specs; or None and why not.

    Example:
        >>> import jumanji
        >>> agent_dimension(jumanji.make("LevelBasedForaging-v0"))
        (2, '')
    """
    count = getattr(env, "num_agents", None)
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) \
            or count < 1:
        return None, "it reports no num_agents (a single-agent env)"
    n = int(count)
    action = env.action_spec
    shape = tuple(getattr(action, "shape", ()) or ())
    if not shape or shape[0] != n or type(action).__name__ == "DiscreteArray":
        return None, (f"its action spec ({type(action).__name__} of shape {shape}) has no "
                      f"row per agent for its {n} agents")
    for what, spec in (("reward", env.reward_spec), ("discount", env.discount_spec)):
        if tuple(spec.shape) not in ((), (n,)):
            return None, f"its {what} spec has shape {tuple(spec.shape)}, not () or ({n},)"
    return n, ""


def fields(spec: Any) -> list[tuple[str, Any]]:
    """The named children of a nested Jumanji spec (an ``Observation``'s fields), in order;
    empty for an array spec. Read as Jumanji's own ``jumanji_specs_to_gym_spaces`` reads them."""
    if hasattr(spec, "shape"):
        return []
    return [(k, v) for k, v in vars(spec).items() if not k.startswith("_")]


def leaf_space(spec: Any) -> gym.spaces.Box:
    """The ``Box`` of one array spec: its bounds where it has them (``BoundedArray``), else its
    dtype's range; bools as ``int8`` ``{0, 1}``."""
    shape = tuple(int(s) for s in spec.shape)
    dtype = np.dtype(spec.dtype)
    if dtype == np.bool_:
        return gym.spaces.Box(0, 1, shape, np.int8)
    if hasattr(spec, "minimum"):
        low = np.broadcast_to(np.asarray(spec.minimum, np.float64), shape)
        high = np.broadcast_to(np.asarray(spec.maximum, np.float64), shape)
    elif dtype.kind == "f":
        low, high = np.full(shape, -np.inf), np.full(shape, np.inf)
    else:
        low, high = np.full(shape, np.iinfo(dtype).min), np.full(shape, np.iinfo(dtype).max)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        low, high = np.clip(low, info.min, info.max), np.clip(high, info.min, info.max)
    return gym.spaces.Box(low.astype(dtype), high.astype(dtype), shape, dtype)


def plain_tree(spec: Any, value: Any) -> Any:
    """``value`` (an ``Observation`` NamedTuple or dataclass, with JAX or numpy leaves) as
    nested dicts keyed as ``spec``'s fields; an array spec's value as it is."""
    named = fields(spec)
    if not named:
        return value
    return {key: plain_tree(child, getattr(value, key)) for key, child in named}


@dataclass(frozen=True)
class AgentLayout:
    """A multi-agent Jumanji env as the hub sees it (see the module).

    Attributes:
        num_agents: ``n``, the agent dimension of the env's specs.
        agents: ``agent_0 .. agent_{n-1}``.
        observation_space: every agent's observation space (one object).
        action_spaces: agent -> its row of the action spec as a space.
        action_dtype: the dtype of Jumanji's action array.
        masked: the observation has an ``action_mask`` of one row per agent of Discrete
            actions (each agent's row goes in its observation).
        observation_spec: Jumanji's observation spec (``plain_tree`` reads values by it).
    """

    num_agents: int
    agents: list[AgentID]
    observation_space: gym.spaces.Space
    action_spaces: dict[AgentID, gym.Space]
    action_dtype: np.dtype
    masked: bool
    observation_spec: Any

    def observation(self, tree: Any, index: int, space: Optional[gym.Space] = None) -> Any:
        """Agent ``index``'s observation from the team's (``plain_tree``, numpy leaves)."""
        space = self.observation_space if space is None else space
        if isinstance(space, gym.spaces.Dict):
            top = space is self.observation_space
            return {key: (np.asarray(tree[key][index]).astype(np.int8)
                          if top and self.masked and key == ACTION_MASK_KEY
                          else self.observation(tree[key], index, sub))
                    for key, sub in space.spaces.items()}
        return np.array(tree, dtype=space.dtype).reshape(space.shape)

    def masks(self, tree: Any) -> dict[AgentID, np.ndarray]:
        """Each agent's legal actions (``int8``), or ``{}`` for an env without masks."""
        if not self.masked:
            return {}
        rows = np.asarray(tree[ACTION_MASK_KEY]).astype(np.int8)
        return {agent: rows[i] for i, agent in enumerate(self.agents)}

    def native_action(self, actions: Sequence[Any]) -> np.ndarray:
        """The agents' actions, in agent order, as Jumanji's one action array."""
        return np.asarray([np.asarray(a) for a in actions], dtype=self.action_dtype)

    def per_agent(self, value: Any) -> np.ndarray:
        """A reward or discount as one float per agent (a team's repeated). Read from the
        value, not the spec: SearchAndRescue declares one discount and returns one per agent."""
        value = np.asarray(value, np.float64)
        return np.full(self.num_agents, float(value)) if value.ndim == 0 else value.reshape(-1)


def layout_of(env: Any, where: str) -> AgentLayout:
    """Return the :class:`AgentLayout` of the Jumanji env ``env``.

    Args:
        env: a Jumanji ``Environment``.
        where: the env's name, for messages.

    Raises:
        ConfigError: ``env`` is single-agent, or has a spec the hub does not map.
    """
    n, why = agent_dimension(env)
    if n is None:
        raise ConfigError(where, f"marlhub takes Jumanji's multi-agent envs, and {why}",
                          fix="Use a multi-agent env (`marlhub list jumanji`), or Jumanji's own "
                              "JumanjiToGymWrapper for a single-agent one.")
    agents: list[AgentID] = [f"agent_{i}" for i in range(n)]
    action_spec = env.action_spec
    rows = _action_rows(action_spec, n, where)
    spec = env.observation_spec
    masked = _masked(spec, rows, n, where)
    return AgentLayout(
        num_agents=n, agents=agents, observation_space=_observation_space(spec, masked),
        action_spaces=dict(zip(agents, rows)), action_dtype=np.dtype(action_spec.dtype),
        masked=masked, observation_spec=spec)


def _action_rows(spec: Any, n: int, where: str) -> list[gym.Space]:
    """Each agent's action space: row ``i`` of the action spec."""
    shape = tuple(int(s) for s in spec.shape)
    if hasattr(spec, "num_values"):  # MultiDiscreteArray
        values = np.broadcast_to(np.asarray(spec.num_values, np.int64), shape)
        return [gym.spaces.Discrete(int(v)) if v.ndim == 0 else gym.spaces.MultiDiscrete(v)
                for v in values]
    box = leaf_space(spec)
    if box.dtype == np.int8 and np.dtype(spec.dtype) == np.bool_:
        raise ConfigError(where, "its action spec is an array of bools, which the hub does not "
                          "map", fix="Use an env with discrete or continuous actions.")
    return [gym.spaces.Box(box.low[i], box.high[i], shape[1:], box.dtype) for i in range(n)]


def _masked(spec: Any, rows: Sequence[gym.Space], n: int, where: str) -> bool:
    """Whether the observation's ``action_mask`` is one row of legal actions per agent."""
    mask = dict(fields(spec)).get(ACTION_MASK_KEY)
    if mask is None:
        return False
    sizes = {int(s.n) for s in rows if isinstance(s, gym.spaces.Discrete)}
    if not all(isinstance(s, gym.spaces.Discrete) for s in rows) or len(sizes) != 1 \
            or tuple(getattr(mask, "shape", ())) != (n, *sizes):
        raise ConfigError(where, f"its observation's action_mask has shape "
                          f"{tuple(getattr(mask, 'shape', ()))}, not one row of legal actions "
                          "per agent of Discrete actions",
                          fix="marlhub reads each agent's mask from its row; use an env whose "
                              "mask has a row per agent.")
    return True


def _observation_space(spec: Any, masked: bool) -> gym.Space:
    named = fields(spec)
    if not named:
        return leaf_space(spec)
    spaces: dict[str, gym.Space] = {}
    for key, child in named:
        if masked and key == ACTION_MASK_KEY:
            spaces[key] = gym.spaces.Box(0, 1, tuple(int(s) for s in child.shape[1:]), np.int8)
        else:
            spaces[key] = _observation_space(child, False)
    return gym.spaces.Dict(spaces)
