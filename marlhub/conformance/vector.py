"""A vector env is its copies: ``check_vector`` compares it, copy by copy, with separate envs.

For each vectorization mode (``sync``, ``async``) and autoreset mode
(``next_step``, ``same_step``, ``disabled``), :func:`check_vector` builds a
vector env of ``num_envs`` copies and ``num_envs`` separate envs from the same
env_fns, resets the vector env with ``seed`` and copy ``i`` with ``seed + i``,
then sends both the same seeded random legal actions until every copy has
finished ``episodes`` episodes. What each copy of the vector env returns must
equal what its separate env returns under the autoreset mode's rule
(:mod:`marlhub.vector.copies`), which :func:`compare_copies`
(:mod:`~marlhub.conformance.vector_copies`) writes out once more as the oracle.

The first difference of each mode pair is a :data:`~marlhub.contract.rules.VECTOR_EQUIV` finding;
anything raised is an ``env.raised`` finding. ``marlhub check ID --vector N``
runs it from the shell.

Example:
    >>> report = check_vector("rock_paper_scissors", 2, episodes=1)
    >>> report.ok, report.target
    (True, 'rock_paper_scissors --vector 2')
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from marlhub.conformance.batched_vector import check_batched
from marlhub.conformance.calls import EnvTimeout, time_limit
from marlhub.conformance.known_faults import mark_known_faults
from marlhub.conformance.report import Finding, Report
from marlhub.conformance.targets import is_registry_id, resolve_target
from marlhub.conformance.vector_copies import compare_copies
from marlhub.contract.rules import ENV_RAISED, ENV_TIMEOUT
from marlhub.errors import TargetError
from marlhub.registry import default_registry
from marlhub.registry.vector import VECTORIZATION_MODES, batched_maker, env_fns_for
from marlhub.vector import (
    AUTORESET_MODES,
    AsyncVectorMultiAgentEnv,
    SyncVectorMultiAgentEnv,
)

__all__ = [
    "check_vector",
    "compare_copies",
    "check_vector_targets",
    "vector_env_fns",
]


def vector_env_fns(target: Any, num_envs: int,
                   config: Optional[Mapping[str, Any]] = None) -> list[Callable[[], Any]]:
    """Return ``num_envs`` env_fns for ``target``: an id, class, factory or ``module:attr``.

    ``config`` goes to a registry id's env, and to a class or factory that takes one.

    Raises:
        TargetError: the target is one env instance (copies cannot be made of it).
        UnknownEnvError: an id nobody registered.
    """
    if isinstance(target, str) and is_registry_id(target):
        return list(env_fns_for(target, num_envs, config))
    resolved = resolve_target(target, config=config)
    if not resolved.fresh:
        raise TargetError(resolved.name, "a vector env needs copies, and this is one env instance",
                          "Give a registry id, an env class or a factory function instead.")
    return [resolved.build] * num_envs


def check_vector(target: Any, num_envs: int = 3, *, seed: int = 0, episodes: int = 2,
                 max_steps: int = 1000, vectorization_modes: Sequence[str] = VECTORIZATION_MODES,
                 autoreset_modes: Sequence[str] = AUTORESET_MODES, num_workers: int = 2,
                 timeout: Optional[float] = 120.0, name: Optional[str] = None,
                 config: Optional[Mapping[str, Any]] = None) -> Report:
    """Compare a vector env of ``target`` with ``num_envs`` separate envs, in every mode.

    Args:
        target: a registry id, an env class or factory, or ``"module:attr"``.
        num_envs: how many copies.
        seed: the vector env's reset seed (copy ``i`` gets ``seed + i``).
        episodes: play until every copy finished this many episodes...
        max_steps: ... or this many vector steps, per mode pair.
        vectorization_modes: which of ``"sync"``, ``"async"``, ``"batched"`` to check
            (``"batched"``: for ids with a natively batched simulator, what
            :mod:`marlhub.conformance.batched_vector` proves).
        autoreset_modes: which autoreset modes to check.
        num_workers: worker processes of the async env.
        timeout: seconds the async env waits for its workers in each call.
        name: how the target is named in the report.
        config: the env's config (see :func:`vector_env_fns`).

    Returns:
        A report named ``"<target> --vector N"``: ``episodes`` counts the episodes
        finished over all copies and modes, ``steps`` the vector steps.
    """
    start = time.perf_counter()
    label = f"{name or (target if isinstance(target, str) else repr(target))} --vector {num_envs}"
    env_fns = vector_env_fns(target, num_envs, config)
    report = Report(label)
    context = _start_method(target)
    for vmode in vectorization_modes:
        if vmode == "batched":
            continue
        for amode in autoreset_modes:
            def make_vector(vmode: str = vmode, amode: str = amode) -> Any:
                if vmode == "sync":
                    return SyncVectorMultiAgentEnv(env_fns, autoreset_mode=amode)
                return AsyncVectorMultiAgentEnv(env_fns, autoreset_mode=amode,
                                                num_workers=min(num_workers, num_envs),
                                                timeout=timeout, context=context)

            found, steps, finished = compare_copies(make_vector, env_fns, f"{vmode}/{amode}",
                                                    amode, seed, episodes, max_steps)
            report.findings += found
            report.steps += steps
            report.episodes += finished
            if num_envs < 2:
                continue
            batch = num_envs // 2

            def make_cycle(vmode: str = vmode, amode: str = amode, batch: int = batch) -> Any:
                if vmode == "sync":
                    return SyncVectorMultiAgentEnv(env_fns, autoreset_mode=amode,
                                                   batch_size=batch)
                return AsyncVectorMultiAgentEnv(env_fns, autoreset_mode=amode,
                                                num_workers=min(num_workers, num_envs),
                                                timeout=timeout, batch_size=batch,
                                                context=context)

            found, steps, finished = compare_copies(
                make_cycle, env_fns, f"{vmode}/{amode} recv/send batch_size={batch}", amode,
                seed, episodes, max_steps, recv_send=True)
            report.findings += found
            report.steps += steps
            report.episodes += finished
    if "batched" in vectorization_modes and isinstance(target, str) \
            and is_registry_id(target) and batched_maker(target) is not None:
        found, steps, finished = check_batched(target, num_envs, seed=seed, episodes=episodes,
                                               max_steps=max_steps,
                                               autoreset_modes=autoreset_modes, config=config)
        report.findings += found
        report.steps += steps
        report.episodes += finished
    report.seconds = time.perf_counter() - start
    if isinstance(target, str) and is_registry_id(target):
        mark_known_faults(report, target, default_registry(), config)
    return report


def _start_method(target: Any) -> Optional[str]:
    """The async workers' start method: the platform's, or the one the target's family asks
    for (``start_method``: ``"spawn"`` for the families on JAX, which is multithreaded, so a
    worker forked from a process that ran it hangs when it uses it)."""
    if not (isinstance(target, str) and is_registry_id(target)):
        return None
    prefix, slash, _ = target.partition("/")
    family = default_registry().families.get(prefix) if slash else None
    method = getattr(family, "start_method", None)
    return method if isinstance(method, str) else None


def check_vector_targets(targets: Sequence[str], num_envs: int, *, seed: int = 0,
                         episodes: int = 20, max_steps: int = 1000,
                         timeout: Optional[float] = 120.0,
                         config: Optional[Mapping[str, Any]] = None,
                         limit: Optional[float] = None) -> list[Report]:
    """Run :func:`check_vector` on each target (``marlhub check --vector N``).

    ``episodes`` counts episodes per mode pair, over all copies: each copy plays
    ``ceil(episodes / num_envs)``. A target whose vector env cannot even be built
    gets a report with the ``env.raised`` finding. ``timeout``: the async env's wait for
    its workers in each call; ``limit``: seconds one target's check may take in all (in the
    main thread on POSIX, as the main check's limit), after which it stops, closes its
    vector envs and gets the ``env.timeout`` finding.
    """
    reports = []
    for target in targets:
        label = f"{target} --vector {num_envs}"
        start = time.perf_counter()
        try:
            with time_limit(limit):
                reports.append(check_vector(target, num_envs, seed=seed, max_steps=max_steps,
                                            episodes=-(-episodes // num_envs),
                                            timeout=timeout, config=config))
        except EnvTimeout:
            reports.append(Report(label, seconds=time.perf_counter() - start, findings=[Finding(
                ENV_TIMEOUT, "error", f"the vector check of {target!r} ({num_envs} copies, "
                f"sync and async in every autoreset mode) took longer than its {limit:g}s "
                "limit and was stopped. Give it more time with --timeout S, or less work with "
                "fewer --episodes or a lower --max-steps.")]))
        except Exception as exc:  # the target loaded for the main check, but not as copies
            reports.append(Report(label, findings=[Finding(
                ENV_RAISED, "error", f"making a vector env of {num_envs} copies raised "
                f"{type(exc).__name__}: {exc}")]))
    return reports
