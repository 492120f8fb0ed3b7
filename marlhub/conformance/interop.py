"""The far side of every conversion: each target library's own checker on the converted env.

``marlhub check ID --targets ...`` converts the env to each target API and
runs that library's own checker: PettingZoo's ``api_test`` and ``seed_test``
(AEC; MOMAland's ``api_test``, PettingZoo's adapted to arrays, for an env of vector
rewards) or ``parallel_api_test``; ``pyspiel.random_sim_test``; Gymnasium's
``check_env`` on each agent's view (and the joint view of a simultaneous env);
RLlib's ``check_multiagent_environments``, then RLlib's own sampler
(``MultiAgentEnvRunner``, local) with a sample boundary after every step, whose
episodes must hold every reward the hub env paid
(:mod:`~marlhub.conformance.rllib_sampler`); TorchRL's ``check_env_specs`` on
:func:`~marlhub.adapters.torchrl.to_torchrl`. Each also takes a round trip hub -> target -> hub
and requires every agent's return and action count to be unchanged
(:mod:`~marlhub.conformance.roundtrip`).

A target is ``refused``, with the reason, only where the conversion is
impossible by structure: up front (a turn-based env to the parallel API;
continuous actions to OpenSpiel; vector rewards to OpenSpiel or Gymnasium, which
need one number), or where the converter says so with a dedicated error (an env
whose state lives outside Python, a C engine's or Box2D's world, which OpenSpiel
cannot clone: :class:`~marlhub.errors.UncopyableEnvError`);
``skipped`` when its library is not installed (the
reason names the extra); ``known-fault`` when the failure is a fault of a
native library that reproduces without marlhub (a family's ``known_faults``
keyed ``target.<api>``, or a checker's own limitation listed here); else
``pass`` or ``fail`` with what the checker said.

Example:
    >>> import marlhub
    >>> results = check_targets(lambda: marlhub.make("tic_tac_toe"), ["pettingzoo.parallel"])
    >>> results[0].status, results[0].reason.split(":")[0]
    ('refused', 'turn-based')
"""

from __future__ import annotations

import contextlib
import io
import itertools
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional

from marlhub.adapters.apis import api_named
from marlhub.backends import import_backend
from marlhub.conformance.profile import EnvProfile
from marlhub.conformance.rllib_sampler import compare_rllib_sampler
from marlhub.conformance.roundtrip import compare_round_trip
from marlhub.errors import ConfigError, MissingDependencyError, UncopyableEnvError

__all__ = ["TARGET_NAMES", "TargetResult", "check_targets", "parse_targets"]

#: Every target ``--targets all`` means, in report order.
TARGET_NAMES = ("pettingzoo.aec", "pettingzoo.parallel", "openspiel", "gymnasium",
                "gymnasium.tuple", "rllib", "torchrl")

Status = Literal["pass", "fail", "refused", "skipped", "known-fault"]
_short_names = itertools.count()
#: Env steps RLlib's own sampler takes on the converted env, one per ``sample()`` call,
#: within a time budget (a game that is slow to step, such as a bridge deal scored by a
#: double-dummy solver, has the episodes that end within it compared).
RLLIB_SAMPLER_STEPS = 300
RLLIB_SAMPLER_SECONDS = 30.0


