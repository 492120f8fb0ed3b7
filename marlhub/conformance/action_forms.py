"""turn.actions_accepted, in every form: Discrete actions as numpy.int64 and as 0-d arrays.

``Discrete.contains`` takes an ``int``, a ``numpy.int64`` and a 0-d integer array, and
consumers send all three (RLlib's and Tianshou's policies give numpy integers; TorchRL,
and anything that indexes a batch of actions, gives 0-d arrays). Episode 0 is played
again with its Discrete actions in numpy's forms; it must play out alike.

An env that takes ``numpy.int64`` but refuses a 0-d array gets a warning, not an error:
Gymnasium's own FrozenLake and Taxi refuse it (marlhub's adapters convert for them),
so an author who follows Gymnasium's examples does the same.

Example:
    >>> import marlhub
    >>> from marlhub.conformance.driver import Driver
    >>> from marlhub.conformance.options import CheckOptions
    >>> driver = Driver(marlhub.make("tic_tac_toe"), "tic_tac_toe", CheckOptions())
    >>> report = driver.run()   # plays episode 0 again in numpy's forms, among the rest
    >>> report.findings
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.conformance.calls import short
from marlhub.conformance.host import ProbeHost
from marlhub.conformance.trajectories import (
    Recording,
    Snapshot,
    copy_actions,
    first_difference,
    raised_in_play,
)
from marlhub.contract import rules
from marlhub.contract.findings import Reproducer

__all__ = ["ActionFormsProbe"]

#: Who sends a 0-d array for a Discrete action.
ZERO_DIM_SENDERS = ("TorchRL (a batch's action indexed to one env), SB3's and Gymnasium's "
                    "vector envs (np.array actions split per env), and anything that indexes a "
                    "batch of actions")


class ActionFormsProbe:
    """The numpy-forms probe of one :class:`~marlhub.conformance.host.ProbeHost` (the
    :class:`~marlhub.conformance.driver.Driver` that runs it)."""

    def __init__(self, driver: ProbeHost) -> None:
        self.d = driver

    def run(self, ref: Recording) -> None:
        """Replay ``ref`` with its int actions of Discrete spaces as numpy.int64 and 0-d arrays."""
        converted = [self._numpy_forms(i, a) for i, a in enumerate(ref.actions)]
        if all(_same_types(a, b) for a, b in zip(ref.actions, converted)):
            return  # no Discrete action: the arrays sent are already the numpy form
        into: list[Snapshot] = []
        error = self._play(ref, into, converted)
        difference = None if error else first_difference(ref.snapshots, into)
        if not error and not difference:
            return
        plain: list[Snapshot] = []
        if self._play(ref, plain, None) or first_difference(ref.snapshots, plain):
            return  # the env does not replay at all: not a matter of forms
        k = len(into) if error else (difference[0] if difference else 0)
        if error and k == 0:
            return  # reset raised: actions play no part in that
        where: dict[str, Any] = {"episode": ref.episode,
                                 "reproducer": Reproducer(ref.seed, converted[:k])}
        zero_dim_only = self._only_zero_dim_arrays_fail(ref)
        severity: Optional[rules.Severity] = "warning" if zero_dim_only else None
        also = (f" Only the 0-d arrays are refused (numpy.int64 plays alike), which Gymnasium's "
                f"FrozenLake and Taxi refuse too: a warning, but {ZERO_DIM_SENDERS} send them."
                if zero_dim_only else "")
        if error:
            self.d.add(rules.TURN_ACTIONS_ACCEPTED,
                       f"step() raised {error} on {_forms(ref.actions[k - 1], converted[k - 1])}, "
                       "where the same actions as int were accepted; every form the space's "
                       f"contains() accepts is a valid action: convert with int(action) first.{also}",
                       step=k, severity=severity, **where)
        elif difference:
            k, what, reason = difference
            self.d.add(rules.TURN_ACTIONS_ACCEPTED,
                       f"the same seed ({ref.seed}) and the same actions given as numpy.int64 and "
                       f"0-d arrays instead of int gave different {what} at step {k} ({reason}; "
                       f"int vs numpy); treat every integer form alike, e.g. a = int(a).{also}",
                       step=k, severity=severity, **where)

    def _only_zero_dim_arrays_fail(self, ref: Recording) -> bool:
        """Whether ``ref`` plays alike with every Discrete action as numpy.int64."""
        as_int64 = [self._numpy_forms(i, a, arrays=False) for i, a in enumerate(ref.actions)]
        into: list[Snapshot] = []
        return not (self._play(ref, into, as_int64) or first_difference(ref.snapshots, into))

    def _numpy_forms(self, index: int, actions: Mapping[Any, Any], *,
                     arrays: bool = True) -> dict[Any, Any]:
        out = copy_actions(actions)
        for position, (agent, action) in enumerate(actions.items()):
            if type(action) is int and isinstance(self.d.spaces.action_space(agent),
                                                  gym.spaces.Discrete):
                out[agent] = (np.array(action, np.int64) if arrays and (index + position) % 2
                              else np.int64(action))
        return out

    def _play(self, ref: Recording, into: list[Snapshot],
              actions: Optional[list[dict[Any, Any]]]) -> Optional[str]:
        return raised_in_play(self.d.env, ref.seed, ref.actions if actions is None else actions,
                              self.d.reset_kwargs, into)


def _same_types(a: Mapping[Any, Any], b: Mapping[Any, Any]) -> bool:
    return all(type(a[k]) is type(b[k]) for k in a)


def _forms(plain: Mapping[Any, Any], sent: Mapping[Any, Any]) -> str:
    parts = []
    for agent, value in sent.items():
        if isinstance(value, np.ndarray) and type(plain.get(agent)) is int:
            parts.append(f"{agent!r}: np.array({plain[agent]}) (a 0-d int64 array)")
        elif isinstance(value, np.generic) and type(plain.get(agent)) is int:
            parts.append(f"{agent!r}: np.int64({plain[agent]})")
        else:
            parts.append(f"{agent!r}: {short(value, 40)}")
    return "the action dict {" + ", ".join(parts) + "}"
