"""One function per rule, each judging one transition (a reset or a step) of an episode.

The driver records what a call returned in a :class:`Transition`
(:mod:`marlhub.contract.transition`), together with what it knows of the
episode so far, and hands it to every function in
:data:`TRANSITION_CHECKS`. A function returns the :class:`Issue` it sees (a
message, the agent concerned, and a severity when it differs from the rule's
default); the driver turns issues into findings with their location and
reproducer. Checks read the transition and the env's spaces only: they never
call ``reset`` or ``step``.

Episode-level rules (``space.defined``, ``seed.reproducible``,
``reset.mid_episode``, ``episode.ends``, ``episode.step_after_end``,
``reset.returns_dicts``, ``turn.action_dict_untouched``,
``resource.memory_bounded``) need more than one transition or call and live
in the conformance suite's driver and probes.

Example:
    >>> t = Transition.from_step(
    ...     index=1, obs={"a": 0}, rewards={"a": True}, terminateds={"__all__": False},
    ...     truncateds={"__all__": False}, infos={}, actions={"a": 1},
    ...     possible_agents=["a"], possible_now=["a"], agents_before=["a"], agents_after=["a"],
    ...     appeared=frozenset({"a"}), done_before=frozenset())
    >>> [i.message for i in check_reward_scalar(t, None)]
    ["reward for 'a' is True (bool); rewards must be finite int or float scalars: return float(r)."]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.contract import rules
from marlhub.contract.transition import Issue, SpaceCache, Transition
from marlhub.core import ALL, COMMON
from marlhub.episode.status import truthy
from marlhub.rewards import why_bad_reward
from marlhub.spaces import (
    ACTION_MASK_KEY,
    raw_action_mask,
    why_bad_action_mask,
    why_not_in_space,
)

__all__ = [
    "TRANSITION_CHECKS",
    "Issue",
    "SpaceCache",
    "Transition",
]

_REAL = (int, float, np.integer, np.floating)


# -- the checks, one per rule ------------------------------------------------------


def check_ids_known(t: Transition, spaces: Any) -> list[Issue]:
    """ids.known: every key is a possible agent (plus __all__ / __common__ where allowed)."""
    issues = []
    known = set(t.possible_agents)
    tables: list[tuple[str, Mapping[Any, Any], set[Any]]] = [
        ("obs", t.obs, set()), ("rewards", t.rewards, set()),
        ("terminateds", t.terminateds, {ALL}), ("truncateds", t.truncateds, {ALL}),
        ("infos", t.infos, {COMMON}),
    ]
    for name, table, extra in tables:
        for key in table:
            if key not in known and key not in extra:
                issues.append(Issue(
                    f"{name} has key {key!r}, which is not in possible_agents "
                    f"{list(t.possible_agents)!r}; list every agent that can ever appear in "
                    "possible_agents.",
                    agent=key,
                ))
    if list(t.possible_now) != list(t.possible_agents):
        issues.append(Issue(
            f"possible_agents changed during the episode from {list(t.possible_agents)!r} to "
            f"{list(t.possible_now)!r}; it must list every agent that can ever appear and never "
            "change (track the live ones in `agents`)."
        ))
    return issues


def check_agents_consistent(t: Transition, spaces: Any) -> list[Issue]:
    """ids.agents_consistent: ``agents`` holds every actor and no done agent."""
    if t.agents_after is None:
        return [Issue("env.agents cannot be read as a list; set self.agents to the live agents.")]
    issues = []
    agents = list(t.agents_after)
    strangers = [a for a in agents if a not in set(t.possible_agents)]
    if strangers:
        issues.append(Issue(
            f"agents holds {strangers!r}, not in possible_agents {list(t.possible_agents)!r}; "
            "agents must be a subset of possible_agents."
        ))
    live = set(agents)
    for actor in t.actors:
        if actor not in live:
            issues.append(Issue(
                f"{actor!r} got an observation and acts next but is missing from agents "
                f"{agents!r}; add agents to self.agents when they enter.",
                agent=actor,
            ))
    done = (t.done_before | t.done_now) if not t.over else set()
    for agent in agents:
        if agent in done:
            issues.append(Issue(
                f"{agent!r} is done but still in agents {agents!r}; remove agents from "
                "self.agents in the step that terminates or truncates them.",
                agent=agent,
            ))
    # A warning, not an error: RLlib's docs examples keep `agents` static and RLlib never
    # reads it once the episode is over, but PettingZoo's API (and our views) expect [].
    if t.over and agents:
        issues.append(Issue(
            f"the episode ended (__all__) but agents still holds {agents!r}; set self.agents = [] "
            "when the episode ends (RLlib's docs examples keep it static, PettingZoo empties it).",
            severity="warning",
        ))
    return issues


def check_obs_in_space(t: Transition, spaces: SpaceCache) -> list[Issue]:
    """obs.in_space: each observation lies in its agent's observation space."""
    issues = []
    for agent, value in t.obs.items():
        if agent not in set(t.possible_agents):
            continue  # ids.known reports it
        space = spaces.observation_space(agent)
        if space is None:
            continue  # space.defined reports it
        reason = why_not_in_space(space, value)
        if reason:
            issues.append(Issue(
                f"obs[{agent!r}] is not in its observation space {space}: {reason}. Return "
                "observations of the space's exact type and dtype (e.g. np.asarray(x, "
                "space.dtype)).",
                agent=agent,
            ))
    return issues


