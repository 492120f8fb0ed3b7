"""The episode driver: plays seeded random legal episodes and judges every call.

For each episode the driver resets with ``seed + episode``, sends one random
legal action (action masks honoured, from the obs dict or from infos) for each
actor, records every transition and runs the per-transition checks of
:mod:`marlhub.contract.checks` on it. It then replays the episode with the
same seed and actions to check reproducibility. Once per target it checks the
spaces, the ``reset`` signature, and what ``step`` does after the episode has
ended (and, when it can build a fresh env, before any reset).

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

import gymnasium as gym

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
from marlhub.conformance.options import CheckOptions
from marlhub.conformance.report import Finding, Report, Reproducer
from marlhub.contract import rules
from marlhub.contract.checks import TRANSITION_CHECKS, SpaceCache, Transition
from marlhub.contract.compare import why_different
from marlhub.episode.play import RandomEpisode, Step
from marlhub.spaces import find_action_mask

__all__ = ["CheckOptions", "Driver"]

#: Findings kept per rule and target; the rest are counted, not stored.
MAX_FINDINGS_PER_RULE = 25



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



class Driver:
    """Checks one env against every rule of the contract.

    Args:
        env: the env under test (a hub env or anything that quacks like one).
        name: how the target is named in the report.
        options: how many episodes, the seed, the budget.
        make_fresh: builds a new, never-reset instance; enables the
            step-before-reset probe. None when the target is a single instance.
    """

    def __init__(
        self,
        env: Any,
        name: str,
        options: CheckOptions,
        make_fresh: Optional[Callable[[], Any]] = None,
    ) -> None:
        self.env = env
        self.name = name
        self.options = options
        self.make_fresh = make_fresh
        self.report = Report(name, strict=options.strict)
        self.spaces = SpaceCache(env)
        self._per_rule: dict[str, int] = {}
        self.suppressed: dict[str, int] = {}
        # reset() keywords the env takes; a missing `options` is reported once, not per call.
        self._reset_options: dict[str, Any] = {"options": None}
        # env.agents just before the call being judged (read when its actions are chosen).
        self._agents_before: Optional[list[Any]] = None

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
        self._probe_step_before_reset()
        if not self._check_reset_signature() or not self._check_spaces():
            return
        probed_end = False
        for episode in range(self.options.episodes):
            played = self._play(episode)
            self.report.episodes += 1
            if played.ended and not probed_end:
                probed_end = True
                self._probe_step_after_end(episode, played)
            if self.options.replay and not played.aborted:
                self._replay(episode, played)

    # -- target-level checks --------------------------------------------------------

    def _check_reset_signature(self) -> bool:
        try:
            params = inspect.signature(self.env.reset).parameters
        except (TypeError, ValueError):
            return True  # a builtin or C method: judged by calling it
        has_var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        missing = [k for k in ("seed", "options") if k not in params and not has_var_kw]
        if "options" in missing:
            self._reset_options = {}
        if missing:
            self.add(rules.RESET_RETURNS_DICTS,
                     f"reset{inspect.signature(self.env.reset)} does not accept the keyword(s) "
                     f"{missing}; define reset(self, *, seed=None, options=None) and pass seed to "
                     "super().reset(seed=seed).")
            return "seed" not in missing
        return True

    def _check_spaces(self) -> bool:
        try:
            possible = list(self.env.possible_agents)
        except Exception as exc:
            self.add(rules.SPACE_DEFINED,
                     f"possible_agents cannot be read as a list ({type(exc).__name__}: {exc}); "
                     "set self.possible_agents to every agent id that can ever appear.")
            return False
        if not possible:
            self.add(rules.SPACE_DEFINED,
                     "possible_agents is empty; set self.possible_agents to every agent id that "
                     "can ever appear, before the first reset.")
            return False
        ok = True
        for agent in possible:
            for kind in ("observation", "action"):
                getter = getattr(self.env, f"get_{kind}_space", None)
                try:
                    first = getter(agent) if getter else self.env.__dict__[f"{kind}_spaces"][agent]
                    second = getter(agent) if getter else first
                except Exception as exc:
                    self.add(rules.SPACE_DEFINED,
                             f"get_{kind}_space({agent!r}) raised {type(exc).__name__}: {exc}; "
                             f"define {kind}_spaces for every agent in possible_agents.",
                             agent=agent)
                    ok = False
                    continue
                if not isinstance(first, gym.Space):
                    self.add(rules.SPACE_DEFINED,
                             f"get_{kind}_space({agent!r}) returned {first!r} "
                             f"({type(first).__name__}), not a gymnasium Space; return a "
                             "gymnasium.spaces.Space for every possible agent.", agent=agent)
                    ok = ok and kind == "observation"
                elif second is not first:
                    self.add(rules.SPACE_DEFINED,
                             f"get_{kind}_space({agent!r}) returned a new object on each call; "
                             "build spaces once (in __init__) and return the same object, so "
                             "their RNG state and identity stay stable.", agent=agent)
        return ok

    def _probe_step_before_reset(self) -> None:
        if self.make_fresh is None:
            return
        try:
            fresh = self.make_fresh()
        except Exception:
            return  # the main check reports what building the env does
        self._expect_refusal(fresh, {}, "before the first reset()", episode=None, reproducer=None)
        try:
            fresh.close()
        except Exception:
            pass

    def _probe_step_after_end(self, episode: int, played: _Episode) -> None:
        last = played.actions[-1] if played.actions else {}
        self._expect_refusal(self.env, dict(last), "after the episode ended with __all__",
                             episode=episode,
                             reproducer=Reproducer(played.seed, played.actions + [dict(last)]))

    def _expect_refusal(self, env: Any, action: dict[Any, Any], when: str, *,
                        episode: Optional[int], reproducer: Optional[Reproducer]) -> None:
        try:
            env.step(action)
        except EnvTimeout:
            raise
        except Exception as exc:
            if not str(exc).strip():
                self.add(rules.EPISODE_STEP_AFTER_END,
                         f"step() {when} raised {type(exc).__name__} with no message; say what "
                         "happened and that reset() is needed.", episode=episode,
                         reproducer=reproducer)
            return
        self.add(rules.EPISODE_STEP_AFTER_END,
                 f"step() {when} returned normally instead of raising; raise an error that says "
                 "reset() is needed (e.g. marlhub.ResetNeededError).", episode=episode,
                 reproducer=reproducer)

    # -- one episode ------------------------------------------------------------------

    def _play(self, episode: int) -> _Episode:
        seed = self.options.seed + episode
        played = _Episode(seed)
        env = self.env
        run = RandomEpisode(
            env, seed, max_steps=self.options.max_steps, reset_kwargs=self._reset_options,
            read_reset=unpack_reset, read_step=unpack_step,
            choose=lambda actors, obs, infos: self._choose(run, actors, obs, infos, episode),
        )
        played.actions = run.actions
        appeared: set[Any] = set()
        done: set[Any] = set()
        try:
            possible = list(env.possible_agents)
            self._agents_before = read_agents(env)
            for step in run:
                transition = self._transition(step, possible, frozenset(appeared),
                                              frozenset(done))
                self._judge(transition, self._where(episode, seed, run, step.index))
                played.trace.append((step.obs, step.rewards, step.terminateds, step.truncateds))
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
        played.aborted = run.stalled  # turn.actors_exist was reported; nothing to send
        if run.cut:
            self.add(rules.EPISODE_ENDS,
                     f"the episode did not end within {self.options.max_steps} steps; end it with "
                     "__all__ (e.g. truncate at a step limit) or raise --max-steps if it is just "
                     "long.", episode=episode, step=self.options.max_steps)
        return played

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
        if isinstance(exc, Malformed):
            self.add(exc.rule, str(exc), **where)
        elif run.calling == "reset":
            self.add(rules.ENV_RAISED,
                     f"reset(seed={run.seed}) raised {type(exc).__name__}: {exc}; reset must work "
                     "for any seed.", **where)
        else:
            self.add(rules.TURN_ACTIONS_ACCEPTED,
                     f"step() raised {type(exc).__name__}: {exc} on a valid action dict "
                     f"{short(run.actions[-1])} for exactly the actors {list(run.actions[-1])!r}; "
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
            info = infos.get(agent) if isinstance(infos, Mapping) else None
            mask = find_action_mask(obs.get(agent), info if isinstance(info, Mapping) else None)
            if mask is not None and not mask.any():
                self.add(rules.TURN_ACTIONS_ACCEPTED,
                         f"the action mask of {agent!r} allows no action, yet it is asked to act; "
                         "give every actor at least one legal action, or do not ask it to act.",
                         **{**where, "agent": agent})
            actions[agent] = run.sampler.sample(agent, space, mask)
        self._agents_before = read_agents(self.env)
        return actions

    def _judge(self, transition: Transition, where: dict[str, Any]) -> None:
        for rule, check in TRANSITION_CHECKS:
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
            obs, _ = unpack_reset(env.reset(seed=played.seed, **self._reset_options))
            steps.append((obs, {}, {}, {}))
            for actions in played.actions:
                o, r, te, tr, _ = unpack_step(env.step(actions))
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
