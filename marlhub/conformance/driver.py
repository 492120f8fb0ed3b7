"""The episode driver: plays seeded random legal episodes and judges every call.

For each episode the driver resets with ``seed + episode``, sends one random
legal action (action masks honoured, from the obs dict or from infos) for each
actor, records every transition and runs the per-transition checks of
:mod:`marlhub.contract.checks` on it. It then replays the episode with the
same seed and actions to check reproducibility. Spaces are read again after
every reset and while episodes run (:mod:`~marlhub.conformance.space_identity`),
and every action dict is compared, after ``step``, with what was sent.
Once per target it checks the ``reset`` signature and runs the probes of
:mod:`~marlhub.conformance.probes`: ``step`` before any reset and after the
end, resets without a seed and with options, episode 0 again with numpy
actions, beside a fresh instance, after a reset in its middle, in a fresh process
and with other actions, memory over repeated episodes, then copies, rendering and
closing (:mod:`~marlhub.conformance.lifecycle`). It watches the global random state
around every call, and what episode 0's calls returned, for later writes.

The env under test is only ever reset and stepped; the driver never seeds its
spaces nor touches its attributes. A misbehaving env (an exception, a
malformed return, a hang) becomes a finding; the driver goes on with the next
episode.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from marlhub.conformance.action_effect import ActionEffectProbe
from marlhub.conformance.action_forms import ActionFormsProbe
from marlhub.conformance.aliasing import ReturnedValues
from marlhub.conformance.calls import (
    EnvTimeout,
    Malformed,
    read_agents,
    read_possible,
    short,
    time_limit,
    unpack_reset,
    unpack_step,
)
from marlhub.conformance.fresh_process import FRESH_PROCESS_SECONDS, FreshProcess, take
from marlhub.conformance.lifecycle import LifecycleProbes
from marlhub.conformance.mid_reset import MidEpisodeReset
from marlhub.conformance.options import CheckOptions
from marlhub.conformance.probes import Probes
from marlhub.conformance.random_state import GlobalRandomWatch
from marlhub.conformance.report import Finding, Report, Reproducer
from marlhub.conformance.space_identity import SpaceWatch
from marlhub.conformance.time_limit import TimeLimitProbe
from marlhub.conformance.trajectories import (
    Recording,
    copy_actions,
    safe_mask,
    snapshot,
)
from marlhub.contract import rules
from marlhub.contract.checks import TRANSITION_CHECKS, SpaceCache, Transition
from marlhub.contract.compare import why_different
from marlhub.contract.finite import check_obs_finite
from marlhub.episode.play import RandomEpisode, Step

__all__ = ["CheckOptions", "Driver"]

#: Findings kept per rule and target; the rest are counted, not stored.
MAX_FINDINGS_PER_RULE = 25
#: Steps of episode 0 that the probes play again (numpy actions, fresh instance, mid reset).
PROBED_STEPS = 100
#: The contract's per-transition checks, and obs.finite.
CHECKS = [*TRANSITION_CHECKS, (rules.OBS_FINITE, check_obs_finite)]


class _NoActionSpace(Exception):
    """get_action_space raised while choosing actions (reported as space.defined)."""


@dataclass
class _Episode:
    """What one played episode left behind."""

    seed: int
    actions: list[dict[Any, Any]] = field(default_factory=list)
    # (obs, rewards, terminateds, truncateds) per transition, reset first.
    trace: list[tuple[Any, ...]] = field(default_factory=list)
    ended: bool = False
    aborted: bool = False
    # Deep copies of the trace, taken as the calls returned (episode 0 only).
    recording: Optional[Recording] = None


class Driver:
    """Checks one env against every rule of the contract.

    It is the :class:`~marlhub.conformance.host.ProbeHost` its probes report through.

    Args:
        env: the env under test (a hub env or anything that quacks like one).
        name: how the target is named in the report.
        options: how many episodes, the seed, the budget.
        make_fresh: builds a new, never-reset instance; enables the
            step-before-reset probe and the fresh-instance replay. None when the
            target is a single instance.
        spec: the target as a string another process can build (a registry id of
            the default registry, ``module:attr`` or ``file.py:attr``); enables the
            replay in a fresh process. None otherwise.
        on_episode: called as ``on_episode(done, total)`` after each episode (a progress bar).

    Attributes:
        reset_kwargs: the keywords besides ``seed`` that ``reset`` is called with.
    """

    def __init__(
        self,
        env: Any,
        name: str,
        options: CheckOptions,
        make_fresh: Optional[Callable[[], Any]] = None,
        spec: Optional[str] = None,
        on_episode: Optional[Callable[[int, int], None]] = None,
    ) -> None:
        self.env = env
        self.on_episode = on_episode
        self.name = name
        self.options = options
        self.make_fresh = make_fresh
        self.spec = spec
        self.report = Report(name, strict=options.strict)
        self.spaces = SpaceCache(env)
        self.watch = SpaceWatch(env, self.add)
        self.probes = Probes(self)
        self.lifecycle = LifecycleProbes(self)
        self.time_limits = TimeLimitProbe(self)
        self._per_rule: dict[str, int] = {}
        self.suppressed: dict[str, int] = {}
        # reset() keywords the env takes; a missing `options` is reported once, not per call.
        self.reset_kwargs: dict[str, Any] = {"options": None}
        # env.agents just before the call being judged (read when its actions are chosen).
        self._agents_before: Optional[list[Any]] = None
        # A copy of the action dict being sent, to compare with it after step().
        self._sent: dict[Any, Any] = {}
        self._mutation_reported = False
        # Whether a seeded reset failed: the probes of other resets would only repeat it.
        self.reset_failed = False
        # What episode 0's calls returned, to see whether later calls write into it.
        self.returned = ReturnedValues()
        self.random_watch = GlobalRandomWatch()

    # -- reporting ----------------------------------------------------------------

    def add(
        self,
        rule: str,
        message: str,
        *,
        episode: Optional[int] = None,
        step: Optional[int] = None,
        agent: Any = None,
        reproducer: Optional[Reproducer] = None,
        severity: Optional[rules.Severity] = None,
    ) -> None:
        """Record a finding under ``rule`` (kept up to MAX_FINDINGS_PER_RULE per rule)."""
        count = self._per_rule.get(rule, 0) + 1
        self._per_rule[rule] = count
        if count > MAX_FINDINGS_PER_RULE:
            self.suppressed[rule] = self.suppressed.get(rule, 0) + 1
            return
        sev = severity or rules.RULES[rule].severity
        if rule == rules.EPISODE_STEP_AFTER_END and self.options.strict:
            sev = "error"
        self.report.findings.append(
            Finding(rule, sev, message, episode=episode, step=step, agent=agent,
                    reproducer=reproducer)
        )

    @property
    def reproducible(self) -> bool:
        """Whether every replay so far matched (False when replays are off)."""
        return self.options.replay and not self._per_rule.get(rules.SEED_REPRODUCIBLE)

    # -- the whole check ----------------------------------------------------------

    def run(self) -> Report:
        """Play every episode and return the report; never raises for the env's faults."""
        start = time.perf_counter()
        try:
            with time_limit(self.options.timeout):
                self._run_all()
        except EnvTimeout:
            self.add(rules.ENV_TIMEOUT,
                     f"checking {self.name} took longer than its {self.options.timeout:g}s limit "
                     f"(in episode {self.report.episodes}); an env call hangs or is very slow. "
                     "Raise --timeout if the env is just slow, else find the call that never returns.")
        self.report.seconds = time.perf_counter() - start
        for rule, n in self.suppressed.items():
            self.report.findings.append(Finding(
                rule, rules.RULES[rule].severity if rule != rules.EPISODE_STEP_AFTER_END
                else ("error" if self.options.strict else "warning"),
                f"{n} more findings under {rule} were not listed (only the first "
                f"{MAX_FINDINGS_PER_RULE} are kept).",
            ))
        return self.report

    def _run_all(self) -> None:
        self.probes.step_before_reset()
        signature_ok = self._check_reset_signature()
        child = self._start_fresh_process() if signature_ok else None
        try:
            if not signature_ok or not self.watch.check_all():
                return
            reference = self._play_all()
            self._after_episodes(reference, child)
        finally:
            if child is not None:
                child.stop()

    def _play_all(self) -> Optional[Recording]:
        """Play (and replay) every episode; return episode 0's recording, if it went well."""
        reference = None
        for episode in range(self.options.episodes):
            played = self._play(episode)
            self.report.episodes += 1
            if self.on_episode is not None:
                self.on_episode(episode + 1, self.options.episodes)
            if played.ended:
                self.probes.step_after_end(episode, played.seed, played.actions,
                                           *played.trace[-1][2:])
            if self.options.replay and not played.aborted:
                self._replay(episode, played)
            if episode == 0 and not played.aborted:
                reference = played.recording
        changed = self.returned.first_change()
        if changed:
            index, what, reason = changed
            self.add(rules.OBS_UNTOUCHED,
                     f"the {what} returned by call {index} of episode 0 (0 is the reset) changed "
                     f"after they were returned ({reason}; as returned vs after the later calls "
                     "and episodes). Learners store what a call returns (replay buffers, "
                     "rollouts): return new arrays and dicts each call (obs.copy(), a new infos "
                     "dict per agent), or arrays you never write again.", episode=0, step=index)
        return reference

    def _after_episodes(self, reference: Optional[Recording],
                        child: Optional[FreshProcess]) -> None:
        """Run the probes that vary a recorded episode, the resets, memory, the fresh process."""
        self.time_limits.judge()
        if reference is not None:
            # Forms, instances and resets show in the first steps; long games are cut there.
            head = reference.head(PROBED_STEPS)
            ActionFormsProbe(self).run(head)
            for probe in (self.probes.fresh_instance, MidEpisodeReset(self).run,
                          self.probes.unseeded_reset, ActionEffectProbe(self).run):
                if self.reproducible:  # each replays the recording: once one differs, stop
                    probe(head)
        if not self.reset_failed:
            self.probes.resets()
            self.probes.memory()
            self.lifecycle.render()
            self.lifecycle.close(reference)
            if reference is not None and self.reproducible:  # copies replay the recording
                self.lifecycle.copies(reference.head(PROBED_STEPS))
        if reference is not None and child is not None and self.reproducible:
            self.probes.fresh_process(child, reference)

    def _start_fresh_process(self) -> Optional[FreshProcess]:
        if self.spec is None or not self.options.replay:
            return None
        seconds = min(FRESH_PROCESS_SECONDS, self.options.timeout or FRESH_PROCESS_SECONDS)
        try:
            return take(self.spec, seed=self.options.seed, max_steps=self.options.max_steps,
                        reset_kwargs=self.reset_kwargs, seconds=seconds,
                        config=self.options.config)
        except (OSError, ValueError):
            return None  # no process can be started here (or the config is no JSON): go on

    # -- target-level checks --------------------------------------------------------

    def _check_reset_signature(self) -> bool:
        try:
            params = inspect.signature(self.env.reset).parameters
        except (TypeError, ValueError):
            return True  # a builtin or C method: judged by calling it
        has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        missing = [k for k in ("seed", "options") if k not in params and not has_var_kw]
        if "options" in missing:
            self.reset_kwargs = {}
        if missing:
            self.add(rules.RESET_RETURNS_DICTS,
                     f"reset{inspect.signature(self.env.reset)} does not accept the keyword(s) "
                     f"{missing}; define reset(self, *, seed=None, options=None) and pass seed to "
                     "super().reset(seed=seed).")
            return "seed" not in missing
        return True

    # -- one episode ------------------------------------------------------------------

    def _play(self, episode: int) -> _Episode:
        seed = self.options.seed + episode
        played = _Episode(seed)
        if episode == 0:
            played.recording = Recording(episode, seed)
        env = self.env
        run = RandomEpisode(
            env, seed, max_steps=self.options.max_steps, reset_kwargs=self.reset_kwargs,
            read_reset=unpack_reset, read_step=unpack_step,
            choose=lambda actors, obs, infos: self._choose(run, actors, obs, infos, episode),
        )
        played.actions = run.actions
        appeared: set[Any] = set()
        done: set[Any] = set()
        try:
            possible = list(env.possible_agents)
            self._agents_before = read_agents(env)
            self.random_watch.mark()
            for step in run:
                where = self._where(episode, seed, run, step.index)
                self._after_call(run, step, where, episode)
                transition = self._transition(step, possible, frozenset(appeared),
                                              frozenset(done))
                self._judge(transition, where)
                played.trace.append((step.obs, step.rewards, step.terminateds, step.truncateds))
                if played.recording is not None:
                    played.recording.snapshots.append(snapshot(*played.trace[-1]))
                    self.returned.keep(step.index, step.obs, step.infos)
                played.ended = step.over
                appeared |= set(step.obs)
                done |= transition.done_now
        except EnvTimeout:
            raise
        except Exception as exc:
            played.aborted = True
            self._report_raised(exc, run, self._where(episode, seed, run, len(run.actions)))
            return played
        finally:
            self.report.steps += len(run.actions)
            if played.recording is not None:
                played.recording.actions = list(run.actions)
        played.aborted = run.stalled  # turn.actors_exist was reported; nothing to send
        if played.ended:
            self.time_limits.note(episode, seed, run.actions, *played.trace[-1][2:])
        if run.cut:
            self.add(rules.EPISODE_ENDS,
                     f"the episode did not end within {self.options.max_steps} steps; end it with "
                     "__all__ (e.g. truncate at a step limit) or raise --max-steps if it is just "
                     "long.", episode=episode, step=self.options.max_steps)
        return played

    def _after_call(self, run: RandomEpisode, step: Step, where: dict[str, Any],
                    episode: int) -> None:
        """Check what a call left behind beyond its return: spaces, the action dict sent, and
        the global random generators."""
        touched = self.random_watch.touched()
        if touched and not self._per_rule.get(rules.SEED_GLOBAL_STATE):
            call = "reset()" if step.index == 0 else "step()"
            self.add(rules.SEED_GLOBAL_STATE,
                     f"{call} changed the state of {touched}: it seeds or draws from a generator "
                     "every instance and library in the process shares, so two instances "
                     "stepped in turn (vector envs, lockstep comparisons) disturb each other. "
                     "Draw from self.np_random (seeded by super().reset(seed=seed)), or a "
                     "generator of the env's own.", **where)
        if step.index == 0:
            self.watch.reread_all(f"after the reset of episode {episode}", where)
        else:
            self._check_action_dict(run, step, where)
        for agent in step.obs:
            try:
                space = self.watch.read("observation", agent)
            except Exception:
                continue  # ids.known or space.defined (at the next reset) report it
            self.watch.same("observation", agent, space,
                            f"during episode {episode} (step {step.index})", where)

    def _check_action_dict(self, run: RandomEpisode, step: Step, where: dict[str, Any]) -> None:
        """Compare the action dict after step() with the copy taken before; keep the copy."""
        sent = self._sent
        reason = why_different(sent, step.actions)
        if reason:  # replays and reproducers send what was sent, not what is left of it
            run.actions[-1] = step.actions = sent
            where["reproducer"] = Reproducer(run.seed, list(run.actions))
        if reason and not self._mutation_reported:
            self._mutation_reported = True
            self.add(rules.TURN_ACTION_DICT_UNTOUCHED,
                     f"step() changed the action dict it was given ({reason}; as sent vs after "
                     "the call); the caller keeps its actions (RLlib records them in its "
                     "episode). Read the dict without changing it, or work on a copy "
                     "(dict(action_dict), np.array(a) for arrays).", **where)

    def _transition(self, step: Step, possible: list[Any], appeared: frozenset[Any],
                    done_before: frozenset[Any]) -> Transition:
        return Transition(
            kind="step" if step.index else "reset", index=step.index, obs=step.obs,
            infos=step.infos, rewards=step.rewards, terminateds=step.terminateds,
            truncateds=step.truncateds, actions=step.actions or {}, possible_agents=possible,
            possible_now=read_possible(self.env), agents_before=self._agents_before,
            agents_after=read_agents(self.env), appeared=appeared, done_before=done_before,
        )

    @staticmethod
    def _where(episode: int, seed: int, run: RandomEpisode, step: int,
               agent: Any = None) -> dict[str, Any]:
        return {"episode": episode, "step": step, "agent": agent,
                "reproducer": Reproducer(seed, list(run.actions))}

    def _report_raised(self, exc: BaseException, run: RandomEpisode,
                       where: dict[str, Any]) -> None:
        if isinstance(exc, _NoActionSpace):
            return  # space.defined was reported
        self.reset_failed = self.reset_failed or run.calling == "reset"
        if isinstance(exc, Malformed):
            self.add(exc.rule, str(exc), **where)
        elif run.calling == "reset":
            self.add(rules.ENV_RAISED,
                     f"reset(seed={run.seed}) raised {type(exc).__name__}: {exc}; reset must work "
                     "for any seed.", **where)
        else:
            self.add(rules.TURN_ACTIONS_ACCEPTED,
                     f"step() raised {type(exc).__name__}: {exc} on a valid action dict "
                     f"{short(self._sent)} for exactly the actors {list(self._sent)!r}; "
                     "an env must accept one legal action per actor.", **where)

    def _choose(self, run: RandomEpisode, actors: list[Any], obs: Mapping[Any, Any],
                infos: Mapping[Any, Any], episode: int) -> dict[Any, Any]:
        where = self._where(episode, run.seed or 0, run, len(run.actions) + 1)
        actions = {}
        for agent in actors:
            try:
                space = self.env.get_action_space(agent)
            except Exception as exc:
                self.add(rules.SPACE_DEFINED,
                         f"get_action_space({agent!r}) raised {type(exc).__name__}: {exc}",
                         **{**where, "agent": agent})
                raise _NoActionSpace() from exc
            self.watch.same("action", agent, space,
                            f"during episode {episode} (before step {len(run.actions) + 1})",
                            where)
            mask = safe_mask(obs.get(agent), infos.get(agent) if isinstance(infos, Mapping)
                             else None)
            if mask is not None and not mask.any():
                self.add(rules.TURN_ACTIONS_ACCEPTED,
                         f"the action mask of {agent!r} allows no action, yet it is asked to act; "
                         "give every actor at least one legal action, or do not ask it to act.",
                         **{**where, "agent": agent})
            actions[agent] = run.sampler.sample(agent, space, mask)
        self._agents_before = read_agents(self.env)
        self._sent = copy_actions(actions)
        self.random_watch.mark()
        return actions

    def _judge(self, transition: Transition, where: dict[str, Any]) -> None:
        for rule, check in CHECKS:
            try:
                issues = check(transition, self.spaces)
            except EnvTimeout:
                raise
            except Exception as exc:  # a value so odd that judging it raised
                self.add(rule, f"judging this transition raised {type(exc).__name__}: {exc}",
                         **where)
                continue
            for issue in issues:
                self.add(rule, issue.message, **{**where, "agent": issue.agent},
                         severity=issue.severity)

    # -- reproducibility ------------------------------------------------------------------

    def _replay(self, episode: int, played: _Episode) -> None:
        env = self.env
        steps: list[tuple[Any, ...]] = []
        try:
            obs, _ = unpack_reset(env.reset(seed=played.seed, **self.reset_kwargs))
            steps.append((obs, {}, {}, {}))
            for actions in played.actions:
                o, r, te, tr, _ = unpack_step(env.step(copy_actions(actions)))
                steps.append((o, r, te, tr))
        except EnvTimeout:
            raise
        except Exception as exc:
            self.add(rules.SEED_REPRODUCIBLE,
                     f"replaying the episode with the same seed and actions raised "
                     f"{type(exc).__name__}: {exc} after {max(len(steps) - 1, 0)} steps; the first "
                     "run did not.",
                     episode=episode, reproducer=Reproducer(played.seed, played.actions))
            return
        names = ("observations (and agent order)", "rewards", "terminateds", "truncateds")
        for index, (first, again) in enumerate(zip(played.trace, steps)):
            for name, a, b in zip(names, first, again):
                reason = why_different(a, b)
                if reason:
                    self.add(rules.SEED_REPRODUCIBLE,
                             f"the same seed ({played.seed}) and the same actions gave different "
                             f"{name} at step {index} ({reason}; first run vs replay). Draw all "
                             "randomness from self.np_random, which reset(seed=...) seeds.",
                             episode=episode, step=index,
                             reproducer=Reproducer(played.seed, played.actions[:index]))
                    return
