"""What an env's structure allows: the facts that decide whether a target API can take it at all.

:meth:`EnvProfile.of` reads the spaces and plays a few seeded random episodes:
are all actions Discrete, are the observations tensors (or Tuples), does every
live agent act in every step (simultaneous). :meth:`EnvProfile.refusal` turns those facts into the reason a
target cannot take the env, or None.

Example:
    >>> import marlhub
    >>> profile = EnvProfile.of(lambda: marlhub.make("rock_paper_scissors"))
    >>> profile.simultaneous, profile.discrete, profile.refusal("pettingzoo.parallel")
    (True, True, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import gymnasium as gym

from marlhub.episode.play import RandomEpisode, episode_seed
from marlhub.rewards import vector_reward_agents

__all__ = ["EnvProfile"]

#: The targets whose consumers need one number per agent as reward, and why.
_SCALAR_TARGETS = {
    "openspiel": "OpenSpiel's returns are one number per player",
    "gymnasium": "a Gymnasium env's reward is one number",
    "gymnasium.tuple": "the Tuple convention pays one number per agent",
}
_TENSORS = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def _holds_tuple(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Tuple):
        return True
    return isinstance(space, gym.spaces.Dict) and any(map(_holds_tuple, space.spaces.values()))


def _tensor_space(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Dict):
        return all(_tensor_space(s) for s in space.spaces.values())
    if isinstance(space, gym.spaces.Tuple):
        return all(_tensor_space(s) for s in space.spaces)
    return isinstance(space, _TENSORS)


@dataclass
class EnvProfile:
    """Structural facts of an env.

    Attributes:
        agents: its possible agents.
        discrete: every action space is Discrete.
        tensor_obs: every observation space is made of tensors (no Text, Graph...).
        simultaneous: in the probed episodes every live agent acted in every step.
        turn_based_step: where a probed step was not simultaneous, who acted and who lived.
        tuple_obs: some observation space holds a Tuple.
        vector_rewards: the agents paid arrays, with their declared reward spaces.
    """

    agents: list[Any]
    discrete: bool
    tensor_obs: bool
    simultaneous: bool = True
    turn_based_step: str = ""
    tuple_obs: bool = False
    vector_rewards: dict[Any, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, make_env: Callable[[], Any], *, seed: int = 0, episodes: int = 2,
           max_steps: int = 200) -> "EnvProfile":
        """Read the spaces of ``make_env()`` and probe ``episodes`` seeded random episodes."""
        env = make_env()
        agents = list(env.possible_agents)
        profile = cls(
            agents=agents,
            discrete=all(isinstance(env.get_action_space(a), gym.spaces.Discrete)
                         for a in agents),
            tensor_obs=all(_tensor_space(env.get_observation_space(a)) for a in agents),
            tuple_obs=any(_holds_tuple(env.get_observation_space(a)) for a in agents),
            vector_rewards=vector_reward_agents(env),
        )
        for episode in range(episodes):
            for step in RandomEpisode(env, episode_seed(seed, episode), max_steps=max_steps):
                live = list(getattr(env, "agents", None) or step.actors)
                if not step.over and profile.simultaneous and set(step.actors) != set(live):
                    profile.simultaneous = False
                    profile.turn_based_step = (f"at step {step.index} of a seeded episode "
                                               f"{step.actors} act while {live} are live")
        close = getattr(env, "close", None)
        if callable(close):
            close()
        return profile

    def refusal(self, target: str) -> Optional[str]:
        """Why ``target`` cannot take an env of this structure, or None."""
        if target == "pettingzoo.parallel" and not self.simultaneous:
            return (f"turn-based: {self.turn_based_step}; PettingZoo's parallel API steps every "
                    "live agent at once (to_pettingzoo(..., api='parallel', turn_based='pad') "
                    "pads idle agents)")
        if target == "openspiel" and not self.discrete:
            return "non-Discrete action spaces: OpenSpiel games have integer actions"
        if target in _SCALAR_TARGETS and self.vector_rewards:
            agent, space = next(iter(self.vector_rewards.items()))
            return (f"vector rewards: {agent!r} is paid arrays in {space}, and "
                    f"{_SCALAR_TARGETS[target]} (scalarize them first with explicit weights: "
                    "marlhub.wrappers.ScalarizeRewards(env, weights))")
        if target == "torchrl" and not self.tensor_obs:
            return "observations that are not tensors (text, graphs): TorchRL specs hold tensors"
        return None

    def checker_limitation(self, target: str) -> Optional[str]:
        """A known fault of ``target``'s own checker on envs of this structure, or None.

        Each reproduces without marlhub, on a native env of that API with such spaces.
        """
        if target == "rllib" and self.vector_rewards:
            return ("RLlib 2.60's check_multiagent_environments takes one number per reward "
                    "(its _check_reward raises on an array), whatever env pays arrays; the view "
                    "passes them on unchanged")
        if target.startswith("pettingzoo") and self.tuple_obs:
            return ("PettingZoo 1.27's api_test cannot check Tuple observation spaces (it reads "
                    "the dtype of a sampled tuple), whatever env observes one")
        return None
