"""Vector rewards made one number per agent by explicit weights: :class:`ScalarizeRewards`.

A multi-objective env pays each agent an array, one entry per objective, in the reward
space it declares (:mod:`marlhub.rewards`). Consumers that need one number per agent
(Gymnasium's views and the learners behind them, OpenSpiel's returns) refuse such an
env; :class:`ScalarizeRewards` pays instead the weighted sum ``np.dot(reward, weights)``,
MOMAland's ``LinearizeReward``, with weights the user chooses: marlhub never picks them.

Example:
    >>> import marlhub
    >>> env = ScalarizeRewards(marlhub.make("momaland/moitem_gathering-v0", {"api": "parallel"}),
    ...                        [1.0, 0.5, 0.25])
    >>> env.get_reward_space("agent_0") is None  # one number now
    True
    >>> obs, infos = env.reset(seed=0)
    >>> _, rewards, *_ = env.step({a: 0 for a in obs})
    >>> type(rewards["agent_0"])
    <class 'float'>
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID, MultiAgentDict, ResetResult, StepResult
from marlhub.errors import VectorRewardError
from marlhub.rewards import vector_reward_agents
from marlhub.wrappers.base import HubWrapper

__all__ = ["ScalarizeRewards"]


class ScalarizeRewards(HubWrapper):
    """Pay each agent of vector rewards ``float(np.dot(reward, weights))``, one number.

    Agents the env pays scalars keep them. The wrapped env's rewards are read, never
    changed.

    Args:
        env: a hub env (or any env :func:`~marlhub.adapters.to_hub` takes) that declares
            vector rewards for some agents.
        weights: one weight per objective, for every agent with vector rewards (a
            sequence or array of length k), or a dict agent id -> such weights naming
            exactly the agents with vector rewards.

    Raises:
        VectorRewardError: the env declares no vector rewards; weights that are not
            finite real numbers, whose length is not the agent's number of objectives,
            or a dict that misses such an agent or names another.

    Attributes:
        weights: agent id -> its weights (float64 arrays).
    """

    def __init__(self, env: Any, weights: Any) -> None:
        super().__init__(env)
        spaces = vector_reward_agents(self.env)
        if not spaces:
            raise VectorRewardError(
                type(self).__name__, "the env declares no vector rewards (no agent has a reward "
                "space), so there is nothing to scalarize",
                fix="Use the env as it is: its rewards are already one number per agent.")
        self.weights: dict[AgentID, np.ndarray] = _weights_by_agent(weights, spaces)

    def get_reward_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """None for the scalarized agents (one number); the wrapped env's for the others."""
        return None if agent_id in self.weights else super().get_reward_space(agent_id)

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the wrapped env."""
        return self.env.reset(seed=seed, options=options)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the wrapped env; pay the weighted sum of each vector reward."""
        obs, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        weights = self.weights
        paid = {a: float(np.dot(np.asarray(r, dtype=np.float64).reshape(-1), weights[a]))
                if a in weights else r for a, r in rewards.items()}
        return obs, paid, terminateds, truncateds, infos


def _weights_by_agent(weights: Any, spaces: Mapping[AgentID, gym.Space]) -> dict[AgentID, np.ndarray]:
    """Check ``weights`` against each agent's reward space; return them by agent."""
    owner = ScalarizeRewards.__name__
    if isinstance(weights, Mapping):
        missing = [a for a in spaces if a not in weights]
        strangers = [a for a in weights if a not in spaces]
        if missing or strangers:
            raise VectorRewardError(
                owner, f"the weights name {list(weights)!r}, but the agents paid vector rewards "
                f"are {list(spaces)!r} (missing {missing!r}, not paid vectors {strangers!r})",
                agent_id=(missing or strangers)[0],
                fix="Give weights for exactly the agents with vector rewards, or one sequence "
                "of weights for all of them.")
        by_agent = dict(weights)
    else:
        by_agent = dict.fromkeys(spaces, weights)
    checked = {}
    for agent, space in spaces.items():
        k = int(np.prod(space.shape or ()))
        given = by_agent[agent]
        try:
            array = np.asarray(given, dtype=np.float64)
        except (TypeError, ValueError):
            array = None
        if array is None or isinstance(given, (str, bytes)) or np.asarray(given).dtype == bool:
            problem = f"the weights for {agent!r} are {given!r}, not a sequence of numbers"
        elif array.shape != (k,):
            problem = (f"the weights for {agent!r} have shape {array.shape} but its reward "
                       f"space {space} has {k} objectives")
        elif not np.all(np.isfinite(array)):
            problem = f"the weights for {agent!r} are {array.tolist()!r}, not all finite"
        else:
            checked[agent] = array
            continue
        raise VectorRewardError(owner, problem, agent_id=agent, space=space,
                                fix=f"Pass {k} finite weights, one per objective (e.g. "
                                f"[{', '.join(['1.0'] * k)}] for the plain sum).")
    return checked