@dataclass
class TargetResult:
    """What converting to one target API and running its checker gave."""

    target: str
    status: Status
    reason: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the result as JSON-able data."""
        return {"target": self.target, "status": self.status, "reason": self.reason,
                "seconds": round(self.seconds, 4)}

    def line(self) -> str:
        """One line of the text report."""
        why = f": {self.reason}" if self.reason else ""
        return f"  target {self.target}: {self.status}{why} ({self.seconds:.2f}s)"


def parse_targets(text: str) -> list[str]:
    """Return the target names of ``"a,b"`` or ``"all"``.

    Raises:
        ConfigError: an unknown name (the known ones are listed).

    Example:
        >>> parse_targets("openspiel, gymnasium")
        ['openspiel', 'gymnasium']
    """
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names == ["all"]:
        return list(TARGET_NAMES)
    unknown = [n for n in names if n not in TARGET_NAMES]
    if unknown or not names:
        raise ConfigError("--targets", f"unknown target(s) {unknown or [text]}",
                          accepted=[*TARGET_NAMES, "all"],
                          fix="Pass a comma-separated list of the accepted targets, or 'all'.")
    return names


def check_targets(make_env: Callable[[], Any], targets: Sequence[str], *,
                  seed: int = 0) -> list[TargetResult]:
    """Convert ``make_env()`` to each target API and run that library's own checker.

    Args:
        make_env: builds a fresh hub env (called several times).
        targets: names from :data:`TARGET_NAMES`.
        seed: seeds the checkers and the round trips.

    Returns:
        One :class:`TargetResult` per target, in the order given.
    """
    profile = EnvProfile.of(make_env, seed=seed)
    results = [_one(target, make_env, profile, seed) for target in targets]
    for result in results:
        limit = profile.checker_limitation(result.target)
        if limit and result.status == "fail":
            result.status = "known-fault"
            result.reason = f"{limit}: {result.reason}"
    return results


def _one(target: str, make_env: Callable[[], Any], profile: EnvProfile,
         seed: int) -> TargetResult:
    start = time.perf_counter()
    refusal = profile.refusal(target)
    if refusal:
        return TargetResult(target, "refused", refusal)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")  # the checkers' advice is not their verdict
            mismatch = (_CHECKERS[target](make_env, profile, seed)
                        or compare_round_trip(target, make_env, seed=seed))
    except UncopyableEnvError as exc:  # to_openspiel's refusal: no bug, the state is not Python's
        return TargetResult(target, "refused", f"state that does not copy: {exc.problem}",
                            time.perf_counter() - start)
    except MissingDependencyError as exc:
        return TargetResult(target, "skipped", f"needs pip install 'marlhub[{exc.extra}]'",
                            time.perf_counter() - start)
    except ImportError as exc:
        return TargetResult(target, "skipped", f"{exc}", time.perf_counter() - start)
    except Exception as exc:  # the checker's verdict
        text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
        return TargetResult(target, "fail", text[:400], time.perf_counter() - start)
    status: Status = "fail" if mismatch else "pass"
    return TargetResult(target, status, mismatch or "", time.perf_counter() - start)


def _backend(api: str, module: str) -> Any:
    row = api_named(api)
    return import_backend(module, package=row.backend, extra=row.extra,
                          feature=f"--targets {api}")


def _pettingzoo_aec(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from marlhub.adapters.pettingzoo import to_pettingzoo

    test = _backend("pettingzoo", "pettingzoo.test")
    if profile.vector_rewards:  # PettingZoo's api_test takes one number; MOMAland's, arrays
        mo_test = import_backend("momaland.test.api_test", package="momaland", extra="momaland",
                                 feature="--targets pettingzoo.aec of an env of vector rewards")
        mo_test.api_test(to_pettingzoo(make_env(), api="aec"), num_cycles=20)
    else:
        test.api_test(to_pettingzoo(make_env(), api="aec"), num_cycles=20,
                      verbose_progress=False)
    test.seed_test(lambda: to_pettingzoo(make_env(), api="aec"), num_cycles=20)


def _pettingzoo_parallel(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from marlhub.adapters.pettingzoo import to_pettingzoo

    test = _backend("pettingzoo", "pettingzoo.test")
    test.parallel_api_test(to_pettingzoo(make_env(), api="parallel"), num_cycles=20)


def _openspiel(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from marlhub.adapters.openspiel import to_openspiel

    pyspiel = _backend("openspiel", "pyspiel")
    game = to_openspiel(make_env, short_name=f"marlhub_check_{next(_short_names)}", seed=seed)
    pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)


def _gymnasium(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from gymnasium.utils.env_checker import check_env

    from marlhub.adapters.gymnasium import to_gymnasium

    for agent in profile.agents[:4]:
        check_env(to_gymnasium(make_env(), agent), skip_render_check=True)
    if profile.simultaneous:
        check_env(to_gymnasium(make_env(), joint=True), skip_render_check=True)


def _gymnasium_tuple(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from gymnasium.utils.env_checker import check_env

    from marlhub.adapters.gymnasium import to_gymnasium_tuple

    check_env(to_gymnasium_tuple(make_env()), skip_render_check=True)


def _rllib(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> Optional[str]:
    from marlhub.adapters.rllib import to_rllib

    checks = _backend("rllib", "ray.rllib.utils.pre_checks.env")
    checks.check_multiagent_environments(to_rllib(make_env()))
    return compare_rllib_sampler(make_env, seed=seed, steps=RLLIB_SAMPLER_STEPS,
                                 max_seconds=RLLIB_SAMPLER_SECONDS)


def _torchrl(make_env: Callable[[], Any], profile: EnvProfile, seed: int) -> None:
    from marlhub.adapters.torchrl import to_torchrl

    utils = _backend("torchrl", "torchrl.envs.utils")
    utils.check_env_specs(to_torchrl(make_env()), seed=seed)


_CHECKERS: dict[str, Callable[[Callable[[], Any], EnvProfile, int], Optional[str]]] = {
    "pettingzoo.aec": _pettingzoo_aec,
    "pettingzoo.parallel": _pettingzoo_parallel,
    "openspiel": _openspiel,
    "gymnasium": _gymnasium,
    "gymnasium.tuple": _gymnasium_tuple,
    "rllib": _rllib,
    "torchrl": _torchrl,
}
