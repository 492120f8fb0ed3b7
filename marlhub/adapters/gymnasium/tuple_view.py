"""hub -> Gymnasium in the Tuple convention: :class:`TupleView`, for EPyMARL-style learners.

The convention of ``lbforaging``, ``rware`` and ma-gym, which EPyMARL's ``gymma``
and PyMARL2 load with ``gym.make(key)``: one Gymnasium env for the team,
observation and action spaces ``Tuple`` spaces with one entry per agent (in
``possible_agents`` order), ``step`` takes a tuple of actions and returns the
rewards as a list, one ``terminated`` and one ``truncated`` for all, and
``n_agents``.

Agents that do not act in a step get the treatment of EPyMARL's padded envs
(SMAC's dead units) and of marlhub's agent slots, so every entry is always there:

* an **acting** agent's entry is its latest observation; its action counts;
* a **waiting** agent (alive, not acting: turn-based games) shows its latest
  observation and gets its rewards; its action is ignored;
* a **gone** agent (it terminated or was truncated, or has not joined yet) shows
  zeros (the nearest value of its space), gets reward 0; its action is ignored.
  In the step it ends it shows its final observation when the hub gave one.

``info["acting"]`` and ``info["alive"]`` say which is which (one bool per
agent); where every action space is ``Discrete`` (or ``MultiDiscrete``)
``info["action_mask"]`` holds one mask per agent: the hub env's mask (all ones
where it has none) for acting agents, only the first action for the others, so
a masking learner gives their ignored actions probability 1.
``info["agent_infos"]`` holds each agent's info dict, and the hub's
``infos["__common__"]`` is merged into ``info``. Masked-out actions go to the
same illegal-action policy as :func:`~marlhub.adapters.gymnasium.to_gymnasium`'s.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> view = TupleView(TicTacToe())
    >>> view.n_agents, view.action_space
    (2, Tuple(Discrete(9), Discrete(9)))
    >>> obs, info = view.reset(seed=0)
    >>> info["acting"]                    # one player starts, the other waits
    (False, True)
    >>> info["action_mask"][0].tolist()   # the waiting player: only the first action
    [1, 0, 0, 0, 0, 0, 0, 0, 0]
    >>> obs, rewards, terminated, truncated, info = view.step((0, 4))  # player1's 0 ignored
    >>> rewards, terminated, info["acting"]
    ([0.0, 0.0], False, (True, False))
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.apis import to_hub
from marlhub.adapters.gymnasium.adapter import is_gymnasium_env
from marlhub.adapters.gymnasium.driving import DEFAULT_ILLEGAL_ACTION, DrivenView, HubDriver
from marlhub.adapters.gymnasium.tuple_agents import (
    ACTING_KEY,
    AGENT_INFOS_KEY,
    ALIVE_KEY,
    TupleAgentsEnv,
    is_tuple_team,
)
from marlhub.contract.rules import TURN_ACTORS_EXIST
from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, flag, require_running
from marlhub.errors import ActionError, AgentIdError, EnvContractError
from marlhub.rewards import require_scalar_rewards
from marlhub.spaces import ACTION_MASK_KEY, zero_like

__all__ = ["TupleView", "to_gymnasium_tuple"]


class TupleView(DrivenView, gym.Env):
    """A hub env as one Gymnasium env with ``Tuple`` spaces over its possible agents.

    Args:
        hub_env: the hub env.
        illegal_action: what a masked-out action does (see
            :func:`~marlhub.adapters.gymnasium.to_gymnasium`).

    Attributes:
        hub_env: the hub env.
        possible_agents: its agents, in the order of the tuples.
        n_agents: how many (EPyMARL reads it).

    Raises:
        AgentIdError: the hub env has no possible agents.
    """

    observation_space: gym.spaces.Tuple
    action_space: gym.spaces.Tuple

    def __init__(self, hub_env: Any, *, illegal_action: str = DEFAULT_ILLEGAL_ACTION) -> None:
        self._drive(hub_env, illegal_action)
        self.possible_agents = list(hub_env.possible_agents)
        if not self.possible_agents:
            raise AgentIdError(None, f"{type(hub_env).__name__} has no possible agents",
                               fix="A Tuple over the agents needs at least one agent.")
        self.n_agents = len(self.possible_agents)
        self._obs_spaces = [hub_env.get_observation_space(a) for a in self.possible_agents]
        self._act_spaces = [hub_env.get_action_space(a) for a in self.possible_agents]
        self.observation_space = gym.spaces.Tuple(self._obs_spaces)
        self.action_space = gym.spaces.Tuple(self._act_spaces)
        self.metadata = dict(getattr(hub_env, "metadata", None) or {})
        self.render_mode = getattr(hub_env, "render_mode", None)
        self._space_of = dict(zip(self.possible_agents, self._act_spaces))
        self._masked = all(_mask_size(s) is not None for s in self._act_spaces)
        self._hub = HubDriver(self._env)
        self._seen: set[AgentID] = set()
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Reset the hub env; return every agent's entry and the info (see the module)."""
        super().reset(seed=seed)
        obs, infos = self._env.reset(seed=seed, options=options)
        self._hub.begin(obs, infos)
        self._seen = set(obs)
        self._cannot_step = None
        self._require_actors()
        return self._observations(obs), self._info(infos)

    def step(  # type: ignore[override]  # a list of rewards: the Tuple convention
        self, action: Any
    ) -> tuple[tuple[Any, ...], list[float], bool, bool, dict[str, Any]]:
        """Step the hub env with the acting agents' entries of ``action``; the rest are ignored.

        Returns:
            ``(obs, rewards, terminated, truncated, info)``: a tuple of every agent's
            entry, a list of every agent's reward (0 for gone agents), ``__all__``
            of both done dicts, and the info (see the module).

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: ``action`` is not one entry per agent, or an acting agent's
                entry is outside its space (nothing is stepped then); or the hub env
                rejects an action (a masked-out one, with ``illegal_action="raise"``).
        """
        require_running(type(self).__name__, self._cannot_step)
        result = self._env.step(self._check_actions(action))
        self._hub.record(result)
        obs, rewards, terminateds, truncateds, infos = result
        self._seen.update(obs)
        if self._hub.over:
            self._cannot_step = EPISODE_OVER
        else:
            self._require_actors()
        reward: list[float] = [float(rewards.get(a, 0.0)) for a in self.possible_agents]
        return (self._observations(obs), reward, flag(terminateds, ALL), flag(truncateds, ALL),
                self._info(infos))

    def _alive(self) -> set[AgentID]:
        if self._hub.over:
            return set()
        live = set(getattr(self.hub_env, "agents", None) or ())
        return (self._seen | live) - self._hub.done

    def _observations(self, obs: MultiAgentDict) -> tuple[Any, ...]:
        alive = self._alive()
        last = self._hub.last_obs
        return tuple(
            obs[a] if a in obs
            else copy.deepcopy(last[a]) if a in alive and a in last  # never the same object twice
            else zero_like(space)
            for a, space in zip(self.possible_agents, self._obs_spaces))

    def _info(self, infos: MultiAgentDict) -> dict[str, Any]:
        common = infos.get(COMMON)
        info: dict[str, Any] = copy.deepcopy(dict(common)) if isinstance(common, Mapping) else {}
        actors = set(self._hub.actors)
        alive = self._alive()
        info[ACTING_KEY] = tuple(a in actors for a in self.possible_agents)
        info[ALIVE_KEY] = tuple(a in alive for a in self.possible_agents)
        # Copies: an env may keep updating the dicts it returned (PettingZoo's infos).
        info[AGENT_INFOS_KEY] = tuple(copy.deepcopy(dict(infos.get(a) or {}))
                                      for a in self.possible_agents)
        if self._masked:
            info[ACTION_MASK_KEY] = tuple(
                self._mask(a, space) if a in actors else _first_only(space)
                for a, space in zip(self.possible_agents, self._act_spaces))
        return info

    def _mask(self, agent: AgentID, space: gym.Space) -> np.ndarray:
        mask = self._hub.mask(agent)
        if mask is None:
            return np.ones(_mask_size(space) or 0, dtype=np.int8)
        return np.asarray(mask, dtype=np.int8).copy()

    def _check_actions(self, action: Any) -> MultiAgentDict:
        n = self.n_agents
        if not (isinstance(action, (tuple, list)) or (isinstance(action, np.ndarray)
                                                       and action.ndim >= 1)) or len(action) != n:
            raise ActionError(
                None, action,
                expected=f"a tuple of {n} actions, one per agent of {self.possible_agents}",
                fix="The action space is a Tuple over the agents; sample it or build such a "
                    "tuple (the entries of agents that do not act are ignored).")
        actors = self._hub.actors
        given = {a: action[i] for i, a in enumerate(self.possible_agents) if a in actors}
        return check_action_dict("TupleView", given, actors=actors,
                                 possible_agents=self.possible_agents,
                                 space_of=self._space_of.__getitem__)

    def _require_actors(self) -> None:
        if self._hub.actors:
            return
        self._cannot_step = "the hub env named no agent that acts next (see the error raised then)"
        raise EnvContractError(type(self.hub_env).__name__, TURN_ACTORS_EXIST,
                               "it returned no agent that acts next while the episode is not over")

    def lossless_hub_env(self) -> Any:
        """The hub env: the Tuple view shows all of it."""
        return self.hub_env

    def __repr__(self) -> str:
        return f"<TupleView of {self.hub_env!r}>"


