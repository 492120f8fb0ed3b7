"""RLlib -> hub: :class:`RLlibEnv`, an RLlib ``MultiAgentEnv`` with the hub contract's guarantees.

RLlib envs already speak the hub's protocol, but RLlib itself checks little:
an env may keep ``agents`` static, leave ``__all__`` out of ``truncateds``, or
accept actions for agents whose turn it is not. :class:`RLlibEnv` adds what
the contract (:data:`~marlhub.contract.rules.RULES`) promises on top of any such env, without
importing Ray (any object that quacks like an RLlib env is accepted):

* the whole action dict is checked before any of it reaches the env (actors
  only, every actor, inside its space and action mask): ``ActionError``, env
  untouched;
* ``step`` before ``reset`` or after ``__all__`` raises ``ResetNeededError``;
* ``__all__`` missing from a done dict is filled in as False;
* an agent that acted and is terminated (or whose episode ends) without a final
  observation gets its last one again, as RLlib's episodes do for it (rule
  ``done.final_obs``); RLlib's sampler loses that agent's last reward otherwise;
* ``agents`` is kept by the wrapper: every agent that entered and is not done,
  ``[]`` once the episode is over;
* every transition is judged against the rules whose breach makes RLlib raise
  (``EnvContractError`` naming the rule), unless ``check=False``.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RLlibEnv(RockPaperScissors())
    >>> obs, infos = env.reset(seed=0)
    >>> env.step({"player1": 0})
    Traceback (most recent call last):
    ...
    marlhub.errors.ActionError: Bad action for 'player2': got {'player1': 0}, expected an action for every actor of the last observation dict ['player1', 'player2']. Add an action for 'player2'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.rllib.guard import EpisodeGuard
from marlhub.core import (
    ALL,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
    missing_protocol_members,
)
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_RESET,
    done_agents,
    episode_over,
    truthy,
    with_all,
)
from marlhub.errors import (
    EnvContractError,
    ProtocolError,
    ResetNeededError,
)
from marlhub.spaces import find_action_mask

__all__ = ["RLlibEnv", "read_possible_agents"]


def read_possible_agents(env: Any) -> list[AgentID]:
    """Return the agents an RLlib env may ever have, from wherever it declares them.

    Looks at ``possible_agents``, then ``agents``, RLlib's old ``_agent_ids`` set,
    ``get_agent_ids()`` and the keys of a ``Dict`` ``observation_space``.

    Raises:
        ProtocolError: none of them names an agent.

    Example:
        >>> class Old:
        ...     _agent_ids = {"b", "a"}
        >>> read_possible_agents(Old())
        ['a', 'b']
    """
    for name in ("possible_agents", "agents"):
        found = getattr(env, name, None)
        if found:
            return list(found)
    ids = getattr(env, "_agent_ids", None)
    if not ids and callable(getattr(env, "get_agent_ids", None)):
        ids = env.get_agent_ids()
    if not ids:
        space = getattr(env, "observation_space", None)
        ids = list(space.spaces) if isinstance(space, gym.spaces.Dict) else None
    if ids:
        try:
            return sorted(ids)
        except TypeError:  # ids of mixed types
            return list(ids)
    raise ProtocolError(
        env,
        ["possible_agents"],
        expected="an RLlib MultiAgentEnv that names its agents (possible_agents, agents, "
        "_agent_ids or a Dict observation_space)",
    )


class RLlibEnv(MultiAgentEnv):
    """An RLlib ``MultiAgentEnv`` (or anything shaped like one) as a hub env keeping the contract.

    Args:
        env: the RLlib env.
        check: judge every reset and step against the rules whose breach makes
            RLlib raise, and raise :class:`~marlhub.errors.EnvContractError`.

    Attributes:
        env: the RLlib env.

    Raises:
        ProtocolError: ``env`` has no ``reset``/``step``, names no agents or has
            no per-agent spaces.
    """

    def __init__(self, env: Any, *, check: bool = True) -> None:
        super().__init__()
        missing = [
            m for m in missing_protocol_members(env)
            if m != "possible_agents" and not (m.endswith("_spaces") and _joint_space(env, m))
        ]
        if missing:
            raise ProtocolError(env, missing, expected="an RLlib MultiAgentEnv")
        self.env = env
        self.possible_agents = read_possible_agents(env)
        self.agents = []
        self.observation_spaces = {a: _space(env, "observation", a) for a in self.possible_agents}
        self._action_spaces = {a: _space(env, "action", a) for a in self.possible_agents}
        self.action_spaces = self._action_spaces
        self._name = type(env).__name__
        self._guard = EpisodeGuard(self._name, self.possible_agents) if check else None
        self._actors: Optional[list[AgentID]] = None  # None: not reset yet
        self._over = False
        self._done: set[AgentID] = set()
        self._entered: set[AgentID] = set()
        self._last_obs: dict[AgentID, Any] = {}
        self._masks: dict[AgentID, Any] = {}
        self.metadata = getattr(env, "metadata", self.metadata)
        self.render_mode = getattr(env, "render_mode", None)

    def reset(  # type: ignore[override]
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the RLlib env; return its ``(obs, infos)``."""
        super().reset(seed=seed)
        result = self.env.reset(seed=seed, options=options)
        if not (isinstance(result, tuple) and len(result) == 2
                and all(isinstance(x, Mapping) for x in result)):
            raise EnvContractError(
                self._name, "reset.returns_dicts",
                f"reset() returned {type(result).__name__} {result!r:.80}, not (obs, infos) dicts",
            )
        obs, infos = result
        if self._guard is not None:
            self._guard.on_reset(obs, infos, agents=self._native_agents())
        self._done = set()
        self._entered = set(obs)
        self._last_obs = dict(obs)
        self._over = False
        self._after(obs, infos)
        return obs, infos

    def step(self, action_dict: MultiAgentDict) -> StepResult:  # type: ignore[override]
        """Check ``action_dict`` whole, then step the RLlib env; return its 5-tuple."""
        if self._actors is None:
            raise ResetNeededError(self._name, NOT_RESET)
        if self._over:
            raise ResetNeededError(self._name, EPISODE_OVER)
        actions = check_action_dict(
            self._name, action_dict, actors=self._actors, possible_agents=self.possible_agents,
            space_of=self._action_spaces.__getitem__, mask_of=self._masks.get,
        )
        before = list(self.agents)
        result = self.env.step(actions)  # as the env takes them (a 0-d array becomes an int)
        if not (isinstance(result, tuple) and len(result) == 5
                and all(isinstance(x, Mapping) for x in result)):
            raise EnvContractError(
                self._name, "step.returns_tuple",
                f"step() returned {type(result).__name__} {result!r:.80}, not a 5-tuple of dicts",
            )
        obs, rewards, terminateds, truncateds, infos = result
        terminateds = with_all(terminateds)
        truncateds = with_all(truncateds)
        result = (obs, rewards, terminateds, truncateds, infos)
        done_now = done_agents(terminateds, truncateds)
        if self._guard is not None:
            self._guard.on_step(
                action_dict, result, agents_before=before,
                agents_after=self._live_after(obs, done_now, episode_over(terminateds, truncateds)),
                possible_now=read_possible_agents(self.env),
            )
        obs = self._with_final_obs(obs, terminateds, truncateds, done_now)
        result = (obs, rewards, terminateds, truncateds, infos)
        self._done |= done_now
        self._entered.update(obs)
        self._last_obs.update(obs)
        self._over = episode_over(terminateds, truncateds)
        self._after(obs, infos)
        return result  # type: ignore[return-value]

    def _with_final_obs(self, obs: Mapping[Any, Any], terminateds: Mapping[Any, Any],
                        truncateds: Mapping[Any, Any], done_now: set[AgentID]) -> Any:
        """``obs`` with the last obs again for each agent that acted and ends terminated
        without one (a truncated one is done.truncation_has_obs's, which the guard judges)."""
        over = episode_over(terminateds, truncateds)
        ending = done_now | (self._entered - self._done if over else set())
        missing = [
            a for a in self.possible_agents
            if a in ending and a in self._last_obs and a not in obs and a not in self._done
            and (truthy(terminateds.get(a, False)) or truthy(terminateds.get(ALL, False)))
        ]
        if not missing:
            return obs
        return {**obs, **{a: self._last_obs[a] for a in missing}}

    def _after(self, obs: Mapping[Any, Any], infos: Mapping[Any, Any]) -> None:
        self.agents = self._live_after(obs, set(), self._over)
        self._actors = [] if self._over else [a for a in obs if a not in self._done]
        self._masks = {}
        for agent in self._actors:
            info = infos.get(agent)
            mask = find_action_mask(obs[agent], info if isinstance(info, Mapping) else None)
            if mask is not None:
                self._masks[agent] = mask

    def _live_after(
        self, obs: Mapping[Any, Any], done_now: set[AgentID], over: bool
    ) -> list[AgentID]:
        if over:
            return []
        native = set(self._native_agents() or ())
        entered = self._entered | set(obs) | native
        done = self._done | done_now
        return [a for a in self.possible_agents if a in entered and a not in done]

    def _native_agents(self) -> Optional[list[AgentID]]:
        agents = getattr(self.env, "agents", None)
        return list(agents) if agents is not None else None

    def render(self) -> Any:
        """Render the RLlib env."""
        return self.env.render()

    def close(self) -> None:
        """Close the RLlib env."""
        self.env.close()

    def __repr__(self) -> str:
        return f"<RLlibEnv of {self.env!r}>"


def _space(env: Any, kind: str, agent: AgentID) -> gym.Space:
    getter = getattr(env, f"get_{kind}_space", None)
    if callable(getter):
        return getter(agent)
    spaces = getattr(env, f"{kind}_spaces", None)
    if isinstance(spaces, Mapping):
        return spaces[agent]
    # RLlib's old API stack: one space for every agent, or a Dict keyed by agent.
    joint = getattr(env, f"{kind}_space")
    if isinstance(joint, gym.spaces.Dict) and agent in joint.spaces:
        return joint[agent]
    return joint


def _joint_space(env: Any, missing_member: str) -> bool:
    # "get_observation_space() or observation_spaces" -> does env.observation_space exist?
    kind = "observation" if "observation" in missing_member else "action"
    return isinstance(getattr(env, f"{kind}_space", None), gym.Space)
