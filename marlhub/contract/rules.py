"""The contract's rule ids, each defined once, with its default severity and a summary.

The ids are those of DESIGN.md section 2, plus a few the driver needs to
report an env that breaks down entirely (``step.returns_tuple``,
``env.raised``, ``env.timeout``). Tests, docs and reports refer to these
constants, never to string literals.

Example:
    >>> RULES[OBS_IN_SPACE].summary
    'obs[a] is in get_observation_space(a), dtype included'
    >>> RULES[EPISODE_ENDS].severity
    'warning'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "DONE_ALL_CONSISTENT",
    "DONE_ALL_PRESENT",
    "DONE_FINAL",
    "DONE_FLAGS_BOOL",
    "DONE_TRUNCATION_HAS_OBS",
    "ENV_RAISED",
    "ENV_TIMEOUT",
    "EPISODE_ENDS",
    "EPISODE_STEP_AFTER_END",
    "EQUIV_RETURNS",
    "EQUIV_TRAJECTORY",
    "IDS_AGENTS_CONSISTENT",
    "IDS_KNOWN",
    "INFO_KEYS",
    "OBS_IN_SPACE",
    "RESET_RETURNS_DICTS",
    "REWARD_ANY_AGENT",
    "REWARD_PRESENT",
    "REWARD_SCALAR",
    "RULES",
    "Rule",
    "SEED_REPRODUCIBLE",
    "SPACE_DEFINED",
    "STEP_RETURNS_TUPLE",
    "Severity",
    "TURN_ACTIONS_ACCEPTED",
    "TURN_ACTORS_EXIST",
]

Severity = Literal["error", "warning"]

RESET_RETURNS_DICTS = "reset.returns_dicts"
STEP_RETURNS_TUPLE = "step.returns_tuple"
IDS_KNOWN = "ids.known"
IDS_AGENTS_CONSISTENT = "ids.agents_consistent"
SPACE_DEFINED = "space.defined"
OBS_IN_SPACE = "obs.in_space"
TURN_ACTIONS_ACCEPTED = "turn.actions_accepted"
TURN_ACTORS_EXIST = "turn.actors_exist"
DONE_ALL_PRESENT = "done.all_present"
DONE_FLAGS_BOOL = "done.flags_bool"
DONE_ALL_CONSISTENT = "done.all_consistent"
DONE_FINAL = "done.final"
DONE_TRUNCATION_HAS_OBS = "done.truncation_has_obs"
REWARD_PRESENT = "reward.present"
REWARD_SCALAR = "reward.scalar"
REWARD_ANY_AGENT = "reward.any_agent"
INFO_KEYS = "info.keys"
SEED_REPRODUCIBLE = "seed.reproducible"
EPISODE_ENDS = "episode.ends"
EPISODE_STEP_AFTER_END = "episode.step_after_end"
EQUIV_TRAJECTORY = "equiv.trajectory"
EQUIV_RETURNS = "equiv.returns"
ENV_RAISED = "env.raised"
ENV_TIMEOUT = "env.timeout"


@dataclass(frozen=True)
class Rule:
    """One rule of the contract.

    Attributes:
        id: the stable id (``"obs.in_space"``).
        severity: the severity of a finding under this rule in normal mode.
        summary: one line saying what the rule demands.
    """

    id: str
    severity: Severity
    summary: str


_TABLE: list[tuple[str, Severity, str]] = [
    (RESET_RETURNS_DICTS, "error",
     "reset returns (obs: dict, infos: dict) and accepts seed= and options= keywords"),
    (STEP_RETURNS_TUPLE, "error",
     "step returns a 5-tuple of dicts (obs, rewards, terminateds, truncateds, infos)"),
    (IDS_KNOWN, "error",
     "every key of obs, rewards, done dicts and infos is in possible_agents "
     "(plus __all__ in done dicts, __common__ in infos); possible_agents never changes"),
    (IDS_AGENTS_CONSISTENT, "error",
     "agents is a subset of possible_agents, holds every actor and no done agent"),
    (SPACE_DEFINED, "error",
     "get_observation_space/get_action_space return a gymnasium Space for every possible "
     "agent, the same object each call"),
    (OBS_IN_SPACE, "error", "obs[a] is in get_observation_space(a), dtype included"),
    (TURN_ACTIONS_ACCEPTED, "error",
     "step accepts one valid action (mask respected) for exactly the actors"),
    (TURN_ACTORS_EXIST, "error", "while the episode is not over there is at least one actor"),
    (DONE_ALL_PRESENT, "error",
     "terminateds and truncateds each hold __all__ with a bool, every step"),
    (DONE_FLAGS_BOOL, "error", "done values are bool or numpy.bool_"),
    (DONE_ALL_CONSISTENT, "error",
     "once every agent is done, __all__ is True; __all__ True ends the episode for every agent"),
    (DONE_FINAL, "error",
     "a done agent never reappears: no obs, reward, info or action for it later in the episode"),
    (DONE_TRUNCATION_HAS_OBS, "error",
     "an agent that acted and is truncated (directly or by __all__) gets its last obs in that step"),
    (REWARD_PRESENT, "error",
     "an agent that acted and gets an obs has a reward entry (0 allowed)"),
    (REWARD_SCALAR, "error", "rewards are finite real scalars, not bool"),
    (REWARD_ANY_AGENT, "error",
     "rewards name live agents only (acting or not); they count toward that agent's return"),
    (INFO_KEYS, "error", "infos keys are obs keys or __common__; values are dicts"),
    (SEED_REPRODUCIBLE, "error",
     "same seed and same actions give identical obs, rewards, done flags and agent order"),
    (EPISODE_ENDS, "warning", "an episode reaches __all__ within the step budget"),
    (EPISODE_STEP_AFTER_END, "warning",
     "step after __all__ (or before reset) raises a clear error; an error under --strict"),
    (EQUIV_TRAJECTORY, "error",
     "the adapted env and the native env, in lockstep with the same seed and actions, give the "
     "same observations, rewards and ends"),
    (EQUIV_RETURNS, "error",
     "each agent's sum of rewards over an episode equals the native return"),
    (ENV_RAISED, "error", "the env does not raise on valid use (reset, step, spaces)"),
    (ENV_TIMEOUT, "error", "the check of one target finishes within its time limit"),
]

#: Every rule by id.
RULES: dict[str, Rule] = {rid: Rule(rid, sev, summary) for rid, sev, summary in _TABLE}