def to_gymnasium_tuple(env: Any, *, illegal_action: str = DEFAULT_ILLEGAL_ACTION) -> gym.Env:
    """Return a hub env (or any env :func:`~marlhub.adapters.to_hub` takes) in the Tuple convention.

    See :class:`TupleView` and the module for what each entry holds. Converting
    back unwraps: an env made by
    :func:`~marlhub.adapters.gymnasium.from_gymnasium_tuple` gives its Gymnasium env
    back, and a Gymnasium env of the convention
    (:func:`~marlhub.adapters.gymnasium.is_tuple_team`) is returned as it is.

    Args:
        env: the env.
        illegal_action: what a masked-out action does: ``"terminate"`` (the
            default: the agent gets -1 and the episode ends), ``"substitute"`` (a
            random legal action is played) or ``"raise"`` (``ActionError``).

    Raises:
        ProtocolError: ``env`` cannot be made a hub env.

    Example:
        >>> import marlhub
        >>> view = to_gymnasium_tuple(marlhub.make("rock_paper_scissors"))
        >>> view.reset(seed=0)[0]
        (0, 0)
        >>> view.step((1, 0))[1]   # paper beats rock
        [1.0, -1.0]
    """
    if isinstance(env, TupleAgentsEnv):
        return env.env
    if is_gymnasium_env(env) and is_tuple_team(env):
        return env
    hub = to_hub(env)
    require_scalar_rewards(hub, "to_gymnasium_tuple", needs="the Tuple convention pays one "
                           "number per agent")
    return TupleView(hub, illegal_action=illegal_action)


def _mask_size(space: gym.Space) -> Optional[int]:
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return int(space.nvec.sum())
    return None


def _first_only(space: gym.Space) -> np.ndarray:
    """A mask that allows only the first action (of each dimension of a MultiDiscrete)."""
    mask = np.zeros(_mask_size(space) or 0, dtype=np.int8)
    if isinstance(space, gym.spaces.MultiDiscrete):
        mask[np.concatenate([[0], np.cumsum(space.nvec)[:-1]])] = 1
    else:
        mask[0] = 1
    return mask
