"""Probes: what users vary around the seeded episodes, each judged under its rule.

Once per target, besides playing its episodes, the driver asks :class:`Probes` to:

* step where there is no episode: on a fresh instance before any reset, and
  after ``__all__`` with the last action dict and with ``{}``; each must raise
  a clear error, not return, nor crash from inside (``episode.step_after_end``);
* reset without a seed, and with ``options={}`` as Gymnasium's ``check_env``
  does (``reset.returns_dicts``, ``env.raised``);
* play a recorded episode again on a fresh instance stepped in turn with this one
  (``seed.reproducible``), and after a reset in the middle of it, after a death
  and after a late join where it has them (``reset.mid_episode``);
* after that episode, reset without a seed and play on, here and on a fresh
  instance: the same seeded past gives the same unseeded episode
  (``seed.reproducible``; Gymnasium's ``reset(seed=None)`` keeps the generator);
* replay one seeded episode a few times under tracemalloc
  (``resource.memory_bounded``);
* compare episode 0 with its replay in a fresh process with another
  ``PYTHONHASHSEED`` (``seed.reproducible``).

Every probe copies the action dicts it sends and never stops the check: what
the env raises becomes a finding. The other probes have modules of their own:
numpy's action forms (:mod:`~marlhub.conformance.action_forms`), the effect of a
choice (:mod:`~marlhub.conformance.action_effect`), and copies, rendering and
closing (:mod:`~marlhub.conformance.lifecycle`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from marlhub.conformance.calls import (
    EnvTimeout,
    Malformed,
    short,
    unpack_reset,
    unpack_step,
)
from marlhub.conformance.fresh_process import FreshProcess
from marlhub.conformance.host import ProbeHost, close_quietly, fresh_env
from marlhub.conformance.memory import PROBE_EPISODES, memory_growth
from marlhub.conformance.trajectories import (
    NAMES,
    Recording,
    Snapshot,
    clip,
    copy_actions,
    digest,
    first_difference,
    play_actions,
    play_interleaved,
    raised_in_play,
    snapshot,
    step_digests,
)
from marlhub.contract import rules
from marlhub.contract.findings import Reproducer
from marlhub.core import ALL
from marlhub.episode.play import RandomEpisode, random_actions
from marlhub.episode.status import flag
from marlhub.errors import MarlhubError
from marlhub.spaces import ActionSampler

__all__ = ["UNSEEDED_STEPS", "Probes", "why_not_refused"]

#: Exceptions that, without a word about reset in their message, are crashes from
#: inside the env rather than a refusal to step.
_CRASHES = (AttributeError, KeyError, IndexError, TypeError, NameError, ZeroDivisionError,
            RecursionError)

#: How many seeds show that an env's start depends much on its seed (each a different start:
#: few envs with a small number of starts give as many, so four unseeded starts alike are
#: no coincidence).
SEEDS_TRIED = 8

_REFUSE = ("raise an error that says reset() is needed (e.g. marlhub.ResetNeededError)")

#: At most this many steps of the unseeded episode are compared (:meth:`Probes.unseeded_reset`).
UNSEEDED_STEPS = 100


def why_not_refused(env: Any, action: Mapping[Any, Any]) -> Optional[str]:
    """Step ``env`` where it must refuse; return what it did instead, or None if it refused.

    A refusal is an exception with a message that is not a crash from inside
    (an AttributeError, KeyError, TypeError, ... that does not mention reset).

    Example:
        >>> class Env:
        ...     def step(self, action):
        ...         return self.board[0]
        >>> why_not_refused(Env(), {}).startswith("raised AttributeError: 'Env' object has no")
        True
    """
    try:
        env.step(action)
    except EnvTimeout:
        raise
    except Exception as exc:
        text = str(exc).strip()
        if not text:
            return f"raised {type(exc).__name__} with no message"
        if (isinstance(exc, _CRASHES) and not isinstance(exc, MarlhubError)
                and "reset" not in text.lower()):
            return (f"raised {type(exc).__name__}: {clip(text)} ({_origin(exc)}), a crash "
                    "inside the env rather than a refusal")
        return None
    return "returned normally instead of raising"


def _origin(exc: BaseException) -> str:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return "no traceback"
    code = tb.tb_frame.f_code
    return f"{Path(code.co_filename).name}:{tb.tb_lineno} in {code.co_name}"


class Probes:
    """The target-level probes of one :class:`~marlhub.conformance.host.ProbeHost` (the
    :class:`~marlhub.conformance.driver.Driver` that runs them).

    Each method runs one probe on the host's env and reports through the
    host's ``add``; none raises for the env's faults.

    Example:
        >>> import marlhub
        >>> from marlhub.conformance.driver import Driver
        >>> from marlhub.conformance.options import CheckOptions
        >>> driver = Driver(marlhub.make("tic_tac_toe"), "tic_tac_toe", CheckOptions())
        >>> driver.probes.resets()  # reset() and reset(options={}) both work
        >>> driver.probes.memory()  # and it keeps nothing from episode to episode
        >>> driver.report.findings
        []
    """

    def __init__(self, driver: ProbeHost) -> None:
        self.d = driver
        self._ends_probed: set[bool] = set()  # truncated or not, after which step was tried
        self._end_found = False

    def fresh_env(self) -> Any:
        """A newly built instance, or None (a given instance, or building raised: the main
        check reports what building the env does); :func:`marlhub.conformance.host.fresh_env`."""
        return fresh_env(self.d)

    # -- step where there is no episode ---------------------------------------------------

    def step_before_reset(self) -> None:
        """Build a fresh instance and step it with ``{}`` before any reset."""
        fresh = self.fresh_env()
        if fresh is None:
            return
        problem = why_not_refused(fresh, {})
        close_quietly(fresh)
        if problem:
            self.d.add(rules.EPISODE_STEP_AFTER_END,
                       f"step() before the first reset() {problem}; {_REFUSE}.")

    def step_after_end(self, episode: int, seed: Optional[int], actions: list[dict[Any, Any]],
                       terminateds: Mapping[Any, Any], truncateds: Mapping[Any, Any]) -> None:
        """Step after ``__all__`` with the last action dict, with its agents not flagged done
        (an env whose ``__all__`` says less than it does), then with ``{}``: after the first
        episode that ends by termination and the first cut by truncation (an env may guard
        one of them only), until one of them finds something."""
        how = _flag(truncateds, ALL)
        if how in self._ends_probed or self._end_found:
            return
        self._ends_probed.add(how)
        last = actions[-1] if actions else {}
        going = {a: x for a, x in last.items()
                 if not (_flag(terminateds, a) or _flag(truncateds, a))}
        tries = [(f"the last action dict {short(last, 80)}", last)]
        if going and len(going) < len(last):
            tries.append((f"the actions of the agents not flagged done {short(going, 80)}",
                          going))
        problems, first = [], None
        for what, sent in (*tries, ("{}", {})):
            problem = why_not_refused(self.d.env, copy_actions(sent))
            if problem:
                problems.append(f"with {what} it {problem}")
                first = sent if first is None else first
        if first is not None:
            self._end_found = True
            self.d.add(rules.EPISODE_STEP_AFTER_END,
                       f"step() after the episode ended with __all__: {'; '.join(problems)}. "
                       "Check at the top of step() that an episode is running, before reading "
                       f"the actions, and {_REFUSE}.",
                       episode=episode, reproducer=Reproducer(seed, [*actions, dict(first)]))

    # -- resets ---------------------------------------------------------------------------

    def resets(self) -> None:
        """Reset without a seed, and with ``options={}`` when reset takes options."""
        calls: list[tuple[str, dict[str, Any], str]] = [
            ("reset()", {}, "reset must work without a seed too: pass seed=None on to "
             "super().reset(seed=seed), which then draws one from the OS"),
        ]
        if "options" in self.d.reset_kwargs:
            calls.append(("reset(options={})", {"options": {}},
                          "Gymnasium's check_env resets this way: read options with "
                          "options.get(key, default) and treat a missing key as the default"))
        for label, kwargs, fix in calls:
            try:
                unpack_reset(self.d.env.reset(**kwargs))
            except EnvTimeout:
                raise
            except Malformed as exc:
                self.d.add(exc.rule, f"{label}: {exc}")
            except Exception as exc:
                self.d.add(rules.ENV_RAISED,
                           f"{label} raised {type(exc).__name__}: {clip(str(exc))}; {fix}.")
        self._unseeded_starts_vary()

    def _unseeded_starts_vary(self) -> None:
        """Fresh instances reset without a seed start from the OS's entropy, not a constant.

        Only judged where the env's start depends much on the seed: ``reset(seed=s)`` for
        :data:`SEEDS_TRIED` seeds gives as many different starts. Then four fresh instances
        that start alike unseeded fall back to one seed (``seed = 42 if seed is None``),
        and every run of a learner that does not seed plays the same episodes.
        """
        env = self.fresh_env()
        if env is None:
            return
        try:
            starts = {self._start(env, seed) for seed in range(SEEDS_TRIED)}
        finally:
            close_quietly(env)
        if None in starts or len(starts) < SEEDS_TRIED:
            return  # it raised (the episodes report it), or the start does not vary enough
        unseeded = set()
        for _ in range(4):
            env = self.fresh_env()
            try:
                unseeded.add(self._start(env, None))
            finally:
                close_quietly(env)
        if len(unseeded) == 1 and None not in unseeded:
            self.d.add(rules.SEED_REPRODUCIBLE,
                       f"reset() without a seed started alike on four fresh instances, where "
                       f"reset(seed=s) starts otherwise for each of {SEEDS_TRIED} seeds: "
                       "unseeded, the env falls back to one seed, and every run that does not "
                       "seed plays the same episodes. Pass seed=None on to super().reset("
                       "seed=seed), which seeds self.np_random from the OS.", severity="warning")

    def _start(self, env: Any, seed: Optional[int]) -> Optional[str]:
        """A digest of the first observations of ``env.reset(seed=seed)`` (None: it raised)."""
        try:
            obs, _ = unpack_reset(env.reset(seed=seed, **self.d.reset_kwargs))
            return digest(obs)
        except EnvTimeout:
            raise
        except Exception:
            return None

    # -- a recorded episode, again ---------------------------------------------------------

    def fresh_instance(self, ref: Recording) -> None:
        """Replay ``ref`` on a newly built instance, stepped in turn with this one.

        Two instances stepped in turn (a vector env, a lockstep comparison, a league of
        copies) must each play the episode they play alone; an env that seeds and draws
        numpy's or Python's global generator replays alone and not beside another.
        """
        env = self.fresh_env()
        if env is None:
            return
        runs: tuple[list[Snapshot], list[Snapshot]] = ([], [])
        try:
            error = self._interleave(ref, env, runs)
        finally:
            close_quietly(env)
        where: dict[str, Any] = {"episode": ref.episode,
                                 "reproducer": Reproducer(ref.seed, ref.actions)}
        fix = ("State shared between instances (numpy's global np.random or Python's random "
               "module, a class attribute, a module-level counter) or kept from construction "
               "changes the episode: keep episode state on the instance, set it in reset(), "
               "and draw randomness from self.np_random.")
        head = (f"this instance and a fresh one, stepped in turn with the same seed "
                f"({ref.seed}) and actions")
        if error:
            self.d.add(rules.SEED_REPRODUCIBLE,
                       f"{head}, raised {error} at step {max(len(runs[1]) - 1, 0)}, where this "
                       f"instance alone did not. {fix}", **where)
            return
        for label, into in (("the fresh one", runs[1]), ("this one", runs[0])):
            difference = first_difference(ref.snapshots, into)
            if difference:
                k, what, reason = difference
                alone = self._solo_fresh_matches(ref)
                how = ("each plays its seeded episode alone, so they share state" if alone else
                       "a fresh instance alone plays another episode too")
                self.d.add(rules.SEED_REPRODUCIBLE,
                           f"{head}: {label} gave different {what} at step {k} than this instance "
                           f"alone ({reason}); {how}. {fix}", step=k, **where)
                return

    def _interleave(self, ref: Recording, fresh: Any,
                    runs: tuple[list[Snapshot], list[Snapshot]]) -> Optional[str]:
        try:
            play_interleaved([self.d.env, fresh], ref.seed, ref.actions, self.d.reset_kwargs,
                             list(runs))
        except EnvTimeout:
            raise
        except Exception as exc:
            return f"{type(exc).__name__}: {clip(str(exc))}"
        return None

    def _solo_fresh_matches(self, ref: Recording) -> bool:
        env = self.fresh_env()
        if env is None:
            return False
        try:
            into: list[Snapshot] = []
            return not (self._play(ref, into, env=env) or first_difference(ref.snapshots, into))
        finally:
            close_quietly(env)

    def unseeded_reset(self, ref: Recording) -> None:
        """After ``ref``, reset without a seed and play on, here and on a fresh instance.

        ``reset(seed=None)`` goes on with the generator the seeded reset set
        (Gymnasium: the PRNG is not reset), so two instances that played the same
        seeded steps must play the next, unseeded episode alike.
        """
        fresh = self.fresh_env()
        if fresh is None:
            return
        seeded: tuple[list[Snapshot], list[Snapshot]] = ([], [])
        runs: tuple[list[Snapshot], list[Snapshot]] = ([], [])
        try:
            errors = [self._continue_unseeded(ref, env, past, into)
                      for env, past, into in ((self.d.env, seeded[0], runs[0]),
                                              (fresh, seeded[1], runs[1]))]
        finally:
            close_quietly(fresh)
        # What raises, and a fresh instance that differs already under the seed, are the
        # other probes' findings.
        difference = (None if any(errors) or first_difference(*seeded)
                      else first_difference(*runs))
        if difference:
            k, what, reason = difference
            self.d.add(rules.SEED_REPRODUCIBLE,
                       f"after reset(seed={ref.seed}) and the same {len(ref.actions)} steps, "
                       f"reset() without a seed gave different {what} on two instances at call "
                       f"{k} of the unseeded episode ({reason}; this instance vs a fresh one). "
                       "reset(seed=None) must go on with the generator the seeded reset set, "
                       "not draw a new one from the OS: call super().reset(seed=seed) and draw "
                       "from self.np_random, or keep your own generator when seed is None.",
                       episode=ref.episode)

    def _continue_unseeded(self, ref: Recording, env: Any, seeded: list[Snapshot],
                           into: list[Snapshot]) -> bool:
        """Play ``ref`` on ``env`` into ``seeded``, then an unseeded episode into ``into``.

        The unseeded episode takes random legal actions, drawn alike on both instances
        (the sampler is seeded with ``ref``'s seed, the reset is not). Returns True when
        the env raised (the recording then stops).
        """
        sampler = ActionSampler(0 if ref.seed is None else ref.seed)
        space_of = self.d.spaces.action_space
        unseeded = RandomEpisode(
            env, None, max_steps=min(UNSEEDED_STEPS, self.d.options.max_steps),
            reset_kwargs=self.d.reset_kwargs, read_reset=unpack_reset, read_step=unpack_step,
            choose=lambda actors, obs, infos: random_actions(actors, obs, infos, space_of,
                                                             sampler))
        try:
            play_actions(env, ref.seed, ref.actions, self.d.reset_kwargs, seeded)
            for step in unseeded:
                into.append(snapshot(step.obs, step.rewards, step.terminateds, step.truncateds))
        except EnvTimeout:
            raise
        except Exception:
            return True
        return False

    def _play(self, ref: Recording, into: list[Snapshot], *, env: Any = None,
              actions: Optional[list[dict[Any, Any]]] = None) -> Optional[str]:
        """Play ``ref``'s seed with ``actions`` (its own by default); return the error, if any."""
        return raised_in_play(self.d.env if env is None else env, ref.seed,
                              ref.actions if actions is None else actions, self.d.reset_kwargs,
                              into)

    # -- memory and other processes ---------------------------------------------------------

    def memory(self) -> None:
        """Replay one seeded episode under tracemalloc; warn when memory grows every time."""
        # The seed after the last episode's: no episode of the check is played again.
        seed = self.d.options.seed + self.d.options.episodes
        # At most as many steps as the episodes played: the probe never doubles a check.
        steps = max(5, self.d.report.steps // PROBE_EPISODES)
        try:
            growth = memory_growth(self.d.env, seed, max_steps=min(self.d.options.max_steps, steps),
                                   reset_kwargs=self.d.reset_kwargs)
        except EnvTimeout:
            raise
        except Exception:
            return  # the episodes report what the env raises
        if growth is not None:
            self.d.add(rules.RESOURCE_MEMORY_BOUNDED,
                       f"memory traced by tracemalloc grew by {growth.per_episode / 1024:.1f} KiB "
                       f"per episode over {growth.episodes} replays of the same seeded episode "
                       f"(seed {seed}), {growth.total / 1024:.1f} KiB in all, most of it "
                       f"allocated at {growth.where}; it should not grow at all. The env keeps "
                       "something from every episode (frames, observations, a log): clear it in "
                       "reset() or bound it, e.g. with collections.deque(maxlen=...).")

    def fresh_process(self, child: FreshProcess, ref: Recording) -> None:
        """Compare ``ref`` (episode 0) with the same episode played by ``child``."""
        result = child.result()
        if result is None or result.get("status") not in ("ok", "raised"):
            return  # it could not build the target, or ran out of time: nothing to compare
        mine = [step_digests(s) for s in ref.snapshots]
        theirs = result.get("digests") or []
        where: dict[str, Any] = {"episode": ref.episode,
                                 "reproducer": Reproducer(ref.seed, ref.actions)}
        head = (f"in a fresh process with PYTHONHASHSEED={child.hash_seed} (this one: "
                f"{os.environ.get('PYTHONHASHSEED', 'random')}), episode {ref.episode} (seed "
                f"{ref.seed}, random legal actions drawn alike)")
        fix = ("The episode depends on something that changes between processes: most often the "
               "order of a set (or of a dict built from one) of strings, which hash "
               "randomization changes; or id(), object addresses, time. Iterate in a fixed order "
               "(lists, sorted(...)) and draw randomness from self.np_random.")
        for index, (a, b) in enumerate(zip(mine, theirs)):
            for name, x, y in zip(NAMES, a, b):
                if x != y:
                    self.d.add(rules.SEED_REPRODUCIBLE,
                               f"{head} gave different {name} at step {index} than in this "
                               f"process. {fix}", step=index, **where)
                    return
        if result["status"] == "raised" and len(theirs) <= len(mine):
            self.d.add(rules.SEED_REPRODUCIBLE,
                       f"{head} raised {clip(str(result.get('error')))} at step "
                       f"{len(theirs)}, which this process played without error. {fix}",
                       step=len(theirs), **where)
        elif len(mine) != len(theirs):
            self.d.add(rules.SEED_REPRODUCIBLE,
                       f"{head} took {len(theirs) - 1} steps where this process took "
                       f"{len(mine) - 1}. {fix}", **where)


def _flag(flags: Any, key: Any) -> bool:
    try:
        return bool(flag(flags, key))
    except Exception:  # malformed flags: the done.* rules report them
        return False