def check_actors_exist(t: Transition, spaces: Any) -> list[Issue]:
    """turn.actors_exist: while the episode is not over, somebody acts next."""
    if t.over or t.actors:
        return []
    still_live = (t.appeared | set(t.obs)) - t.done_before - t.done_now
    if t.kind == "step" and t.appeared and not still_live:
        return []  # every agent is done: done.all_consistent reports the missing __all__
    what = "reset()" if t.kind == "reset" else "step()"
    return [Issue(
        f"{what} returned no agent that acts next (obs keys {list(t.obs)!r}) but __all__ is not "
        "True; RLlib would step {} forever. Return an observation for every agent that must act, "
        "or end the episode with __all__."
    )]


def check_all_present(t: Transition, spaces: Any) -> list[Issue]:
    """done.all_present: both done dicts hold __all__ with a bool, every step."""
    if t.kind == "reset":
        return []
    issues = []
    for name, table in (("terminateds", t.terminateds), ("truncateds", t.truncateds)):
        if ALL not in table:
            issues.append(Issue(
                f"{name} has no '__all__' key (keys {list(table)!r}); RLlib indexes it every "
                f"step. Always return {name}['__all__'] as a bool, False while the episode goes on."
            ))
    return issues


def check_flags_bool(t: Transition, spaces: Any) -> list[Issue]:
    """done.flags_bool: done values are bool or numpy.bool_."""
    issues = []
    for name, table in (("terminateds", t.terminateds), ("truncateds", t.truncateds)):
        for agent, value in table.items():
            if not isinstance(value, (bool, np.bool_)):
                issues.append(Issue(
                    f"{name}[{agent!r}] is {value!r} ({type(value).__name__}); done flags must "
                    "be bool. Return bool(flag).",
                    agent=None if agent == ALL else agent,
                ))
    return issues


def check_all_consistent(t: Transition, spaces: Any) -> list[Issue]:
    """done.all_consistent: once every agent is done, __all__ is True."""
    if t.over or not t.appeared:
        return []
    everyone = t.appeared | set(t.obs)
    done = t.done_before | t.done_now
    if everyone <= done:
        return [Issue(
            f"every agent that took part ({sorted(map(str, everyone))}) is done but neither "
            "terminateds['__all__'] nor truncateds['__all__'] is True; set __all__ when the last "
            "agent is done."
        )]
    return []


def check_done_final(t: Transition, spaces: Any) -> list[Issue]:
    """done.final: a done agent never reappears in the episode."""
    issues = []
    tables = (("obs", t.obs), ("rewards", t.rewards), ("infos", t.infos), ("actions", t.actions))
    for name, table in tables:
        for agent in table:
            if agent in t.done_before:
                issues.append(Issue(
                    f"{agent!r} was done earlier in the episode but appears in {name} again; "
                    "RLlib raises on any data (even a 0.0 reward) for a done agent. Drop done "
                    "agents from every dict.",
                    agent=agent,
                ))
    for name, table in (("terminateds", t.terminateds), ("truncateds", t.truncateds)):
        for agent, value in table.items():
            if agent in t.done_before and not truthy(value):
                issues.append(Issue(
                    f"{name}[{agent!r}] is False but {agent!r} was done earlier; a done agent "
                    "cannot come back within the episode.",
                    agent=agent,
                ))
    return issues


