"""What a probe reads of the check that runs it: the :class:`ProbeHost` protocol.

The probes of :mod:`~marlhub.conformance.probes`, :mod:`~marlhub.conformance.lifecycle`,
:mod:`~marlhub.conformance.action_forms` and :mod:`~marlhub.conformance.action_effect`
are handed the check that runs them and use only what :class:`ProbeHost` names: the
env under test, the options, the keywords ``reset`` takes, the space cache, the report
so far, how to build a fresh instance, and ``add`` to report a finding.
:class:`~marlhub.conformance.driver.Driver` is that host; it imports the probes, and
the probes import this module, never the driver.

Example:
    >>> from marlhub.conformance.driver import Driver
    >>> from marlhub.envs import RockPaperScissors
    >>> driver = Driver(RockPaperScissors(), "rps", CheckOptions(), make_fresh=RockPaperScissors)
    >>> isinstance(driver, ProbeHost)
    True
    >>> fresh_env(driver).possible_agents
    ['player1', 'player2']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Protocol, runtime_checkable

from marlhub.conformance.options import CheckOptions
from marlhub.conformance.report import Report
from marlhub.contract.checks import SpaceCache
from marlhub.contract.findings import Reproducer
from marlhub.contract.rules import Severity

__all__ = ["ProbeHost", "close_quietly", "fresh_env"]


@runtime_checkable
class ProbeHost(Protocol):
    """The check a probe runs in (see the module).

    Attributes:
        env: the env under test; probes only reset and step it.
        options: how the target is checked (episodes, seed, step budget).
        reset_kwargs: the keywords besides ``seed`` that ``reset`` is called with.
        spaces: the env's per-agent spaces, looked up once per agent.
        report: the report so far (its ``steps`` size the memory probe).
        make_fresh: builds a new, never-reset instance; None when the target is
            a single instance.
    """

    env: Any
    options: CheckOptions
    reset_kwargs: dict[str, Any]
    spaces: SpaceCache
    report: Report
    make_fresh: Optional[Callable[[], Any]]

    def add(
        self,
        rule: str,
        message: str,
        *,
        episode: Optional[int] = None,
        step: Optional[int] = None,
        agent: Any = None,
        reproducer: Optional[Reproducer] = None,
        severity: Optional[Severity] = None,
    ) -> None:
        """Record a finding under ``rule``."""


def fresh_env(host: ProbeHost) -> Any:
    """A newly built instance of the host's target, or None (a given instance, or building
    raised: the main check reports what building the env does)."""
    if host.make_fresh is None:
        return None
    try:
        return host.make_fresh()
    except Exception:
        return None


def close_quietly(env: Any) -> None:
    """Close an env a probe made, if it can be closed; closing is best effort there (the
    lifecycle probes judge ``close()`` itself)."""
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception:
            pass
