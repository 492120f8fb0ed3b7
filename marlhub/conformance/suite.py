"""The Python face of the conformance suite: :func:`check` and :func:`assert_conforms`.

Example:
    >>> report = check("tic_tac_toe", episodes=5)
    >>> report.ok, report.episodes
    (True, 5)
    >>> assert_conforms("rock_paper_scissors", episodes=3).ok
    True
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Optional

from marlhub.conformance.calls import EnvTimeout, time_limit
from marlhub.conformance.driver import Driver
from marlhub.conformance.host import close_quietly
from marlhub.conformance.interop import check_targets
from marlhub.conformance.known_faults import mark_known_faults
from marlhub.conformance.options import DEFAULT_MAX_STEPS, CheckOptions
from marlhub.conformance.report import Finding, Report
from marlhub.conformance.targets import resolve_target
from marlhub.contract import rules
from marlhub.registry import EnvContext, Registry, default_registry
from marlhub.registry.ids import split_id

__all__ = ["DEFAULT_MAX_STEPS", "assert_conforms", "check"]


def check(
    target: Any,
    *,
    episodes: int = 20,
    seed: int = 0,
    max_steps: int = DEFAULT_MAX_STEPS,
    strict: bool = False,
    timeout: Optional[float] = None,
    against_native: bool = False,
    replay: bool = True,
    interop: Sequence[str] = (),
    registry: Optional[Registry] = None,
    on_episode: Optional[Callable[[int, int], None]] = None,
    name: Optional[str] = None,
    config: Optional[dict[str, Any]] = None,
) -> Report:
    """Check ``target`` against every rule of the contract and return the report.

    Plays ``episodes`` episodes with random legal actions (episode i seeded
    ``seed + i``), judges every reset and step, replays each episode to check
    reproducibility, and probes what users vary: ``step`` before reset and
    after the end, resets without a seed or with options, actions as numpy
    values, a fresh instance, a reset mid-episode, memory over repeated
    episodes, and (for targets given as strings) episode 0 in a fresh process
    with another ``PYTHONHASHSEED``. It never stops at the first finding, and
    an env that raises, returns garbage or hangs produces findings, not
    exceptions.

    Args:
        target: an env, an env class or factory, a registry id, or a
            ``"module:attr"`` / ``"path/file.py:attr"`` string.
        episodes: how many episodes to play.
        seed: the seed of the first episode.
        max_steps: the step budget of one episode; an episode still running
            then is reported under ``episode.ends`` (a warning).
        strict: count warnings as failures, and ``episode.step_after_end`` as an error.
        timeout: seconds for the whole target (interrupts Python code on the
            main thread of POSIX systems; ``marlhub check --jobs`` also ends
            hangs in native code).
        against_native: also compare the env with its native twin in lockstep
            (registry ids of a family that supports it).
        replay: replay each episode, on a fresh instance and in a fresh process, to
            check ``seed.reproducible`` (and a reset mid-episode, ``reset.mid_episode``).
        interop: target APIs (``"pettingzoo.aec"``, ``"openspiel"``, ... or every name of
            :data:`~marlhub.conformance.interop.TARGET_NAMES`) to convert the env to and
            check with that library's own checker and a round trip; the results are
            in ``report.conversions``.
        on_episode: called as ``on_episode(done, total)`` after each episode played.
        registry: where ids are resolved; the default registry when None.
        name: how the target is named in the report; its string form when None.
        config: the env config: ``make(id, config)`` for a registry id, an
            :class:`~marlhub.context.EnvContext` of it for a class or factory that takes
            one; the fresh process and the native twin get it too.

    Returns:
        The :class:`~marlhub.conformance.report.Report`.

    Raises:
        TargetError, UnknownEnvError, EnvCreationError, ConfigError: the target
            cannot be loaded or built.
    """
    if episodes < 1 or max_steps < 1:
        raise ValueError(
            f"check() needs episodes >= 1 and max_steps >= 1, got episodes={episodes}, "
            f"max_steps={max_steps}."
        )
    resolved = resolve_target(target, registry, config)
    options = CheckOptions(episodes=episodes, seed=seed, max_steps=max_steps, strict=strict,
                           timeout=timeout, replay=replay, against_native=against_native,
                           interop=tuple(interop), config=config)
    with warnings.catch_warnings(record=True) as caught:
        # The env's libraries' warnings go in the report, each once ("always" would keep
        # every repeat, which the memory probe would rightly see growing).
        warnings.simplefilter("default")
        report = _run_checks(target, resolved, options, registry, name, on_episode)
    report.native_warnings = _distinct(caught)
    reg = registry or default_registry()
    mark_known_faults(report, resolved.registry_id, reg, config)
    return report


def _run_checks(target: Any, resolved: Any, options: CheckOptions, registry: Optional[Registry],
                name: Optional[str], on_episode: Optional[Callable[[int, int], None]]) -> Report:
    """The driver's checks, then the lockstep comparison and the conversions asked for."""
    env = resolved.build()
    if (getattr(env, "metadata", None) or {}).get("reproducible") is False:
        # External simulators say so: nothing seeds them, so no replay can match.
        options = dataclasses.replace(options, replay=False)
    try:
        driver = Driver(env, name or resolved.name, options,
                        make_fresh=resolved.build if resolved.fresh else None,
                        spec=_spec_of(target, registry), on_episode=on_episode)
        report = driver.run()
    finally:
        close_quietly(env)
    reg = registry or default_registry()
    if options.against_native:
        start = time.perf_counter()
        report.findings.extend(_lockstep(resolved.registry_id, options, reg))
        report.lockstep_seconds = time.perf_counter() - start
        report.seconds += report.lockstep_seconds
    if options.interop:
        start = time.perf_counter()
        fresh = resolved.build if resolved.fresh else _copies_of(resolved.build())
        report.conversions = check_targets(fresh, options.interop, seed=options.seed)
        report.seconds += time.perf_counter() - start
    return report


