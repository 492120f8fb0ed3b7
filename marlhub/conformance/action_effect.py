"""action.effective: an agent's falsy action counts, in the step it is sent.

``if action:`` (or ``if action_dict.get(agent):``) takes action 0 for "no action", and
an env that then keeps the agent's last command plays on while the choice of 0 does not
count. What the env plays then is the last action that *took effect*, the last one sent
that is not falsy, which is not the previous one sent once a 0 has been dropped.

For every agent whose action space holds a falsy action (0 of a Discrete space, the
zero array of a one-element Box or of a MultiDiscrete, which ``if np.any(action):``
drops) and at least two other values, the
probe replays episode 0 from its seed with that agent's action at one of its turns
changed (the recorded actions after it) and compares what follows, over two of the
agent's turns and two steps more (a round played turn by turn shows when complete):

* 0 against the last action that took effect: alike wherever it is tried, or the agent
  is cleared at the first turn where they differ;
* other values against that action (up to eight): each plays out otherwise. One that
  plays as it makes a class of equal actions with it (moves into two walls), and 0 may
  be a third; where the first two tried do, the agent's choice shows nothing there, and
  its later turns are not tried;
* 0 against one or two of those values, each sent at the agent's turn before instead:
  alike again.
  A hold and a pull into a wall, or 0 and a throttle inside a dead zone, play alike;
  once another pull was sent the turn before, they do not.

Two turns where all three hold, and none among the first four tried where 0 plays
otherwise, make a finding for that agent. An env whose actions change nothing is left
alone (some envs ignore some agents by design), as is an action whose effect shows only
after the steps compared, and so is a space of two values (a switch that stays on once
pressed plays as a dropped 0 does). The finding is a warning: action 0 may mean "carry
on" by design.

Example:
    >>> import marlhub
    >>> from marlhub.conformance.driver import Driver
    >>> from marlhub.conformance.options import CheckOptions
    >>> driver = Driver(marlhub.make("rock_paper_scissors"), "rps", CheckOptions())
    >>> report = driver.run()
    >>> [f.rule for f in report.findings]
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.conformance.calls import EnvTimeout
from marlhub.conformance.host import ProbeHost
from marlhub.conformance.trajectories import (
    Recording,
    Snapshot,
    first_difference,
    play_actions,
    safe_mask,
)
from marlhub.contract import rules
from marlhub.contract.findings import Reproducer

__all__ = ["ActionEffectProbe"]

#: How far into episode 0 the probe looks, how many of an agent's turns it judges (of
#: twice as many at most: 0 may be masked), how many other values it tries at each, and
#: how many steps its replays may take in all (agents are judged in turn until they are
#: spent; a dropped 0 costs about a hundred steps an agent, a kept one about ten).
MAX_PREFIX = 16
MAX_POSITIONS = 4
MAX_OTHERS = 8
MAX_STEPS = 1000
#: How many steps after the change are compared: two of the agent's turns and two steps
#: more, within these bounds.
MIN_HORIZON, MAX_HORIZON = 3, 8

#: One turn of an agent: ``(step, the last action that took effect, the step it was sent,
#: the agent's turn before, how many steps to compare)``.
Turn = tuple[int, Any, int, int, int]
#: A turn where 0 was dropped: ``(step, the last action, the step it was sent, the turn
#: before, the other action 0 played as once sent at that turn)``.
Dropped = tuple[int, Any, int, int, Any]

#: What one turn says: 0 played otherwise (the agent is cleared), 0 played as the last
#: action that took effect and as another sent at the turn before (dropped), 0 played as
#: the last action and no more was asked or shown (alike), the first two other values
#: tried played so too (inert: the agent's choice shows nothing here, and its later turns
#: are not tried), or nothing.
CLEARED, DROPPED, ALIKE, INERT, SILENT = "cleared", "dropped", "alike", "inert", "silent"


class ActionEffectProbe:
    """The action-effect probe of one :class:`~marlhub.conformance.host.ProbeHost` (the
    :class:`~marlhub.conformance.driver.Driver` that runs it)."""

    def __init__(self, driver: ProbeHost) -> None:
        self.d = driver
        self.steps = 0
        self._starts: dict[int, Optional[tuple[Any, Any]]] = {}

    def run(self, ref: Recording) -> None:
        """Judge every agent whose action can be falsy; warn where its 0 does not count."""
        for agent, turns in _turns(ref, self.d.spaces.action_space):
            dropped, tried = self._judge(ref, agent, turns)
            if len(dropped) >= 2:
                self._report(ref, agent, dropped, tried)
            if self.steps >= MAX_STEPS:
                return

    def _judge(self, ref: Recording, agent: Any,
               turns: list[Turn]) -> tuple[list[Dropped], int]:
        """The turns of ``agent`` where its 0 was dropped (none once a turn clears it), and
        how many turns its 0 played as the last action that took effect."""
        dropped: list[Dropped] = []
        tried = 0
        for turn in turns[:2 * MAX_POSITIONS]:
            if self.steps >= MAX_STEPS or tried == MAX_POSITIONS:
                break
            verdict, other = self._turn(ref, agent, turn, len(dropped) < 2)
            if verdict == CLEARED:
                return [], 0
            tried += verdict in (DROPPED, ALIKE, INERT)
            if verdict == DROPPED:
                dropped.append((*turn[:4], other))
            if verdict == INERT:
                break
        return dropped, tried

    def _turn(self, ref: Recording, agent: Any, turn: Turn, full: bool) -> tuple[str, Any]:
        """The verdict of one turn of ``agent``, and the other value that confirmed a drop;
        ``full=False`` only looks for a clearing."""
        k, last, _, before, horizon = turn
        space = self.d.spaces.action_space(agent)
        legal = self._legal(ref, k, agent, space)
        zero = _falsy(space)
        if legal is None or not _may_send(space, legal, zero) or not _may_send(space, legal, last):
            return SILENT, None
        as_zero = self._play(ref, agent, {k: zero}, k, horizon)
        as_last = self._play(ref, agent, {k: last}, k, horizon)
        if as_zero is None or as_last is None:
            return SILENT, None
        if first_difference(as_zero, as_last):
            return CLEARED, None
        if not full:
            return ALIKE, None
        others: list[Any] = []  # the other values tried, each played out otherwise
        alike = 0  # and those that played as the last action
        for value in _unique([*legal, ref.actions[k][agent]]):
            if len(others) == MAX_OTHERS or (alike and others) or alike == 2:
                break
            if _falsy_value(value) or _same(value, last) or not _may_send(space, legal, value):
                continue
            played = self._play(ref, agent, {k: value}, k, horizon)
            if played is not None and first_difference(played, as_last) is None:
                alike += 1
            elif played is not None:
                others.append(value)
        if alike:
            # A class of equal actions (moves into two walls; 0 may be a third), or, where
            # nothing tried played otherwise, a choice that shows nothing here.
            return (ALIKE if others else INERT), None
        if not others:
            return ALIKE, None
        # Sent at the turn before, another value is what 0 plays as (two such values, where
        # there are two). At the turn the last one was sent, a command kept since may have
        # reached a wall as the last one did.
        legal_before = self._legal(ref, before, agent, space)
        confirmed = []
        for other in others[:2]:
            if legal_before is None or not _may_send(space, legal_before, other):
                continue
            then_zero = self._play(ref, agent, {before: other, k: zero}, k, horizon)
            then_other = self._play(ref, agent, {before: other, k: other}, k, horizon)
            if then_zero is None or then_other is None:
                continue
            if first_difference(then_zero, then_other):
                return CLEARED, None
            confirmed.append(other)
        return (DROPPED, confirmed[0]) if confirmed else (ALIKE, None)

    def _legal(self, ref: Recording, k: int, agent: Any, space: gym.Space) -> Optional[list]:
        """The values of ``agent``'s action the probe may try at step ``k``, or None (the
        episode cannot be played to ``k``, or a mask the probe does not read)."""
        if k not in self._starts:
            self.steps += k + 1
            try:
                self._starts[k] = play_actions(self.d.env, ref.seed, ref.actions[:k],
                                               self.d.reset_kwargs, [])
            except EnvTimeout:
                raise
            except Exception:
                self._starts[k] = None  # the episodes report what the env raises
        start = self._starts[k]
        if start is None:
            return None
        obs, infos = start
        info = infos.get(agent) if isinstance(infos, Mapping) else None
        mask = safe_mask(obs.get(agent) if isinstance(obs, Mapping) else None, info)
        return _values(space, mask)

    def _play(self, ref: Recording, agent: Any, changes: dict[int, Any], k: int,
              horizon: int) -> Optional[list[Snapshot]]:
        """What the ``horizon`` steps from ``k`` on give with ``agent``'s actions changed at
        the steps of ``changes``, or None when the episode does not play so."""
        actions = [{**a, agent: changes[i]} if i in changes else a
                   for i, a in enumerate(ref.actions[:k + horizon])]
        into: list[Snapshot] = []
        self.steps += len(actions) + 1
        try:
            play_actions(self.d.env, ref.seed, actions, self.d.reset_kwargs, into)
        except EnvTimeout:
            raise
        except Exception:
            return None  # the later recorded actions do not fit this episode: no verdict
        return into[k + 1:]

    def _report(self, ref: Recording, agent: Any, dropped: list[Dropped], tried: int) -> None:
        # Shown: a turn after a dropped 0 if there is one (the previous action sent was 0).
        k, last, sent_at, before, other = max(dropped, key=lambda d: d[3] - d[2])
        falsy = _falsy(self.d.spaces.action_space(agent))
        zero = _show(falsy)
        self.d.add(rules.ACTION_EFFECTIVE,
                   f"{agent!r}'s action {zero} played out exactly as the last action that took "
                   f"effect, wherever it was tried in episode 0 ({tried} turns): at step "
                   f"{k} as {_show(last)}, sent at step {sent_at}, and as {_show(other)} once "
                   f"{_show(other)} was sent at step {before} instead; other actions played out "
                   f"otherwise. The env drops {zero} and keeps the last command: a test such as "
                   "`if action:` or `if action_dict.get(agent):` takes 0 for no action; test "
                   "`if action is not None:` or `agent in action_dict`.", episode=ref.episode,
                   step=k, agent=agent,
                   reproducer=Reproducer(ref.seed, [*ref.actions[:k], {**ref.actions[k],
                                                                        agent: falsy}]))


def _turns(ref: Recording, space_of: Any) -> list[tuple[Any, list[Turn]]]:
    """Each agent whose action can be falsy, with its :data:`Turn` s in the first
    :data:`MAX_PREFIX` steps that follow an action of it that is not falsy, in the order
    agents first act."""
    last: dict[Any, tuple[Any, int]] = {}
    previous: dict[Any, int] = {}
    turns: dict[Any, list[Turn]] = {}
    for k, action_dict in enumerate(ref.actions[:MAX_PREFIX]):
        for agent, action in action_dict.items():
            found = turns.setdefault(agent, [])
            if agent in last:
                horizon = min(MAX_HORIZON, max(MIN_HORIZON, 2 * (k - previous[agent]) + 2))
                found.append((k, *last[agent], previous[agent], horizon))
            previous[agent] = k
            if not _falsy_value(action):
                last[agent] = (action, k)
    judged = []
    for agent, found in turns.items():
        try:
            can = found and _falsy(space_of(agent)) is not None
        except Exception:
            can = False  # space.defined reports it
        if can:
            judged.append((agent, found))
    return judged


def _falsy(space: gym.Space) -> Any:
    """The falsy action of ``space`` with two other values at least, or None."""
    if isinstance(space, gym.spaces.Discrete):
        start, n = int(space.start), int(space.n)
        return 0 if n >= 3 and start <= 0 < start + n else None
    if isinstance(space, gym.spaces.MultiDiscrete):  # `if np.any(action):` drops all zeros
        zero = np.zeros(space.shape, space.dtype)
        return zero if int(space.nvec.min()) >= 3 and space.contains(zero) else None
    if isinstance(space, gym.spaces.Box) and int(np.prod(space.shape)) == 1:
        zero = np.zeros(space.shape, space.dtype)
        return zero if space.contains(zero) and _box_values(space) else None
    return None


def _values(space: gym.Space, mask: Optional[np.ndarray]) -> Optional[list]:
    """The values of ``space`` to try, or None when a mask holds for a space not Discrete."""
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return [start + i for i in range(int(space.n)) if mask is None or mask[i]]
    if mask is not None:
        return None
    if isinstance(space, gym.spaces.MultiDiscrete):
        first = int(getattr(space, "start", np.zeros(1)).reshape(-1)[0])
        return [np.full(space.shape, first + i, space.dtype)
                for i in range(int(space.nvec.reshape(-1)[0]))]
    if isinstance(space, gym.spaces.Box):
        return [np.zeros(space.shape, space.dtype), *_box_values(space)]
    return None


def _box_values(space: gym.spaces.Box) -> list[np.ndarray]:
    """The ends and middles of a one-element Box either side of 0 (1 for an unbounded end)."""
    low, high = float(space.low.reshape(-1)[0]), float(space.high.reshape(-1)[0])
    ends = [high if np.isfinite(high) else 1.0, low if np.isfinite(low) else -1.0]
    values = [np.full(space.shape, v, space.dtype) for v in (*ends, ends[0] / 2, ends[1] / 2)]
    return [v for v in _unique(values) if not _falsy_value(v) and space.contains(v)]


def _may_send(space: gym.Space, legal: list, value: Any) -> bool:
    """Whether ``value`` is legal: one of ``legal`` in a Discrete space, in the space else."""
    if isinstance(space, gym.spaces.Discrete):
        return _within(value, legal)
    try:
        return bool(space.contains(np.asarray(value, space.dtype).reshape(space.shape)))
    except Exception:
        return False


def _falsy_value(action: Any) -> bool:
    try:
        return not bool(action)
    except Exception:  # an array of several values: `if action:` raises, `if np.any(action):`
        try:  # drops all zeros
            return not np.any(action)
        except Exception:
            return False


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except Exception:
        return a == b


def _within(value: Any, values: list) -> bool:
    return any(_same(value, v) for v in values)


def _unique(values: list) -> list:
    kept: list = []
    for value in values:
        if not _within(value, kept):
            kept.append(value)
    return kept


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=3, separator=", ")
    return repr(value)
