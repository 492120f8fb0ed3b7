"""Agent groups: several agents of a hub env acting as one agent with ``Tuple`` spaces.

:class:`GroupAgentsWrapper` is RLlib's class of that name (also reached through
``MultiAgentEnv.with_agent_groups``), with the same constructor and semantics:
a group's observation and action are tuples over its members, in the order the
group lists them; its reward is the sum of the members' rewards, which are kept
in ``infos[group]["individual_rewards"]`` (and under RLlib's code's key
``"_group_rewards"``), the members' infos in ``infos[group]["_group_info"]``;
agents in no group stay as they are. What RLlib lacks:

* ``possible_agents`` and ``agents`` name the groups (RLlib leaves them empty,
  which its own env checker rejects);
* a member that is done while the rest of its group goes on keeps its last
  observation in the group's tuple and its actions are ignored (RLlib raises
  "Missing member of group"); the group is done when every member is,
  terminated if every member terminated, truncated otherwise;
* members that do not act in the same steps raise a clear
  :class:`~marlhub.errors.NotParallelizableError`, and bad groups (an unknown
  agent, an agent in two groups) a clear :class:`~marlhub.errors.AgentIdError`
  up front; actions are checked before anything is stepped.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors().with_agent_groups({"team": ["player1", "player2"]})
    >>> env.possible_agents, env.get_action_space("team")
    (['team'], Tuple(Discrete(3), Discrete(3)))
    >>> env.reset(seed=0)
    ({'team': (0, 0)}, {'team': {'_group_info': [{}, {}]}})
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"team": (1, 0)})
    >>> obs, rewards, infos["team"]["individual_rewards"]
    ({'team': (0, 1)}, {'team': 0.0}, [1.0, -1.0])
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union, cast

import gymnasium as gym
import numpy as np

from marlhub.adapters.apis import to_hub
from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
    set_grouping_wrapper,
)
from marlhub.episode.actions import check_action, check_keys
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import (
    ActionError,
    AgentIdError,
    ConfigError,
    MarlhubWarning,
    NotParallelizableError,
    VectorRewardError,
)
from marlhub.rewards import reward_space_of, zero_reward
from marlhub.wrappers.base import ForwardsGlobalState

__all__ = ["GROUP_INFO", "GROUP_REWARDS", "INDIVIDUAL_REWARDS", "GroupAgentsWrapper"]

#: Key of the members' rewards in a group's info, as RLlib's docs name it.
INDIVIDUAL_REWARDS = "individual_rewards"
#: The same list under the key RLlib's code uses.
GROUP_REWARDS = "_group_rewards"
#: Key of the members' infos in a group's info (RLlib's).
GROUP_INFO = "_group_info"

_BROKEN = "group members stopped acting together (see the error raised then)"

# Keyed by group id. Any, not AgentID: Mapping keys are invariant, so Mapping[AgentID, ...]
# would refuse a plain dict[str, Tuple].
SpaceSpec = Union[None, gym.spaces.Tuple, Mapping[Any, gym.spaces.Tuple]]


class GroupAgentsWrapper(ForwardsGlobalState, MultiAgentEnv):
    """A hub env whose grouped agents act as one agent each.

    Args:
        env: the env to group (a hub env or anything
            :func:`~marlhub.adapters.to_hub` accepts).
        groups: group id -> member agent ids; the group id becomes an agent id.
        obs_space: the groups' observation space: a ``Tuple`` (for every group,
            one item per member) or a dict of group id to ``Tuple``; the
            members' spaces when omitted.
        act_space: the groups' action space, likewise.

    Attributes:
        env: the wrapped hub env.
        groups: group id -> member ids (lists).
        agent_id_to_group: member id -> group id.

    Raises:
        AgentIdError: a member is no possible agent of ``env``, is in two groups
            (or twice in one), or a group id is an agent id of ``env``.
        ConfigError: ``groups`` is not a mapping of non-empty lists, or a given
            space is not a ``Tuple`` with one item per member.
    """

    # Always set in __init__ (the base class allows None).
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def __init__(
        self,
        env: Any,
        groups: Mapping[str, Sequence[AgentID]],
        obs_space: SpaceSpec = None,
        act_space: SpaceSpec = None,
    ) -> None:
        super().__init__()
        if groups is env and isinstance(obs_space, Mapping) and act_space is None:
            # The RLlib docs' example calls env.with_agent_groups(env, {...}).
            warnings.warn(
                "with_agent_groups() got the env itself as `groups` and the groups as `obs_space` "
                "(as in the RLlib docs' example); using them as the groups. Call "
                "env.with_agent_groups(groups) instead.",
                MarlhubWarning, stacklevel=3,
            )
            groups, obs_space = obs_space, None
        self.env = to_hub(env)
        possible = _env_agents(self.env)
        self.groups, self.agent_id_to_group = _check_groups(groups, possible)
        self.possible_agents = _grouped_order(possible, self.agent_id_to_group)
        self.observation_spaces = self._spaces(obs_space, "obs_space", self.env.get_observation_space)
        self.action_spaces = self._spaces(act_space, "act_space", self.env.get_action_space)
        self.reward_spaces = self._reward_spaces()
        # RLlib assigns a given Tuple as the env's space; code written for it reads it back.
        if isinstance(obs_space, gym.spaces.Tuple):
            self.observation_space = obs_space
        if isinstance(act_space, gym.spaces.Tuple):
            self.action_space = act_space
        self.agents = list(self.possible_agents)
        self.metadata = dict(getattr(self.env, "metadata", None) or {})
        self.render_mode = getattr(self.env, "render_mode", None)
        self._last_obs: MultiAgentDict = {}
        self._last_infos: MultiAgentDict = {}
        self._done: set[AgentID] = set()  # members, ungrouped agents and groups that are done
        self._terminated: set[AgentID] = set()
        self._actors: list[AgentID] = []
        self._cannot_step: Optional[str] = NOT_RESET

    def _spaces(self, given: SpaceSpec, name: str, member_space: Any) -> dict[AgentID, gym.Space]:
        spaces: dict[AgentID, gym.Space] = {}
        for agent in self.possible_agents:
            members = self.groups.get(agent)
            if members is None:
                spaces[agent] = member_space(agent)
                continue
            space = given.get(agent) if isinstance(given, Mapping) else given
            if space is None:
                space = gym.spaces.Tuple([member_space(m) for m in members])
            elif not isinstance(space, gym.spaces.Tuple) or len(space.spaces) != len(members):
                raise ConfigError(
                    type(self).__name__,
                    f"{name} for group {agent!r} must be a gymnasium.spaces.Tuple with one item per "
                    f"member ({len(members)}), got {space!r:.80}",
                    fix=f"Pass Tuple([...]) with a space for each of {members!r}, or leave {name} "
                    "out to use the members' own spaces.",
                )
            spaces[agent] = space
        return spaces

    def _reward_spaces(self) -> Optional[dict[AgentID, gym.Space]]:
        """Each agent's or group's declared reward space: a group sums its members' arrays."""
        found: dict[AgentID, gym.Space] = {}
        for agent in self.possible_agents:
            members = self.groups.get(agent, [agent])
            spaces = [reward_space_of(self.env, m) for m in members]
            if all(s is None for s in spaces):
                continue
            shapes = {None if s is None else s.shape for s in spaces}
            if len(shapes) > 1 or not all(isinstance(s, gym.spaces.Box) for s in spaces):
                raise VectorRewardError(
                    type(self).__name__, f"the members of {agent!r} are paid rewards of "
                    f"different kinds ({dict(zip(members, spaces))}), which no sum makes one",
                    agent_id=agent, fix="Group only agents whose rewards have the same shape.")
            boxes = [s for s in spaces if isinstance(s, gym.spaces.Box)]
            found[agent] = boxes[0] if len(boxes) == 1 else gym.spaces.Box(
                sum(b.low for b in boxes), sum(b.high for b in boxes), boxes[0].shape,
                np.result_type(*(b.dtype for b in boxes)))
        return found or None

    # -- the episode --------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the wrapped env and return the grouped observations and infos.

        Raises:
            NotParallelizableError: some members of a group got observations and others not.
        """
        super().reset(seed=seed)
        obs, infos = self.env.reset(seed=seed, options=options)
        self._last_obs, self._last_infos = {}, {}
        self._done, self._terminated = set(), set()
        self._cannot_step = None
        out = self._translate(obs, {}, {}, {}, infos, acted=set(), is_reset=True)
        return out[0], out[4]

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Split the groups' tuple actions among their live members and step the wrapped env.

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: an action missing, for an agent that does not act now, a
                group action that is not a sequence with one item per member, or an
                item outside its space; nothing is stepped then.
            NotParallelizableError: after the step, some members of a group act and others not.
        """
        require_running(type(self).__name__, self._cannot_step)
        inner = self._ungroup(action_dict)
        obs, rewards, terminateds, truncateds, infos = self.env.step(inner)
        return self._translate(obs, rewards, terminateds, truncateds, infos,
                               acted=set(action_dict), is_reset=False)

    def _ungroup(self, action_dict: Any) -> MultiAgentDict:
        check_keys(type(self).__name__, action_dict, actors=self._actors,
                   possible_agents=self.possible_agents, why_not_actor=self._why_not_actor)
        inner: MultiAgentDict = {}
        for key, value in action_dict.items():
            members = self.groups.get(key)
            if members is None:
                inner[key] = check_action(key, self.action_spaces[key], value)
                continue
            if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (Sequence, np.ndarray)) \
                    or len(value) != len(members):
                raise ActionError(
                    key, value, expected=f"a tuple of {len(members)} actions, one for each of {members}",
                    fix="Give a group one action per member, in the order of the group's list.",
                )
            space = cast(gym.spaces.Tuple, self.action_spaces[key])  # a group's space, see _spaces
            for i, member in enumerate(members):
                if member in self._done:
                    continue  # a member that is done keeps still; its item is ignored
                inner[member] = check_action(key, space.spaces[i], value[i],
                                             context=f" (member {member!r})")
        return inner

    def _why_not_actor(self, key: AgentID) -> str:
        if key in self.agent_id_to_group:
            return (f"it is a member of group {self.agent_id_to_group[key]!r}; its action goes "
                    "inside the group's tuple")
        if key in self.possible_agents:
            return "it did not receive an observation in the last step"
        return "it is not an agent or group of this env"

    # -- grouping the outputs -----------------------------------------------------------

    def _translate(
        self,
        obs: MultiAgentDict,
        rewards: MultiAgentDict,
        terminateds: MultiAgentDict,
        truncateds: MultiAgentDict,
        infos: MultiAgentDict,
        *,
        acted: set[AgentID],
        is_reset: bool,
    ) -> StepResult:
        done_before = set(self._done)
        over = bool(terminateds.get(ALL, False)) or bool(truncateds.get(ALL, False))
        for table in (terminateds, truncateds):
            self._done.update(a for a, v in table.items() if a != ALL and v)
        self._terminated.update(a for a, v in terminateds.items() if a != ALL and v)
        for agent, value in obs.items():
            if agent in self.agent_id_to_group:
                self._last_obs[agent] = value
                self._last_infos[agent] = infos.get(agent, {})

        out_obs: MultiAgentDict = {}
        out_rewards: MultiAgentDict = {}
        out_term: MultiAgentDict = {}
        out_trunc: MultiAgentDict = {}
        out_infos: MultiAgentDict = {}
        keys = _grouped_order([*obs, *rewards, *terminateds, *truncateds], self.agent_id_to_group)
        for key in keys:
            if key == ALL:
                continue
            members = self.groups.get(key)
            if members is None:  # an ungrouped agent: as it is
                for src, dst in ((obs, out_obs), (rewards, out_rewards), (terminateds, out_term),
                                 (truncateds, out_trunc), (infos, out_infos)):
                    if key in src:
                        dst[key] = src[key]
                continue
            if key in done_before:
                continue
            self._group_outputs(key, members, obs, rewards, terminateds, truncateds, infos,
                                over=over, acted=key in acted, is_reset=is_reset,
                                out=(out_obs, out_rewards, out_term, out_trunc, out_infos))
        if COMMON in infos:
            out_infos[COMMON] = infos[COMMON]
        if not is_reset:
            out_term[ALL] = terminateds.get(ALL, False)
            out_trunc[ALL] = truncateds.get(ALL, False)
        self._finish(out_obs, over)
        return out_obs, out_rewards, out_term, out_trunc, out_infos

    def _group_outputs(
        self, group: AgentID, members: list[AgentID], obs: MultiAgentDict, rewards: MultiAgentDict,
        terminateds: MultiAgentDict, truncateds: MultiAgentDict, infos: MultiAgentDict, *,
        over: bool, acted: bool, is_reset: bool, out: tuple[MultiAgentDict, ...],
    ) -> None:
        out_obs, out_rewards, out_term, out_trunc, out_infos = out
        live = [m for m in members if m not in self._done]
        acting = [m for m in live if m in obs]
        group_done = over or not live
        if not group_done and acting and len(acting) != len(live):
            self._cannot_step = _BROKEN
            raise NotParallelizableError(
                acting, live, needs=f"the group {group!r}",
                fix="RLlib's rule for groups is that all members act in the same steps: group only "
                "agents that always act together, and leave the others ungrouped.",
            )
        seen_all = all(m in self._last_obs for m in members)
        if (acting and not group_done) or (group_done and seen_all and any(m in obs for m in members)) \
                or (group_done and acted and seen_all):
            out_obs[group] = tuple(
                obs[m] if m in obs else copy.deepcopy(self._last_obs[m]) for m in members
            )
        space = self.get_reward_space(group)
        individual: list[Any]
        if space is None:
            individual = [float(rewards.get(m, 0.0)) for m in members]
        else:  # vector rewards, summed per objective
            individual = [np.asarray(rewards[m]) if m in rewards else zero_reward(space)
                          for m in members]
        if any(m in rewards for m in members) or (acted and group in out_obs):
            out_rewards[group] = float(sum(individual)) if space is None \
                else np.sum(individual, axis=0)
        if group_done:
            self._done.add(group)
            all_terminated = all(m in self._terminated for m in members)
            out_term[group] = all_terminated or bool(terminateds.get(ALL, False))
            out_trunc[group] = not out_term[group]
        else:
            if any(m in terminateds for m in members):
                out_term[group] = False
            if any(m in truncateds for m in members):
                out_trunc[group] = False
        if group in out_obs:
            info: dict[str, Any] = {GROUP_INFO: [infos.get(m, {}) for m in members]}
            if not is_reset:
                info[INDIVIDUAL_REWARDS] = individual
                info[GROUP_REWARDS] = list(individual)
            out_infos[group] = info

    def _finish(self, out_obs: MultiAgentDict, over: bool) -> None:
        if over:
            self._actors = []
            self.agents = []
            self._cannot_step = self._cannot_step or EPISODE_OVER
            return
        self._actors = [k for k in out_obs if k not in self._done]
        live = _grouped_order(list(getattr(self.env, "agents", []) or []), self.agent_id_to_group)
        agents = [a for a in live if a not in self._done]
        agents += [a for a in self._actors if a not in agents]
        self.agents = agents

    def render(self) -> Any:
        """Render the wrapped env."""
        return self.env.render()

    def close(self) -> None:
        """Close the wrapped env."""
        close = getattr(self.env, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"<GroupAgentsWrapper {self.groups!r} of {self.env!r}>"


def _env_agents(env: Any) -> list[AgentID]:
    """The env's possible agents; RLlib's old API stack declared them in ``_agent_ids`` only."""
    possible = list(getattr(env, "possible_agents", None) or [])
    if possible:
        return possible
    declared = getattr(env, "_agent_ids", None) or ()
    try:
        return sorted(declared)
    except TypeError:  # ids of mixed types
        return list(declared)


def _check_groups(
    groups: Any, possible: list[AgentID]
) -> tuple[dict[AgentID, list[AgentID]], dict[AgentID, AgentID]]:
    if not isinstance(groups, Mapping) or not groups:
        raise ConfigError(
            "GroupAgentsWrapper",
            f"groups must be a non-empty dict of group id to member agent ids, got {groups!r:.80}",
            fix="Pass e.g. {'group1': ['agent1', 'agent2']}.",
        )
    clean: dict[AgentID, list[AgentID]] = {}
    member_of: dict[AgentID, AgentID] = {}
    for group_id, members in groups.items():
        if group_id in possible or group_id in (ALL, COMMON):
            raise AgentIdError(
                group_id, f"the group id {group_id!r} is already an agent id of the env"
                if group_id in possible else f"{group_id!r} is reserved and cannot be a group id",
                fix="Give the group an id that is not an agent id, e.g. 'group_1'.",
            )
        if isinstance(members, (str, bytes)) or not isinstance(members, Iterable):
            raise ConfigError(
                "GroupAgentsWrapper", f"the members of group {group_id!r} must be a list of agent "
                f"ids, got {members!r:.80}", fix=f"Pass e.g. {{{group_id!r}: [{members!r}, ...]}}.",
            )
        members = list(members)
        if not members:
            raise ConfigError("GroupAgentsWrapper", f"group {group_id!r} has no members",
                              fix="List at least one agent id, or drop the group.")
        for member in members:
            if member not in possible:
                raise AgentIdError(member, f"group {group_id!r} lists {member!r}, which is not an "
                                   "agent of the env", known=possible)
            if member in member_of:
                where = ("twice in that group" if member_of[member] == group_id
                         else f"also in group {member_of[member]!r}")
                raise AgentIdError(member, f"agent {member!r} of group {group_id!r} is {where}",
                                   fix="Put each agent in at most one group, once.")
            member_of[member] = group_id
        clean[group_id] = members
    return clean, member_of


def _grouped_order(keys: Iterable[AgentID], member_of: Mapping[AgentID, AgentID]) -> list[AgentID]:
    """Replace each member by its group id (once, where its first member was), keep order."""
    out: list[AgentID] = []
    seen: set[AgentID] = set()
    for key in keys:
        key = member_of.get(key, key)
        if key not in seen:
            seen.add(key)
            out.append(key)
    return out


set_grouping_wrapper(GroupAgentsWrapper)
