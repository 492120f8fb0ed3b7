"""What a natively batched simulator hands the vector layer: :class:`SourceBatch`, per group.

A *batched source* holds ``num_envs`` copies of one scenario in one object and
steps them in one call (VMAS, a TorchRL env with ``batch_size=[N]``, JaxMARL
under ``jax.vmap``). :class:`~marlhub.vector.sources.batched.BatchedVectorEnv` turns
one into a vector env with all three faces; the adapter of each simulator
(``adapters/vmas/batched.py``, ``adapters/torchrl/batched.py``) implements
:class:`BatchedSource`:

* ``num_envs``, ``possible_agents``, ``observation_spaces``, ``action_spaces``
  (one copy's, as gymnasium spaces), ``groups`` (group name -> agents that share
  both spaces, in ``possible_agents`` order), ``metadata``, ``render_mode``;
* ``device``: where the simulator's tensors live (``None`` for numpy);
* ``reset(seed)`` resets every copy; ``reset_rows(rows)`` only the copies of the
  index array ``rows`` (the simulator's own partial reset); ``step(actions)``
  takes one array per group, ``(num_envs, n, ...)`` as the group's action space
  has it, already checked; each returns a :class:`SourceBatch` of every copy
  (after ``reset_rows`` only the reset rows are read);
* ``seeding``: one sentence on what ``reset(seed=s)`` reproduces;
* ``tolerance`` (optional, 0 by default): how far its floats may be from one
  copy's, relatively or absolutely, where it compiles the batch apart (JAX);
* ``close()``.

Values are the simulator's own arrays or tensors; the vector env turns them
into numpy (or keeps torch tensors, if asked).

Example:
    >>> import numpy as np
    >>> batch = SourceBatch(obs={"agents": np.zeros((2, 3, 4))},
    ...                     terminated=np.zeros(2, bool), truncated=np.zeros(2, bool))
    >>> batch.rewards is None, batch.obs["agents"].shape
    (True, (2, 3, 4))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from marlhub.adapters.torchrl.groups import default_group_map
from marlhub.core import AgentID

__all__ = ["BatchedSource", "SourceBatch", "group_agents", "reward_shape", "to_numpy"]


def to_numpy(value: Any) -> Any:
    """A source's values (torch tensors, JAX or numpy arrays, nested dicts of them) as numpy.

    Example:
        >>> to_numpy({"a": [1, 2]})["a"]
        array([1, 2])
    """
    if isinstance(value, dict):
        return {k: to_numpy(v) for k, v in value.items()}
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def group_agents(agents: Sequence[AgentID], observation_space: Callable[[AgentID], gym.Space],
                 action_space: Callable[[AgentID], gym.Space],
                 reward_space: Callable[[AgentID], Optional[gym.Space]] = lambda agent: None,
                 ) -> dict[str, list[AgentID]]:
    """Return the groups of the array face: group name -> agents that share both spaces (and
    the shape of their rewards: a declared reward space, :mod:`marlhub.rewards`).

    One group ``"agents"`` when every agent has the same spaces (TorchRL's
    ``ALL_IN_ONE_GROUP``); otherwise ``"car_0"``, ``"car_1"`` share ``"car"`` when
    their spaces agree, and any other agent is a group of its own.

    Example:
        >>> box, coin = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(2)
        >>> spaces = {"car_0": (box, coin), "car_1": (box, coin), "light": (coin, coin)}
        >>> group_agents(list(spaces), lambda a: spaces[a][0], lambda a: spaces[a][1])
        {'car': ['car_0', 'car_1'], 'light': ['light']}
    """
    def same(a: AgentID, b: AgentID) -> bool:
        return observation_space(a) == observation_space(b) and action_space(a) == action_space(b) \
            and reward_shape(reward_space(a)) == reward_shape(reward_space(b))

    return default_group_map(list(agents), same)


def reward_shape(space: Optional[gym.Space]) -> tuple[int, ...]:
    """The shape of one agent's reward: ``()`` for a scalar, else its declared space's."""
    return () if space is None else tuple(space.shape or ())


@dataclass
class SourceBatch:
    """One reset or step of every copy of a batched source, per group.

    Attributes:
        obs: group -> ``(num_envs, n, ...)`` (a dict of such for ``Dict`` spaces).
        terminated, truncated: ``(num_envs,)`` bools, the end of each copy's episode.
        rewards: group -> ``(num_envs, n)``; None after a reset.
        agent_terminated, agent_truncated: group -> ``(num_envs, n)`` bools, agents
            done before the episode ends; None when all agents end together.
        infos: group -> key -> ``(num_envs, n, ...)``: per-agent infos; None for none.
        action_mask: group -> ``(num_envs, n, size)``: legal actions; None for none.
        acting: group -> ``(num_envs, n)`` bools: who acts next (the player whose turn it
            is); None: every agent that is not done.
        common_infos: infos of the whole copy (a dict of ``(num_envs, ...)`` arrays, any
            nesting), under ``infos["__common__"]`` of the dict face; None for none.
    """

    obs: dict[str, Any]
    terminated: Any
    truncated: Any
    rewards: Optional[dict[str, Any]] = None
    agent_terminated: Optional[dict[str, Any]] = None
    agent_truncated: Optional[dict[str, Any]] = None
    infos: Optional[dict[str, dict[str, Any]]] = None
    action_mask: Optional[dict[str, Any]] = None
    acting: Optional[dict[str, Any]] = None
    common_infos: Optional[dict[str, Any]] = None


@runtime_checkable
class BatchedSource(Protocol):
    """A simulator of ``num_envs`` copies stepped in one call (see the module)."""

    num_envs: int
    possible_agents: list[AgentID]
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]
    groups: dict[str, list[AgentID]]
    metadata: dict[str, Any]
    render_mode: Optional[str]
    device: Any
    seeding: str

    def reset(self, seed: Optional[int]) -> SourceBatch:
        """Reset every copy (with the simulator's own seeding when ``seed`` is given)."""
        ...

    def reset_rows(self, rows: Any) -> SourceBatch:
        """Reset the copies of the index array ``rows``; the other copies go on."""
        ...

    def step(self, actions: dict[str, Any]) -> SourceBatch:
        """Step every copy with one checked action array per group."""
        ...

    def close(self) -> None:
        """Release the simulator."""
        ...
