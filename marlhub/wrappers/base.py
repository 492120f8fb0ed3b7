"""What every hub -> hub wrapper forwards to the env it wraps, written once.

:class:`HubWrapper` holds the wrapped hub env (any env :func:`~marlhub.adapters.to_hub`
accepts) and passes ``render``, ``close``, ``metadata``, ``render_mode``, the
global ``state()`` and ``state_space`` (centralised critics read them) and, unless
a subclass says otherwise, the per-agent spaces and ``agents`` straight through,
as PettingZoo's ``BaseWrapper`` does, so each wrapper holds only what it changes.
:func:`global_state` and :func:`global_state_space` say how an env without a
global state answers, PettingZoo's way; wrappers and views not built on
:class:`HubWrapper` forward through them too.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> wrapped = HubWrapper(RockPaperScissors())
    >>> wrapped.possible_agents, wrapped.get_action_space("player1")
    (['player1', 'player2'], Discrete(3))
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.apis import to_hub
from marlhub.core import AgentID, MultiAgentEnv
from marlhub.rewards import reward_space_of

__all__ = ["ForwardsGlobalState", "HubWrapper", "global_state", "global_state_space"]


def global_state(env: Any) -> Any:
    """Return ``env.state()``, the global state of its world, where it has one.

    Args:
        env: any env.

    Raises:
        NotImplementedError: ``env`` has no ``state()`` method (as PettingZoo's
            ``ParallelEnv.state`` raises).

    Example:
        >>> from marlhub.envs import RockPaperScissors, Traffic
        >>> global_state(Traffic()).shape
        (14,)
        >>> global_state(RockPaperScissors())
        Traceback (most recent call last):
        ...
        NotImplementedError: RockPaperScissors has no state() method.
    """
    state = getattr(env, "state", None)
    if not callable(state):  # absent, or not a method (OpenSpiel's adapter: the pyspiel.State)
        raise NotImplementedError(f"{type(env).__name__} has no state() method.")
    return state()


def global_state_space(env: Any) -> gym.Space:
    """Return ``env.state_space``, the space of :func:`global_state`, where it has one.

    Args:
        env: any env.

    Raises:
        AttributeError: ``env`` has none (so ``hasattr`` says False, as learners ask).

    Example:
        >>> from marlhub.envs import Traffic
        >>> env = Traffic()
        >>> _ = env.reset(seed=0)
        >>> global_state_space(env).contains(global_state(env))
        True
    """
    space = getattr(env, "state_space", None)
    if space is None:
        raise AttributeError(f"{type(env).__name__} has no global state_space.")
    return space


class ForwardsGlobalState:
    """``state()`` and ``state_space`` of the wrapped env ``self.env`` (a wrapper leaves the
    world as it is), for every hub -> hub wrapper."""

    env: Any

    def state(self) -> Any:
        """Return the wrapped env's global ``state()``.

        Raises:
            NotImplementedError: the wrapped env has none.
        """
        return global_state(self.env)

    @property
    def state_space(self) -> gym.Space:
        """The wrapped env's ``state_space``, the space of :meth:`state`.

        Raises:
            AttributeError: the wrapped env has none.
        """
        return global_state_space(self.env)


class HubWrapper(ForwardsGlobalState, MultiAgentEnv):
    """A hub env around another; forwards everything it does not change.

    Args:
        env: the env to wrap (a hub env, or anything :func:`~marlhub.adapters.to_hub` takes).

    Attributes:
        env: the wrapped hub env.
    """

    env: Any

    def __init__(self, env: Any) -> None:
        self.__dict__["env"] = to_hub(env)  # before MultiAgentEnv.__init__ reads agents
        super().__init__()
        self.possible_agents = list(self.env.possible_agents)
        self.metadata = dict(getattr(self.env, "metadata", None) or {})
        self.render_mode = getattr(self.env, "render_mode", None)

    @property
    def agents(self) -> list[AgentID]:
        """The wrapped env's live agents."""
        return list(getattr(self.env, "agents", []))

    @agents.setter
    def agents(self, value: list[AgentID]) -> None:
        pass  # set by MultiAgentEnv.__init__; the wrapped env is the truth

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """The wrapped env's observation space of ``agent_id``."""
        return self.env.get_observation_space(agent_id)

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """The wrapped env's action space of ``agent_id``."""
        return self.env.get_action_space(agent_id)

    def get_reward_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The wrapped env's reward space of ``agent_id`` (None: its reward is one number)."""
        return reward_space_of(self.env, agent_id)

    def render(self) -> Any:
        """Render the wrapped env."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.env!r}>"