def check_truncation_has_obs(t: Transition, spaces: Any) -> list[Issue]:
    """done.truncation_has_obs: an agent truncated after acting gets its last obs.

    That is an agent that acted in this step, and one that acted earlier and
    waits for its turn (it had an observation in the episode, is not done and
    gets none now): RLlib holds its last action open and raises when the
    episode is truncated without closing it (EP:543-548, 586-591).
    """
    issues = []
    waiting = [a for a in dict.fromkeys([*t.possible_agents, *t.appeared])
               if a in t.appeared and a not in t.done_before and a not in t.actions]
    for agent in [*t.actions, *waiting]:
        if agent in t.obs or truthy(t.terminateds.get(agent, False)):
            continue
        truncated = truthy(t.truncateds.get(agent, False)) or (
            t.truncated_all and not t.terminated_all
        )
        if not truncated:
            continue
        how = "acted" if agent in t.actions else "acted earlier (it waits for its turn)"
        issues.append(Issue(
            f"{agent!r} {how} and was truncated in this step but got no last observation; "
            "RLlib needs it to bootstrap values. Put the agent's last obs in the obs dict of "
            "the step that truncates it, for waiting agents too.",
            agent=agent,
        ))
    return issues


def check_final_obs(t: Transition, spaces: Any) -> list[Issue]:
    """done.final_obs: an agent that acted, or is paid, gets its final obs when it ends.

    RLlib's sampler cuts an episode into chunks at its sample boundaries; an
    agent that ends without a final observation in a later chunk than its last
    one loses its last transition and reward without an error, and an agent
    paid before its first observation is no part of RLlib's episode at all.
    Truncated agents that acted are ``done.truncation_has_obs``'s.
    """
    if t.kind == "reset":
        return []
    live = [a for a in dict.fromkeys([*t.appeared, *t.actions]) if a not in t.done_before]
    ending = dict.fromkeys(t.done_now)
    if t.over:
        ending.update(dict.fromkeys(live))
        # Paid agents that take part (reward.any_agent reports the others).
        taking_part = set(t.agents_before or ()) | set(t.agents_after or ()) | t.done_now
        ending.update(dict.fromkeys(a for a in t.rewards
                                    if a in taking_part and a not in t.done_before))
    issues = []
    for agent in ending:
        if agent in t.obs:
            continue
        acted = agent in t.actions or agent in t.appeared
        truncated = truthy(t.truncateds.get(agent, False)) or (
            t.truncated_all and not t.terminated_all
            and not truthy(t.terminateds.get(agent, False))
        )
        if acted and truncated:
            continue  # done.truncation_has_obs
        paid = _nonzero(t.rewards.get(agent, 0.0))
        if not (acted or paid):
            continue
        how = (f"is paid {t.rewards[agent]!r} in this step" if paid else "")
        how = (f"acted{' and ' + how if how else ''}" if acted
               else f"{how} without having acted in the episode")
        issues.append(Issue(
            f"{agent!r} {how}, and its episode ends in this step, but it gets no final "
            "observation; RLlib's sampler then loses its last transition and reward when a "
            "sample ends inside the episode. Put the agent's final obs in the obs dict of the "
            "step that ends it.",
            agent=agent,
        ))
    return issues


def _nonzero(reward: Any) -> bool:
    try:
        return bool(np.any(np.asarray(reward, dtype=float) != 0.0))
    except (TypeError, ValueError):
        return True  # reward.scalar reports it


def check_reward_present(t: Transition, spaces: Any) -> list[Issue]:
    """reward.present: an agent that acted and gets an obs has a reward entry."""
    return [
        Issue(
            f"{agent!r} acted and got an observation but has no entry in rewards "
            f"(keys {list(t.rewards)!r}); RLlib raises on this. Report rewards[{agent!r}] = 0.0 "
            "when there is nothing to give.",
            agent=agent,
        )
        for agent in t.actions
        if agent in t.obs and agent not in t.rewards
    ]


def check_reward_scalar(t: Transition, spaces: Any) -> list[Issue]:
    """reward.scalar: rewards are finite real scalars, not bool, or arrays in a declared space.

    An agent whose env declares a reward space (multi-objective envs, see
    :mod:`marlhub.rewards`) is paid an array in it instead.
    """
    issues = []
    for agent, value in t.rewards.items():
        space = spaces.reward_space(agent) if spaces is not None else None
        if space is not None:
            why = why_bad_reward(space, value)
            if why:
                issues.append(Issue(
                    f"reward for {agent!r} is {_short(value)}, not in its declared reward space "
                    f"{space}: {why}. Pay each agent an array of its reward space's shape "
                    "(np.asarray(r, space.dtype)), or declare the space the rewards have.",
                    agent=agent,
                ))
            continue
        if isinstance(value, (bool, np.bool_)):
            problem = f"{value!r} (bool)"
        elif not isinstance(value, _REAL):
            problem = f"{value!r} ({type(value).__name__})"
        elif not math.isfinite(float(value)):
            problem = f"{value!r} (not finite)"
        else:
            continue
        issues.append(Issue(
            f"reward for {agent!r} is {problem}; rewards must be finite int or float scalars: "
            "return float(r).",
            agent=agent,
        ))
    return issues


