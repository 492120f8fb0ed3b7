"""Vector rewards: envs that declare a reward space per agent, and what follows from it.

A hub env pays each agent one number per step, unless it declares a **reward space**
for the agent: then that agent's reward is an array in the space, one entry per
objective (multi-objective envs; MOMAland's envs declare ``reward_space(agent)``,
a ``Box`` of shape ``(k,)``). A hub env declares them with ``reward_spaces``, a
dict agent id -> ``Box`` (agents it leaves out are paid scalars), or by overriding
:meth:`~marlhub.core.MultiAgentEnv.get_reward_space`; the default, None, is a scalar.

What each side does with them (docs/guides/pettingzoo.rst, "Vector rewards"):

* the contract's ``reward.scalar`` checks each reward against its agent's declared
  space (shape, a real dtype, finite, within the bounds), and scalars elsewhere;
* the PettingZoo adapters, both ways, RLlib's view and TorchRL's view (a reward
  spec of shape ``(n_agents, k)`` per group) carry the arrays unchanged;
* consumers that need one number per agent (Gymnasium's views and their learners,
  OpenSpiel's returns) refuse with :class:`~marlhub.errors.VectorRewardError`
  unless the env is scalarized first with explicit weights:
  :class:`marlhub.wrappers.ScalarizeRewards`.

Example:
    >>> import gymnasium as gym
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors()
    >>> reward_space_of(env, "player1") is None  # scalar rewards
    True
    >>> env.reward_spaces = {a: gym.spaces.Box(-1.0, 1.0, (2,)) for a in env.possible_agents}
    >>> vector_reward_agents(env)["player1"].shape
    (2,)
    >>> why_bad_reward(env.reward_spaces["player1"], np.array([0.5, 2.0]))
    "entry [1] = 2.0 is outside the space's bounds [-1.0, 1.0]"
    >>> require_scalar_rewards(env, "to_gymnasium")
    Traceback (most recent call last):
    ...
    marlhub.errors.VectorRewardError: to_gymnasium: it needs one number per agent as reward, but the env declares vector rewards: 'player1' has the reward space Box(-1.0, 1.0, (2,), float32) (2 objectives). Scalarize them first with explicit weights, one per objective: marlhub.wrappers.ScalarizeRewards(env, weights) with 2 weights (e.g. weights=[0.5, 0.5]), or a dict of such weights by agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.errors import VectorRewardError

__all__ = [
    "add_reward",
    "declared_reward_space",
    "require_scalar_rewards",
    "reward_space_of",
    "vector_reward_agents",
    "why_bad_reward",
    "zero_reward",
]


def reward_space_of(env: Any, agent: Any) -> Optional[gym.Space]:
    """Return the reward space ``env`` declares for ``agent``, or None (a scalar reward).

    Reads ``get_reward_space(agent)`` where the env has it, else its
    ``reward_spaces`` dict; anything else declares nothing.
    """
    getter = getattr(env, "get_reward_space", None)
    if callable(getter):
        space = getter(agent)
    else:
        spaces = getattr(env, "reward_spaces", None)
        space = spaces.get(agent) if isinstance(spaces, Mapping) else None
    return space if isinstance(space, gym.Space) else None


def declared_reward_space(native: Any, agent: Any) -> Optional[gym.Space]:
    """The reward space a PettingZoo-style env (MOMAland's) declares: ``reward_space(agent)``.

    For adapters of native envs, which read it once per agent. None where the env
    declares none (PettingZoo's own envs) or where the look-up fails.
    """
    getter = getattr(native, "reward_space", None)
    if callable(getter):
        try:
            space = getter(agent)
        except (KeyError, AttributeError, TypeError, NotImplementedError):
            return None
    else:
        spaces = getattr(native, "reward_spaces", None)
        space = spaces.get(agent) if isinstance(spaces, Mapping) else None
    return space if isinstance(space, gym.Space) else None


def vector_reward_agents(env: Any) -> dict[Any, gym.Space]:
    """Return ``{agent: reward space}`` of every possible agent whose rewards are arrays."""
    found = {}
    for agent in getattr(env, "possible_agents", None) or ():
        space = reward_space_of(env, agent)
        if space is not None and space.shape != ():
            found[agent] = space
    return found


def require_scalar_rewards(env: Any, consumer: str, *, needs: str = "") -> None:
    """Raise :class:`VectorRewardError` if ``env`` pays any agent a vector reward.

    Args:
        env: the hub env a consumer is about to take.
        consumer: who needs scalars, for the message (``"to_gymnasium"``).
        needs: what for, when it says more than the default.
    """
    vectors = vector_reward_agents(env)
    if not vectors:
        return
    agent, space = next(iter(vectors.items()))
    k = int(np.prod(space.shape or ()))
    example = [round(1.0 / k, 4)] * k
    raise VectorRewardError(
        consumer,
        f"{needs or 'it needs one number per agent as reward'}, but the env declares vector "
        f"rewards: {agent!r} has the reward space {space} ({k} objectives)",
        agent_id=agent, space=space,
        fix=("Scalarize them first with explicit weights, one per objective: "
             f"marlhub.wrappers.ScalarizeRewards(env, weights) with {k} weights (e.g. "
             f"weights={example}), or a dict of such weights by agent."),
    )


def why_bad_reward(space: gym.Space, value: Any) -> Optional[str]:
    """Why ``value`` is no reward in the declared ``space``, or None when it is one.

    A reward in a ``Box`` has the space's shape, a real (int or float, not bool)
    dtype, finite entries within the bounds; its dtype may be wider than the space's
    (a float64 reward in a float32 space), as rewards are summed into returns.
    """
    if not isinstance(space, gym.spaces.Box):
        return None if space.contains(value) else f"{value!r} is not in {space}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (np.ndarray, list, tuple, int, float, np.integer, np.floating)):
        return f"{value!r} ({type(value).__name__}) is not an array"
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        return f"its dtype {array.dtype} is not a real number type"
    if array.shape != space.shape:
        return f"its shape {array.shape} is not the space's {space.shape}"
    bad = np.argwhere(~np.isfinite(array))
    if len(bad):
        index = tuple(int(i) for i in bad[0])
        return f"entry {list(index)} = {array[index].item()!r} is not finite"
    low, high = np.broadcast_to(space.low, space.shape), np.broadcast_to(space.high, space.shape)
    outside = np.argwhere((array < low) | (array > high))
    if len(outside):
        index = tuple(int(i) for i in outside[0])
        return (f"entry {list(index)} = {array[index].item()!r} is outside the space's bounds "
                f"[{low[index].item()!r}, {high[index].item()!r}]")
    return None


def zero_reward(space: Optional[gym.Space]) -> Any:
    """The reward of an agent paid nothing: ``0.0``, or zeros of its declared space."""
    if space is None or space.shape == ():
        return 0.0
    return np.zeros(space.shape, dtype=space.dtype if space.dtype is not None else np.float64)


def add_reward(total: Any, reward: Any) -> Any:
    """``total + reward`` as a return: a float for scalars, a float64 array for vectors.

    Example:
        >>> add_reward(0.0, np.array([1, 2], np.float32)).dtype
        dtype('float64')
        >>> add_reward(1.0, 2)
        3.0
    """
    if isinstance(reward, np.ndarray) and reward.shape != () or isinstance(total, np.ndarray):
        return np.add(total, reward, dtype=np.float64)
    return float(total) + float(reward)
