"""The contract's rule ids, each defined once, with its default severity and a summary.

The ids are those of the contract's table (docs/reference/rules.rst), plus a
few the driver needs to report an env that breaks down entirely (``step.returns_tuple``,
``env.raised``, ``env.timeout``) and a few for what users vary that the
table leaves implicit (``reset.mid_episode``, ``turn.mask_valid``,
``turn.action_dict_untouched``, ``resource.memory_bounded``). Tests, docs and
reports refer to these constants, never to string literals.

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
    "ACTION_EFFECTIVE",
    "DONE_ALL_CONSISTENT",
    "DONE_ALL_PRESENT",
    "DONE_FINAL",
    "DONE_FINAL_OBS",
    "DONE_FLAGS_BOOL",
    "DONE_TIME_LIMIT",
    "DONE_TRUNCATION_HAS_OBS",
    "ENV_CLOSE",
    "ENV_COPYABLE",
    "ENV_RAISED",
    "ENV_TIMEOUT",
    "EPISODE_ENDS",
    "EPISODE_STEP_AFTER_END",
    "EQUIV_RETURNS",
    "EQUIV_TRAJECTORY",
    "IDS_AGENTS_CONSISTENT",
    "IDS_KNOWN",
    "INFO_KEYS",
    "OBS_FINITE",
    "OBS_IN_SPACE",
    "OBS_UNTOUCHED",
    "RENDER_MODE",
    "RESET_MID_EPISODE",
    "RESET_RETURNS_DICTS",
    "RESOURCE_MEMORY_BOUNDED",
    "REWARD_ANY_AGENT",
    "REWARD_PRESENT",
    "REWARD_SCALAR",
    "RULES",
    "Rule",
    "SEED_GLOBAL_STATE",
    "SEED_REPRODUCIBLE",
    "SPACE_DEFINED",
    "STEP_RETURNS_TUPLE",
    "Severity",
    "TURN_ACTIONS_ACCEPTED",
    "TURN_ACTION_DICT_UNTOUCHED",
    "TURN_ACTORS_EXIST",
    "TURN_MASK_VALID",
    "VECTOR_EQUIV",
    "VECTOR_RESET_INFOS",
]

#: How bad a finding is: an ``"error"`` fails the check, a ``"warning"`` only under ``--strict``.
Severity = Literal["error", "warning"]

RESET_RETURNS_DICTS = "reset.returns_dicts"
RESET_MID_EPISODE = "reset.mid_episode"
STEP_RETURNS_TUPLE = "step.returns_tuple"
IDS_KNOWN = "ids.known"
IDS_AGENTS_CONSISTENT = "ids.agents_consistent"
SPACE_DEFINED = "space.defined"
OBS_IN_SPACE = "obs.in_space"
OBS_FINITE = "obs.finite"
OBS_UNTOUCHED = "obs.untouched"
TURN_ACTIONS_ACCEPTED = "turn.actions_accepted"
TURN_ACTORS_EXIST = "turn.actors_exist"
TURN_MASK_VALID = "turn.mask_valid"
TURN_ACTION_DICT_UNTOUCHED = "turn.action_dict_untouched"
DONE_ALL_PRESENT = "done.all_present"
DONE_FLAGS_BOOL = "done.flags_bool"
DONE_ALL_CONSISTENT = "done.all_consistent"
DONE_FINAL = "done.final"
DONE_TRUNCATION_HAS_OBS = "done.truncation_has_obs"
DONE_FINAL_OBS = "done.final_obs"
REWARD_PRESENT = "reward.present"
REWARD_SCALAR = "reward.scalar"
REWARD_ANY_AGENT = "reward.any_agent"
INFO_KEYS = "info.keys"
SEED_REPRODUCIBLE = "seed.reproducible"
SEED_GLOBAL_STATE = "seed.global_state"
DONE_TIME_LIMIT = "done.time_limit"
ACTION_EFFECTIVE = "action.effective"
ENV_COPYABLE = "env.copyable"
ENV_CLOSE = "env.close"
RENDER_MODE = "render.mode"
EPISODE_ENDS = "episode.ends"
EPISODE_STEP_AFTER_END = "episode.step_after_end"
EQUIV_TRAJECTORY = "equiv.trajectory"
EQUIV_RETURNS = "equiv.returns"
VECTOR_EQUIV = "vector.equiv"
VECTOR_RESET_INFOS = "vector.reset_infos"
RESOURCE_MEMORY_BOUNDED = "resource.memory_bounded"
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
     "reset returns (obs: dict, infos: dict) and accepts seed= and options= keywords; "
     "reset() with no seed and reset(options={}) work too"),
    (RESET_MID_EPISODE, "error",
     "a reset in the middle of an episode starts a clean one: with the same seed and actions "
     "it plays the same episode as a reset after the end"),
    (STEP_RETURNS_TUPLE, "error",
     "step returns a 5-tuple of dicts (obs, rewards, terminateds, truncateds, infos)"),
    (IDS_KNOWN, "error",
     "every key of obs, rewards, done dicts and infos is in possible_agents "
     "(plus __all__ in done dicts, __common__ in infos); possible_agents never changes"),
    # `agents` still full when the episode ends is a warning: RLlib's docs examples keep
    # it static and RLlib itself never reads it then; PettingZoo consumers do.
    (IDS_AGENTS_CONSISTENT, "error",
     "agents is a subset of possible_agents, holds every actor and no done agent "
     "(still listing agents when the episode ends is a warning)"),
    (SPACE_DEFINED, "error",
     "get_observation_space/get_action_space return a gymnasium Space for every possible "
     "agent, the same object each call, after every reset and during episodes"),
    (OBS_IN_SPACE, "error", "obs[a] is in get_observation_space(a), dtype included"),
    # Learners turn inf into NaN gradients as they do NaN, which obs.in_space already refuses.
    (OBS_FINITE, "error",
     "observations hold no inf (NaN is refused by obs.in_space), even where the space is "
     "unbounded"),
    # Replay buffers and rollouts store what a call returned and read it later.
    (OBS_UNTOUCHED, "error",
     "the observations and infos a call returned stay as they were: later calls do not write "
     "into them (no array reused in place, no infos dict shared and edited)"),
    # Refusing a 0-d array is a warning: Gymnasium's own FrozenLake and Taxi refuse it, and
    # only some consumers send one (TorchRL's and SB3's vector envs index arrays).
    (TURN_ACTIONS_ACCEPTED, "error",
     "step accepts one valid action (mask respected) for exactly the actors, in every form "
     "the space's contains takes (int, numpy.int64; refusing a 0-d array for Discrete is a "
     "warning)"),
    (TURN_ACTORS_EXIST, "error", "while the episode is not over there is at least one actor"),
    (TURN_MASK_VALID, "error",
     "an action mask (in the obs or infos) is a numpy array of 0/1 with one entry per action "
     "(for MultiDiscrete a tuple of them, one per dimension, or one flat array)"),
    (TURN_ACTION_DICT_UNTOUCHED, "error",
     "step leaves the action dict it is given, and the actions in it, as they were"),
    (DONE_ALL_PRESENT, "error",
     "terminateds and truncateds each hold __all__ with a bool, every step"),
    (DONE_FLAGS_BOOL, "error", "done values are bool or numpy.bool_"),
    (DONE_ALL_CONSISTENT, "error",
     "once every agent is done, __all__ is True; __all__ True ends the episode for every agent"),
    (DONE_FINAL, "error",
     "a done agent never reappears: no obs, reward, info or action for it later in the episode"),
    (DONE_TRUNCATION_HAS_OBS, "error",
     "an agent that acted and is truncated (directly or by __all__, also while it waits for "
     "its turn) gets its last obs in that step"),
    # RLlib's sampler cuts episodes into chunks; an agent whose episode ends without a final
    # observation keeps its last transition in the chunk before and loses it with its reward.
    (DONE_FINAL_OBS, "error",
     "an agent that acted in the episode and is terminated (directly or by __all__), or that "
     "is paid in the step that ends it, gets its final obs in that step (a truncated agent "
     "that acted: done.truncation_has_obs)"),
    (REWARD_PRESENT, "error",
     "an agent that acted and gets an obs has a reward entry (0 allowed)"),
    # Multi-objective envs (MOMAland) pay an array per agent and declare its space.
    (REWARD_SCALAR, "error",
     "rewards are finite real scalars, not bool; or, where the env declares a reward space for "
     "the agent (get_reward_space, MOMAland's reward_space), finite real arrays of its shape "
     "within its bounds"),
    (REWARD_ANY_AGENT, "error",
     "rewards name live agents only (acting or not); they count toward that agent's return"),
    (INFO_KEYS, "error", "infos keys are obs keys or __common__; values are dicts"),
    (SEED_REPRODUCIBLE, "error",
     "same seed and same actions give identical obs, rewards, done flags and agent order, on "
     "the same instance, on a fresh one and in a fresh process with another PYTHONHASHSEED; "
     "reset() without a seed goes on with the seeded generator"),
    # A warning: an env may use the global generators on purpose; two instances then
    # interfere, which seed.reproducible reports as an error where it shows.
    (SEED_GLOBAL_STATE, "warning",
     "reset and step leave numpy's global random state and Python's random module alone "
     "(draw from self.np_random)"),
    # RLlib and SB3 bootstrap the value of a truncated state and not of a terminated one:
    # a time limit reported as termination teaches a wrong value, silently.
    (DONE_TIME_LIMIT, "error",
     "an episode cut by the limit the env declares (max_steps, max_cycles, "
     "max_episode_steps, spec.max_episode_steps) is truncated, not terminated, each agent's "
     "flag as __all__"),
    # A warning: some envs ignore some actions by design (a no-op that equals a move into a
    # wall); an action that never matters is what a bug such as `if action:` looks like.
    (ACTION_EFFECTIVE, "warning",
     "an agent's choice of action counts: from equal states, action 0 (a falsy action, or "
     "all zeros) does not play out as the last action that took effect where other actions "
     "play out otherwise (`if action:`, `if np.any(action):`)"),
    # Warnings: portability. to_openspiel's clones, worker processes and checkpoints copy
    # or pickle an env mid-episode; an env that cannot be still runs where nothing copies it.
    (ENV_COPYABLE, "warning",
     "an env mid-episode deep-copies and pickles, and the copy plays on as the original does, "
     "sharing nothing with it (or refuses clearly: a marlhub error when copied, a request to "
     "reset when stepped)"),
    (ENV_CLOSE, "warning",
     "close() can be called twice, and before any reset; step() after close() raises a clear "
     "error"),
    # Video recorders and PettingZoo's save_observation read render() by render_mode.
    (RENDER_MODE, "error",
     "render() returns what render_mode promises: an HxWx3 uint8 array for rgb_array, a str "
     "for ansi, None for human"),
    (EPISODE_ENDS, "warning", "an episode reaches __all__ within the step budget"),
    (EPISODE_STEP_AFTER_END, "warning",
     "step after __all__ (the last action dict or {}; after a termination and after a "
     "truncation) or before reset raises a clear error, not a crash from inside; an error "
     "under --strict"),
    (RESOURCE_MEMORY_BOUNDED, "warning",
     "memory does not grow episode over episode (the same seeded episode played again)"),
    (EQUIV_TRAJECTORY, "error",
     "the adapted env and the native env, in lockstep with the same seed and actions, give the "
     "same observations, rewards and ends"),
    (EQUIV_RETURNS, "error",
     "each agent's sum of rewards over an episode equals the native return"),
    (VECTOR_EQUIV, "error",
     "copy i of a vector env (sync or async, every autoreset mode) returns what a separately "
     "made env seeded seed + i returns for the same actions"),
    (VECTOR_RESET_INFOS, "error",
     "a copy the vector env resets on its own (next_step) returns the infos a separate env's "
     "reset returns; a batched simulator steps that copy once more first, so reset infos that "
     "depend on the last step differ"),
    (ENV_RAISED, "error", "the env does not raise on valid use (reset, step, spaces)"),
    (ENV_TIMEOUT, "error", "the check of one target finishes within its time limit"),
]

#: Every rule by id.
RULES: dict[str, Rule] = {rid: Rule(rid, sev, summary) for rid, sev, summary in _TABLE}