def _distinct(caught: list[warnings.WarningMessage]) -> list[str]:
    """Each distinct warning once (with a count where it came from several places)."""
    counts: dict[str, int] = {}
    for w in caught:
        text = f"{w.category.__name__}: {w.message}".strip().replace("\n", " ")
        counts[text] = counts.get(text, 0) + 1
    return [text if n == 1 else f"{text} (x{n})" for text, n in counts.items()]


def _spec_of(target: Any, registry: Optional[Registry]) -> Optional[str]:
    """The target as a string another process can build, or None.

    ``module:attr`` and ``file.py:attr`` strings build anywhere; a registry id
    only when it is looked up in the default registry, the one a new process has.
    """
    if not isinstance(target, str):
        return None
    return target if ":" in target or registry is None else None


def _lockstep(env_id: Optional[str], options: CheckOptions, registry: Registry) -> list[Finding]:
    family_name, rest = split_id(env_id) if env_id else (None, "")
    family = registry.families.get(family_name) if family_name else None
    compare = getattr(family, "lockstep", None)
    if compare is None:
        what = f"{env_id!r}" if env_id else "this target"
        return [Finding(
            rules.EQUIV_TRAJECTORY, "warning",
            f"--against-native: {what} has no native twin to compare with (only ids of a family "
            "such as pettingzoo/... or openspiel/... do); the lockstep comparison was skipped.",
        )]
    try:
        with time_limit(options.timeout):
            return list(compare(rest, EnvContext(options.config), episodes=options.episodes,
                                seed=options.seed, max_steps=options.max_steps))
    except EnvTimeout:
        return [Finding(rules.ENV_TIMEOUT, "error",
                        f"the lockstep comparison of {env_id!r} took longer than "
                        f"{options.timeout:g}s.")]
    except Exception as exc:
        return [Finding(rules.ENV_RAISED, "error",
                        f"the lockstep comparison of {env_id!r} raised {type(exc).__name__}: {exc}")]


def _copies_of(env: Any) -> Callable[[], Any]:
    """A factory for a target given as one instance: deep copies of it."""
    return lambda: copy.deepcopy(env)




def assert_conforms(target: Any, **options: Any) -> Report:
    """Check ``target`` and raise ``AssertionError`` with the readable report if it fails.

    Meant for users' own test suites::

        def test_my_env_conforms():
            assert_conforms(MyEnv, episodes=50)

    Args:
        target: anything :func:`check` accepts.
        options: keyword arguments of :func:`check`.

    Returns:
        The report, when it passes (warnings may be in it).

    Raises:
        AssertionError: the report is not ok.
    """
    report = check(target, **options)
    if not report.ok:
        raise AssertionError("the env breaks the MultiAgentEnv contract:\n" + str(report))
    return report
