"""Why each rule matters and how to fix a finding under it: reST shown under each rule.

The rule ids, severities and one-line summaries come from
:data:`marlhub.conformance.RULES`; these notes add what a user needs next to a
finding. A rule without a note is still documented (its summary and checker).
"""

from __future__ import annotations

NOTES: dict[str, str] = {
    "reset.returns_dicts": """
Gymnasium (since 0.26) and RLlib call ``reset(seed=..., options=...)`` and unpack two
values. Fix: ``def reset(self, *, seed=None, options=None)``, call
``super().reset(seed=seed)``, and ``return obs, infos``.
""",
    "reset.mid_episode": """
Learners reset envs in the middle of episodes (vector envs, evaluation, time limits).
State left from the interrupted episode (a counter, a buffer, a queue) makes the new
episode differ from one started after the end. Fix: set every piece of episode state
in ``reset``, none of it only in ``__init__``.
""",
    "step.returns_tuple": """
The 5-tuple ``(obs, rewards, terminateds, truncateds, infos)`` replaced the old
4-tuple with one ``done`` dict. Fix: split ``done`` into ``terminateds`` (the episode
ended by its rules) and ``truncateds`` (cut short by a time limit).
""",
    "ids.known": """
RLlib maps every key of these dicts to a policy, and PettingZoo consumers index their
tables by ``possible_agents``: an unknown key ends in a ``KeyError`` far from the
env. Fix: list every agent that may ever appear in ``possible_agents`` and never
change it; only ``"__all__"`` (done dicts) and ``"__common__"`` (infos) are extra.
""",
    "ids.agents_consistent": """
PettingZoo consumers and marlhub's views read ``agents`` to know who is alive. Fix:
remove an agent from ``agents`` in the step it is done, add one when it enters, and
set ``agents = []`` when the episode ends (RLlib's docs examples leave it full, which
is a warning).
""",
    "space.defined": """
Consumers build their networks and specs from the spaces once, and some cache them by
identity. Fix: build the per-agent spaces in ``__init__`` and return the same objects
from ``get_observation_space`` / ``get_action_space`` every time.
""",
    "obs.in_space": """
A float64 observation in a float32 Box, or a list where a Dict part wants an array,
fails Gymnasium's ``check_env`` and breaks tensor conversion in TorchRL and RLlib.
Fix: ``np.asarray(x, dtype=space.dtype)``, and build observations from the space's
own structure.
""",
    "turn.actions_accepted": """
The suite sends one legal action per actor (masks honoured), as ``int``,
``numpy.int64`` and a 0-d array alike, since learners send all three. Fix: take the
action with ``int(action)`` (or ``np.asarray``) instead of comparing or indexing with
it as it comes, and make sure every actor has a legal action.
""",
    "turn.actors_exist": """
While the episode is not over, somebody must act: with nobody in the observation
dict, RLlib steps ``{}`` forever (EP:408-416). Fix: end the episode with ``"__all__"``
when nobody is left to act.
""",
    "turn.mask_valid": """
Maskers read masks as numpy arrays of 0/1 with one entry per action (sb3-contrib's
``MaskablePPO``, RLlib's action-masking module, TorchRL's action specs). Fix:
``np.array(mask, dtype=np.int8)`` of length ``n`` for ``Discrete(n)``; for
``MultiDiscrete``, a tuple of one such array per dimension or one flat array.
""",
    "turn.action_dict_untouched": """
Callers keep the action dict they pass (RLlib records it in its episode). An env
that pops entries or changes arrays in place corrupts their records. Fix: read the
actions, never modify the dict or the arrays in it.
""",
    "done.all_present": """
RLlib indexes ``terminateds["__all__"]`` and ``truncateds["__all__"]`` on every step.
Fix: return both keys, ``False`` while the episode goes on.
""",
    "done.flags_bool": """
Consumers test flags with ``is True`` or put them in bool tensors; ``0``/``1``,
``None`` or arrays are bugs waiting there. Fix: ``bool(flag)`` (``numpy.bool_`` is fine).
""",
    "done.all_consistent": """
When every agent is done, the episode is over, and ``__all__`` must say so;
``__all__`` in turn ends the episode for every agent. Fix: set ``__all__`` in the
step where the last agent is done.
""",
    "done.final": """
A done agent must not come back in the same episode: RLlib raises even for a 0.0
reward to it (EP:466-475). Fix: after an agent's done flag, leave it out of
observations, rewards and infos until reset.
""",
    "done.truncation_has_obs": """
An agent that acted and is truncated needs its last observation to bootstrap its
value: RLlib raises without it (EP:543-548). That holds when ``__all__`` truncates
agents that are waiting for their turn too. Fix: put every such agent's last
observation in the obs dict of the truncating step.
""",
    "done.final_obs": """
RLlib's sampler cuts episodes into chunks at its sample boundaries. An agent that
acted and ends without a final observation keeps its last transition open in the
chunk before, where RLlib's stand-in (the last observation again, EP:556, 600) is no
longer at hand: the transition and its reward vanish without an error (marlhub's own
tic-tac-toe lost every winner's +5 that way). An agent paid at the end without ever
having an observation is no part of RLlib's episode at all. Fix: put every such
agent's final observation in the obs dict of the step that ends it, the winner's
too. ``to_rllib`` repairs what it can (:mod:`marlhub.adapters.rllib.carry`);
``marlhub check ID --targets rllib`` runs RLlib's own sampler to prove it.
""",
    "reward.present": """
An agent that acted and gets an observation must have a reward entry: RLlib raises
otherwise (EP:483-488). Fix: ``rewards[agent] = 0.0`` when there is nothing to give.
""",
    "reward.scalar": """
A bool reward passes ``isinstance(r, int)`` but is a bug; NaN and infinity poison
every learner. Fix: ``float(r)``, finite. Multi-objective envs (MOMAland) pay an agent
an array, one entry per objective, and declare its reward space (``reward_spaces`` or
``get_reward_space(agent)``; MOMAland's ``reward_space(agent)``): each reward is then
checked against it (shape, a real dtype, finite, within the bounds). Consumers that need
one number per agent (Gymnasium, OpenSpiel) refuse such an env until its rewards are
scalarized with explicit weights, ``marlhub.wrappers.ScalarizeRewards(env, weights)``
(the PettingZoo guide: "Vector rewards: MOMAland").
""",
    "reward.any_agent": """
Rewards may go to any live agent, acting or not (an idle winner, a team bonus), and
count toward its return; a reward to an agent that is done or not in the episode is
lost by consumers. Fix: pay live agents only.
""",
    "info.keys": """
Infos are paired with observations by agent: RLlib files an info under the agent's
observation. Fix: give infos only to agents in the obs dict, and put shared
information under ``"__common__"``; every value is a dict.
""",
    "seed.reproducible": """
The same seed and the same actions must give the same episode: on the same instance,
on a fresh one, and in a fresh process with another ``PYTHONHASHSEED`` (the suite
plays all three). Fix: draw all randomness from ``self.np_random`` (seeded by
``super().reset(seed=seed)``), never from ``random`` or numpy's global RNG, and keep
agent order in lists, not sets.
""",
    "episode.ends": """
A warning: random legal play did not end an episode within the step budget. Long
games are legitimate (raise ``--max-steps``); an env that never ends is not.
""",
    "episode.step_after_end": """
``step`` after ``__all__``, or before ``reset``, must raise an error that says
``reset()`` is needed, not crash from inside or play on. A warning; an error under
``--strict``. Fix: check at the top of ``step`` that an episode is running and raise
:class:`marlhub.errors.ResetNeededError` (:func:`marlhub.episode.require_running`).
""",
    "resource.memory_bounded": """
A warning: the same seeded episode, played again and again, allocates more memory each
time (measured with ``tracemalloc``: Python and numpy allocations, not native ones).
Fix: clear per-episode buffers in ``reset``.
""",
    "equiv.trajectory": """
For adapters (``marlhub check ID --against-native``): the adapted env and a second
native instance, stepped in lockstep with the same seed and actions, must give the
same observations, rewards and ends. A finding names the step and the first difference.
""",
    "equiv.returns": """
For adapters: each agent's sum of rewards over an episode equals its native return,
so no reward is lost or counted twice on the way.
""",
    "vector.reset_infos": """
A copy that a vector env resets on its own (``next_step``) should say what a new env
says after ``reset()``. A batched simulator steps every copy in every call, the copy
that ended included, before its partial reset, so reset infos that report the last
step (VMAS's reward terms) are those of that extra step. Fix, in your own simulator:
compute the reset infos from the reset state; as a user of one that does not, read
reset infos of such copies as stale.
""",
    "env.raised": """
The env raised on valid use (``reset``, ``step`` with legal actions, reading spaces),
or, under ``--jobs 2`` or more, its worker died (a signal names a crash in native
code). The finding carries the traceback's last line and the episode.
""",
    "env.timeout": """
The check of one target ran past ``--timeout`` seconds. In-process the timer
interrupts Python code on the main thread; with ``--jobs 2`` or more a hang in native
code is ended too, and the finding names the episode.
""",
}

__all__ = ["NOTES"]
