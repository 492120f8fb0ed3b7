"""Gymnasium -> hub for the Tuple convention: one Gymnasium env for a team, spaces over agents.

Level-Based Foraging (``lbforaging``), the Multi-Robot Warehouse (``rware``), ma-gym
and the envs that EPyMARL and PyMARL2 load with ``gym.make(key)`` are single
Gymnasium envs for a whole team: observation and action spaces are
``Tuple`` spaces with one entry per agent, ``step`` takes a tuple of actions, the
reward is a list (or array) with one entry per agent, and one ``terminated``
ends the episode for all. EPyMARL reads the team's size from ``n_agents``.

:class:`TupleAgentsEnv` makes such an env a hub env with agents
``agent_0 .. agent_{n-1}``:

* every agent acts in every step and observes its entry of the tuple; a
  scalar reward is the team's, given to every agent;
* ``terminated`` / ``truncated`` end the episode for every agent (``__all__``);
  a list of flags, one per agent (ma-gym), ends each agent on its own, and the
  episode when all are done;
* the info dict goes to ``infos["__common__"]``, except what
  :func:`~marlhub.adapters.gymnasium.to_gymnasium_tuple` writes per agent, which
  a Tuple env may write too: ``info["acting"]`` and ``info["alive"]`` (one bool
  per agent: who acts next, who is still in the episode; waiting agents get no
  observation, and their actions sent to the env are the first of their space),
  ``info["action_mask"]`` (one mask per agent, checked like any hub mask) and
  ``info["agent_infos"]`` (one info dict per agent).

Example:
    >>> from marlhub.adapters.gymnasium import to_gymnasium_tuple
    >>> from marlhub.envs import RockPaperScissors
    >>> native = to_gymnasium_tuple(RockPaperScissors())   # a Tuple-convention env
    >>> hub = TupleAgentsEnv(native)
    >>> hub.possible_agents, hub.n_agents
    (['agent_0', 'agent_1'], 2)
    >>> obs, infos = hub.reset(seed=0)
    >>> obs
    {'agent_0': 0, 'agent_1': 0}
    >>> hub.step({"agent_0": 1, "agent_1": 0})[1]   # paper beats rock
    {'agent_0': 1.0, 'agent_1': -1.0}
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.contract.rules import OBS_IN_SPACE, REWARD_SCALAR, TURN_ACTORS_EXIST
from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
    is_multi_agent_env,
)
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_CARRIED_OVER,
    NOT_RESET,
    require_running,
    restarts_when_pickled,
)
from marlhub.errors import AgentIdError, EnvContractError, MarlhubWarning, ProtocolError
from marlhub.spaces import ACTION_MASK_KEY, masks_are_binding, zero_like

__all__ = [
    "ACTING_KEY",
    "AGENT_INFOS_KEY",
    "ALIVE_KEY",
    "TupleAgentsEnv",
    "is_tuple_team",
    "from_gymnasium_tuple",
    "tuple_size",
]

#: Info key of a Tuple env: one bool per agent, True for the agents that act next.
ACTING_KEY = "acting"
#: Info key of a Tuple env: one bool per agent, True for those in the episode and not done.
ALIVE_KEY = "alive"
#: Info key of a Tuple env: one info dict per agent.
AGENT_INFOS_KEY = "agent_infos"
#: The info keys that hold one entry per agent (the rest is the team's: ``__common__``).
PER_AGENT_KEYS = (ACTING_KEY, ALIVE_KEY, ACTION_MASK_KEY, AGENT_INFOS_KEY)


def tuple_size(env: Any) -> Optional[int]:
    """Return ``n`` when ``env``'s observation and action spaces are tuples of ``n`` agents.

    Example:
        >>> space = gym.spaces.Tuple([gym.spaces.Discrete(2)] * 3)
        >>> class Team(gym.Env):
        ...     observation_space = action_space = space
        >>> tuple_size(Team()), tuple_size(gym.make("CartPole-v1"))
        (3, None)
    """
    obs_space = getattr(env, "observation_space", None)
    act_space = getattr(env, "action_space", None)
    if not (isinstance(obs_space, gym.spaces.Tuple) and isinstance(act_space, gym.spaces.Tuple)):
        return None
    n = len(obs_space.spaces)
    return n if n == len(act_space.spaces) and n >= 1 else None


def is_tuple_team(env: Any) -> bool:
    """Tell whether ``env`` is a Gymnasium env of the Tuple convention: one env for a team.

    True for a single-agent Gymnasium env (wrapped or not) whose observation and
    action spaces are ``Tuple`` spaces of one length ``n`` and that either says so with
    EPyMARL's ``n_agents == n`` on its unwrapped env (``lbforaging``, ``rware``,
    ma-gym), or has no ``n_agents`` and looks like a team: ``n >= 2``, every
    observation entry of one space class, every action entry of one class and none
    a ``Tuple`` or ``Dict`` (a parameterized action, such as ``Tuple(Discrete(3),
    Box(...))``, is one agent's). marlhub's own views of a hub env are never teams.

    Example:
        >>> box, act = gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(3)
        >>> class Team(gym.Env):
        ...     observation_space = gym.spaces.Tuple([box, box])
        ...     action_space = gym.spaces.Tuple([act, act])
        >>> class Parameterized(Team):
        ...     action_space = gym.spaces.Tuple([act, box])
        >>> is_tuple_team(Team()), is_tuple_team(Parameterized())
        (True, False)
    """
    if not isinstance(env, gym.Env) or is_multi_agent_env(env) \
            or hasattr(env, "lossless_hub_env"):
        return False
    n = tuple_size(env)
    n_agents = getattr(getattr(env, "unwrapped", env), "n_agents", None)
    if n is None or n_agents is not None:
        return n is not None and type(n_agents) is int and n_agents == n
    obs_kinds = {type(s) for s in cast(gym.spaces.Tuple, env.observation_space).spaces}
    act_kinds = {type(s) for s in cast(gym.spaces.Tuple, env.action_space).spaces}
    nested = (gym.spaces.Tuple, gym.spaces.Dict)
    return n >= 2 and len(obs_kinds) == 1 and len(act_kinds) == 1 \
        and not issubclass(act_kinds.pop(), nested)


def flags_of(value: Any, n: int) -> tuple[bool, list[bool]]:
    """Return ``(whole team, per agent)`` of a done flag: one bool, or one per agent (ma-gym).

    Example:
        >>> flags_of(True, 2), flags_of([True, False], 2)
        ((True, [True, True]), (False, [True, False]))
    """
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        if len(value) == n:
            each = [bool(v) for v in value]
            return all(each), each
    whole = bool(value)
    return whole, [whole] * n


class TupleAgentsEnv(MultiAgentEnv):
    """A Gymnasium env of the Tuple convention as a hub env, one agent per entry of its tuples.

    Args:
        env: the Gymnasium env; its observation and action spaces are ``Tuple`` spaces of
            the same length (EPyMARL's ``n_agents``, where it has one, must agree).
        agent_ids: the agents' ids, in the order of the tuples;
            ``agent_0 .. agent_{n-1}`` when omitted.

    Attributes:
        env: the Gymnasium env.
        n_agents: how many agents (the length of the tuples).

    Raises:
        ProtocolError: ``env`` is no Gymnasium env with ``Tuple`` spaces of one length,
            or its ``n_agents`` disagrees with them.
        AgentIdError: ``agent_ids`` has the wrong length, repeats an id or uses a reserved one.
    """

    # Always set in __init__ (the base class allows None).
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def __init__(self, env: Any, agent_ids: Optional[Sequence[AgentID]] = None) -> None:
        super().__init__()
        n = _require_tuple_env(env)
        ids: list[AgentID] = [f"agent_{i}" for i in range(n)] if agent_ids is None \
            else list(agent_ids)
        _check_ids(ids, n)
        self.env = env
        self.n_agents = n
        self.possible_agents = ids
        self.agents = list(ids)
        obs_spaces: gym.spaces.Tuple = env.observation_space
        act_spaces: gym.spaces.Tuple = env.action_space
        self.observation_spaces = dict(zip(ids, obs_spaces.spaces))
        self.action_spaces = dict(zip(ids, act_spaces.spaces))
        self.metadata = dict(getattr(env, "metadata", None) or {})
        self.render_mode = getattr(env, "render_mode", None)
        # What an agent that does not act sends: the first action of its space.
        self._idle = [zero_like(space) for space in act_spaces.spaces]
        self._acting: list[AgentID] = []
        self._alive: set[AgentID] = set()
        self._finished: set[AgentID] = set()
        self._masks: dict[AgentID, Any] = {}
        self._truncated_any = False
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the Gymnasium env (``seed``, ``options``); return the actors' observations."""
        super().reset(seed=seed)
        obs, info = self.env.reset(seed=seed, options=options)
        entries = self._entries(obs, "observation")
        self._finished = set()
        self._truncated_any = False
        self._acting, self._alive = self._who(info, ended=set())
        self._require_actors(over=False)
        self.agents = [a for a in self.possible_agents if a in self._alive]
        self._cannot_step = None
        out = {a: entries[i] for i, a in enumerate(self.possible_agents) if a in self._acting}
        return out, self._infos(info, out)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the Gymnasium env with one tuple of actions (waiting agents: their first action).

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: an action missing, for an agent that does not act, outside
                its space or masked out (nothing is stepped then).
            EnvContractError: the env returned observations or rewards of the wrong shape.
        """
        require_running(type(self).__name__, self._cannot_step)
        checked = check_action_dict(
            type(self).__name__, action_dict, actors=self._acting,
            possible_agents=self.possible_agents, space_of=self.action_spaces.__getitem__,
            mask_of=self._masks.get if masks_are_binding(self) else None,
            why_not_actor=self._why_not_actor, finished=self._finished)
        joint = tuple(checked[a] if a in checked else self._idle[i]
                      for i, a in enumerate(self.possible_agents))
        obs, reward, terminated, truncated, info = self.env.step(joint)
        entries = self._entries(obs, "observation")
        rewards = self._rewards(reward)
        return self._advance(entries, rewards, terminated, truncated, info)

    def _advance(self, entries: list[Any], rewards: list[float], terminated: Any,
                 truncated: Any, info: Any) -> StepResult:
        n = self.n_agents
        team_term, each_term = flags_of(terminated, n)
        team_trunc, each_trunc = flags_of(truncated, n)
        before = self._alive
        acting, alive = self._who(info, ended={a for i, a in enumerate(self.possible_agents)
                                               if each_term[i] or each_trunc[i]})
        over = team_term or team_trunc or not alive
        ended = (before | alive) if over else before - alive
        self._truncated_any |= any(each_trunc[i] and not each_term[i]
                                   for i, a in enumerate(self.possible_agents) if a in ended)
        all_terminated = over and (team_term or not (team_trunc or self._truncated_any))
        obs: MultiAgentDict = {}
        out_rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        for i, agent in enumerate(self.possible_agents):
            if agent in self._finished:
                if rewards[i] != 0.0:
                    warnings.warn(
                        f"{_name(self.env)} gave {agent!r} the reward {rewards[i]} after it "
                        "left the episode; the hub names a done agent no more, so it is not "
                        "reported. Give agents that are gone 0.", MarlhubWarning, stacklevel=3)
                continue
            if agent in before or agent in alive or rewards[i] != 0.0:
                out_rewards[agent] = rewards[i]
            if agent in ended:
                obs[agent] = entries[i]
                term = all_terminated if over else (each_term[i] or not each_trunc[i])
                terminateds[agent], truncateds[agent] = term, not term
            elif agent in acting and not over:
                obs[agent] = entries[i]
                terminateds[agent] = truncateds[agent] = False
        terminateds[ALL], truncateds[ALL] = all_terminated, over and not all_terminated
        self._finished |= ended
        self._acting = [] if over else acting
        self._alive = set() if over else alive
        self._require_actors(over)
        self.agents = [a for a in self.possible_agents if a in self._alive]
        if over:
            self._cannot_step = EPISODE_OVER
        return obs, out_rewards, terminateds, truncateds, self._infos(info, obs)

    def _who(self, info: Any, ended: set[AgentID]) -> tuple[list[AgentID], set[AgentID]]:
        """The agents that act next and those alive, from the info's flags (all, if it has none)."""
        gone = self._finished | ended
        alive_flags = _per_agent(info, ALIVE_KEY, self.n_agents)
        acting_flags = _per_agent(info, ACTING_KEY, self.n_agents)
        alive = {a for i, a in enumerate(self.possible_agents)
                 if a not in gone and (alive_flags is None or alive_flags[i])}
        acting = [a for i, a in enumerate(self.possible_agents)
                  if a in alive and (acting_flags is None or acting_flags[i])]
        return acting, alive

    def _infos(self, info: Any, obs: MultiAgentDict) -> MultiAgentDict:
        info = dict(info) if isinstance(info, dict) else {}
        masks = _per_agent(info, ACTION_MASK_KEY, self.n_agents)
        own = _per_agent(info, AGENT_INFOS_KEY, self.n_agents)
        self._masks = {}
        infos: MultiAgentDict = {}
        for i, agent in enumerate(self.possible_agents):
            if agent not in obs:
                continue
            entry = dict(own[i]) if own is not None and isinstance(own[i], dict) else {}
            if masks is not None:
                entry[ACTION_MASK_KEY] = masks[i]
                if agent in self._acting:
                    self._masks[agent] = masks[i]
            infos[agent] = entry
        common = {k: v for k, v in info.items() if k not in PER_AGENT_KEYS}
        if common:
            infos[COMMON] = common
        return infos

    def _entries(self, value: Any, what: str) -> list[Any]:
        if isinstance(value, (tuple, list, np.ndarray)) and len(value) == self.n_agents:
            return list(value)
        raise EnvContractError(
            _name(self.env), OBS_IN_SPACE,
            f"its {what} {value!r:.80} is not one entry per agent ({self.n_agents}), as its Tuple "
            "observation space says")

    def _rewards(self, reward: Any) -> list[float]:
        if isinstance(reward, (tuple, list)) or (isinstance(reward, np.ndarray) and reward.ndim):
            if len(reward) == self.n_agents:
                return [float(r) for r in reward]
        elif isinstance(reward, (int, float, np.number, np.ndarray)) \
                and not isinstance(reward, bool):
            return [float(reward)] * self.n_agents  # the team's reward, every agent's
        raise EnvContractError(
            _name(self.env), REWARD_SCALAR,
            f"its reward {reward!r:.80} is neither one number (the team's) nor one per agent "
            f"({self.n_agents})")

    def _require_actors(self, over: bool) -> None:
        if not over and not self._acting:
            raise EnvContractError(
                _name(self.env), TURN_ACTORS_EXIST,
                f"its info[{ACTING_KEY!r}] says that no agent acts next, while the episode is not "
                "over")

    def _why_not_actor(self, agent: AgentID) -> Optional[str]:
        if agent in self._alive:
            return f"it waits in this step (info[{ACTING_KEY!r}] is False for it)"
        return None

    def render(self) -> Any:
        """Render the Gymnasium env."""
        return self.env.render()

    def close(self) -> None:
        """Close the Gymnasium env."""
        self.env.close()

    def __getstate__(self) -> dict[str, Any]:
        """Return what pickles; a copy made in an episode of an EzPickle env must be reset."""
        state = self.__dict__.copy()
        if self._cannot_step is None and restarts_when_pickled(self.env):
            state["_cannot_step"] = NOT_CARRIED_OVER
        return state

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {_name(self.env)} agents={self.possible_agents!r}>"


def from_gymnasium_tuple(env: Any, agent_ids: Optional[Sequence[AgentID]] = None) -> MultiAgentEnv:
    """Return a Gymnasium env of the Tuple convention as a hub env (see :class:`TupleAgentsEnv`).

    A view made by :func:`~marlhub.adapters.gymnasium.to_gymnasium_tuple` unwraps
    to its hub env; a hub env is returned as it is.

    Args:
        env: the Gymnasium env, whose spaces are ``Tuple`` spaces over agents.
        agent_ids: the agents' ids; ``agent_0 .. agent_{n-1}`` when omitted.

    Raises:
        ProtocolError: ``env`` has no ``Tuple`` spaces of one length.

    Example:
        >>> from marlhub.adapters.gymnasium import to_gymnasium_tuple
        >>> from marlhub.envs import TicTacToe
        >>> hub = TicTacToe()
        >>> from_gymnasium_tuple(to_gymnasium_tuple(hub)) is hub
        True
    """
    lossless = getattr(env, "lossless_hub_env", None)  # a view made by to_gymnasium_tuple
    if agent_ids is None and callable(lossless) and lossless() is not None:
        return lossless()
    if isinstance(env, MultiAgentEnv) or is_multi_agent_env(env):
        return env
    return TupleAgentsEnv(env, agent_ids)


def _per_agent(info: Any, key: str, n: int) -> Optional[Sequence[Any]]:
    value = info.get(key) if isinstance(info, dict) else None
    if isinstance(value, (tuple, list, np.ndarray)) and len(value) == n:
        return list(value)
    return None


def _require_tuple_env(env: Any) -> int:
    n = tuple_size(env)
    if not isinstance(env, gym.Env) or is_multi_agent_env(env) or n is None:
        raise ProtocolError(
            env, ["Tuple observation and action spaces of one length (one entry per agent)"],
            expected="a Gymnasium env of the Tuple convention (lbforaging, rware, ma-gym)",
            fix="Give a gymnasium.Env whose observation_space and action_space are "
                "gymnasium.spaces.Tuple with one entry per agent.")
    n_agents = getattr(getattr(env, "unwrapped", env), "n_agents", None)
    if type(n_agents) is int and n_agents != n:
        raise ProtocolError(
            env, [f"n_agents equal to its Tuples' length {n} (it says {n_agents})"],
            expected="a Gymnasium env of the Tuple convention",
            fix="Make n_agents and the length of the Tuple spaces agree.")
    return n


def _check_ids(ids: list[AgentID], n: int) -> None:
    if len(ids) != n:
        raise AgentIdError(None, f"got {len(ids)} agent ids {ids!r} for a team of {n}",
                           fix="Give exactly one agent id per entry of the Tuple spaces.")
    for agent in ids:
        if agent in (ALL, COMMON):
            raise AgentIdError(agent, f"{agent!r} is reserved in the hub's dicts",
                               fix="Pick another id, e.g. 'agent_0'.")
    if len(set(ids)) != n:
        raise AgentIdError(None, f"the agent ids {ids!r} repeat an id",
                           fix="Give each agent its own id.")


def _name(env: Any) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or type(getattr(env, "unwrapped", env)).__name__