def check_reward_any_agent(t: Transition, spaces: Any) -> list[Issue]:
    """reward.any_agent: rewards name live agents (acting or not), never absent ones."""
    live = set(t.agents_before or ()) | set(t.agents_after or ()) | set(t.obs)
    live |= set(t.actions) | t.done_now
    issues = []
    for agent in t.rewards:
        if agent in t.done_before or agent not in set(t.possible_agents):
            continue  # done.final / ids.known report these
        if agent not in live:
            issues.append(Issue(
                f"rewards name {agent!r}, which is not live (not in agents {t.agents_after!r}, "
                "no observation, not done in this step); give rewards to agents while they "
                "take part, and list them in self.agents.",
                agent=agent,
            ))
    return issues


def check_info_keys(t: Transition, spaces: Any) -> list[Issue]:
    """info.keys: infos keys are obs keys or __common__, and values are dicts."""
    issues = []
    for agent, value in t.infos.items():
        if agent != COMMON and agent not in t.obs:
            issues.append(Issue(
                f"infos has key {agent!r} but obs has not (obs keys {list(t.obs)!r}); RLlib "
                "matches infos to observations. Put agent-less data under '__common__'.",
                agent=agent,
            ))
        if not isinstance(value, Mapping):
            issues.append(Issue(
                f"infos[{agent!r}] is {type(value).__name__}, not a dict; return a dict per agent.",
                agent=None if agent == COMMON else agent,
            ))
    return issues


def check_mask_valid(t: Transition, spaces: Any) -> list[Issue]:
    """turn.mask_valid: each actor's action mask is 0/1 values, one per action of its space.

    A mask inside the observation that its declared part of the space rejects
    is left to ``obs.in_space``; a mask in infos has no space but the action's.
    """
    issues = []
    for agent in t.actors:
        obs, info = t.obs.get(agent), t.infos.get(agent)
        mask = raw_action_mask(obs, info if isinstance(info, Mapping) else None)
        if mask is None or spaces is None:
            continue
        in_obs = isinstance(obs, Mapping) and obs.get(ACTION_MASK_KEY) is not None
        if in_obs and _declared_part_rejects(spaces.observation_space(agent), mask):
            continue  # obs.in_space reports it
        reason = why_bad_action_mask(spaces.action_space(agent), mask)
        if reason:
            where = f"obs[{agent!r}]" if in_obs else f"infos[{agent!r}]"
            issues.append(Issue(
                f"the action mask {where}[{ACTION_MASK_KEY!r}] = {_short(mask)} cannot be read "
                f"against the action space {spaces.action_space(agent)}: {reason}. Give a numpy "
                "array of 0/1, e.g. np.asarray(mask, np.int8), with one entry per action.",
                agent=agent,
            ))
    return issues


def _declared_part_rejects(obs_space: Any, mask: Any) -> bool:
    if not isinstance(obs_space, gym.spaces.Dict) or ACTION_MASK_KEY not in obs_space.spaces:
        return False
    return why_not_in_space(obs_space.spaces[ACTION_MASK_KEY], mask) is not None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: Every per-transition check with the rule it judges, in reporting order.
TRANSITION_CHECKS: list[tuple[str, Callable[[Transition, Any], Iterable[Issue]]]] = [
    (rules.IDS_KNOWN, check_ids_known),
    (rules.IDS_AGENTS_CONSISTENT, check_agents_consistent),
    (rules.OBS_IN_SPACE, check_obs_in_space),
    (rules.TURN_ACTORS_EXIST, check_actors_exist),
    (rules.TURN_MASK_VALID, check_mask_valid),
    (rules.DONE_ALL_PRESENT, check_all_present),
    (rules.DONE_FLAGS_BOOL, check_flags_bool),
    (rules.DONE_ALL_CONSISTENT, check_all_consistent),
    (rules.DONE_FINAL, check_done_final),
    (rules.DONE_TRUNCATION_HAS_OBS, check_truncation_has_obs),
    (rules.DONE_FINAL_OBS, check_final_obs),
    (rules.REWARD_PRESENT, check_reward_present),
    (rules.REWARD_SCALAR, check_reward_scalar),
    (rules.REWARD_ANY_AGENT, check_reward_any_agent),
    (rules.INFO_KEYS, check_info_keys),
]
