"""done.time_limit: an episode cut by the limit the env declares is truncated, not terminated.

RLlib and Stable-Baselines3 bootstrap the value of a truncated last state and not of a
terminated one, so an env that reports its time limit as termination teaches a wrong
value, and nothing crashes. Where an env declares its limit (``max_steps``,
``max_episode_steps``, ``max_cycles``, ``spec.max_episode_steps``), the suite judges an
episode that ended with a termination by what the limit does
(:class:`TimeLimitProbe`): where the limit is an attribute it can set, it plays the
same seed and actions on two fresh instances, one with the limit raised; if the raised
one plays on where the other terminated (an agent's flag, or ``__all__``), the
termination was the limit, wherever it fell (a turn-based port that counts rounds, a
per-agent flag). If both end alike and a third instance, its limit lowered, ends sooner
(the env reads the attribute), the game ended by itself, even at the limit (every agent
died on the last step). Where the limit cannot be set, the env does not read it, or the
two differ before the end, an episode that ends exactly at the limit with
``terminateds["__all__"]`` and without ``truncateds["__all__"]`` is one.

Example:
    >>> class Env:
    ...     max_steps = 50
    >>> declared_limit(Env())
    ('max_steps', 50)
    >>> ended_by_termination_at_limit(Env(), 50, {"__all__": True}, {"__all__": False})
    'max_steps'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.conformance.host import ProbeHost, close_quietly, fresh_env
from marlhub.conformance.report import Reproducer
from marlhub.conformance.trajectories import Snapshot, first_difference, play_actions
from marlhub.contract.rules import DONE_TIME_LIMIT
from marlhub.core import ALL
from marlhub.episode.status import flag

__all__ = ["TimeLimitProbe", "declared_limit", "ended_by_termination_at_limit",
           "time_limit_message"]

#: Attributes that declare an episode's length in steps, first match wins.
LIMIT_ATTRIBUTES = ("max_steps", "max_episode_steps", "max_cycles")


def declared_limit(env: Any) -> Optional[tuple[str, int]]:
    """``(where it is declared, the limit)`` of the env's time limit, or None.

    An attribute, Gymnasium's ``_max_episode_steps`` (its ``TimeLimit``), a key of the
    env's ``config`` dict, or its spec.
    """
    attribute = settable_limit(env)
    if attribute is not None:
        return attribute
    config = _read_any(env, "config")
    if isinstance(config, Mapping):
        for name in LIMIT_ATTRIBUTES:
            limit: Any = config.get(name)
            if _is_limit(limit):
                return f"config[{name!r}]", int(limit)
    value = _read(_read_any(env, "spec"), "max_episode_steps")
    return None if value is None else ("spec.max_episode_steps", value)


def ended_by_termination_at_limit(env: Any, steps: int, terminateds: Mapping[Any, Any],
                                  truncateds: Mapping[Any, Any]) -> Optional[str]:
    """Where the limit is declared, if an episode of ``steps`` steps that ended with these
    flags ended at it by termination alone; else None."""
    limit = declared_limit(env)
    if limit is None or steps != limit[1]:
        return None
    if flag(terminateds, ALL) and not flag(truncateds, ALL):
        return limit[0]
    return None


def _read_any(env: Any, name: str) -> Any:
    try:
        return getattr(env, name, None)
    except Exception:  # a property that raises declares nothing
        return None


def _read(env: Any, name: str) -> Optional[int]:
    value = _read_any(env, name)
    return int(value) if _is_limit(value) else None


def _is_limit(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and bool(value > 0)


def time_limit_message(declared: str, steps: int) -> str:
    """The finding's message for an episode of ``steps`` steps cut at the limit ``declared``."""
    return (f"the episode ended at step {steps}, the limit the env declares ({declared} = "
            f"{steps}), with terminateds['__all__'] True and truncateds['__all__'] False: a time "
            "limit is a truncation. Learners bootstrap the value of a truncated state and not "
            "of a terminated one (RLlib, Stable-Baselines3), so they learn a wrong value. "
            "Report the limit in truncateds (and termination only where the game itself ends).")


def _terminated(terminateds: Mapping[Any, Any]) -> list[Any]:
    """The keys (agents, ``__all__``) a step's terminateds set."""
    try:
        return [key for key in terminateds if flag(terminateds, key)]
    except Exception:  # malformed flags: done.* rules report them
        return []


class TimeLimitProbe:
    """done.time_limit for one check: :meth:`note` each episode that ended, then :meth:`judge`.

    The episodes replayed: the first that ended exactly at the limit by termination, and
    for each way of ending (``__all__`` terminated, truncated, or both) the longest that
    ended with an agent terminated.
    """

    def __init__(self, host: ProbeHost) -> None:
        self.host = host
        self.at_limit: Optional[tuple[int, Optional[int], list[dict[Any, Any]], str]] = None
        self.longest: dict[tuple[bool, bool], tuple[int, Optional[int], list[dict[Any, Any]]]] = {}

    def note(self, episode: int, seed: Optional[int], actions: list[dict[Any, Any]],
             terminateds: Mapping[Any, Any], truncateds: Mapping[Any, Any]) -> None:
        """Keep an episode that ended with these flags, if it is one to judge."""
        ended = _terminated(terminateds)
        if not ended:
            return
        if self.at_limit is None:
            declared = ended_by_termination_at_limit(self.host.env, len(actions), terminateds,
                                                     truncateds)
            if declared:
                self.at_limit = (episode, seed, list(actions), declared)
        how = (ALL in ended, ALL in _terminated(truncateds))
        kept = self.longest.get(how)
        if kept is None or len(actions) > len(kept[2]):
            self.longest[how] = (episode, seed, list(actions))

    def judge(self) -> None:
        """Replay the kept episodes with the limit raised; report the first cut by it."""
        checked = set()
        for kept in (self.at_limit, *self.longest.values()):
            if kept is None or kept[0] in checked:
                continue
            episode, seed, actions = kept[0], kept[1], kept[2]
            checked.add(episode)
            verdict = self._raised_plays_on(seed, actions)
            message = verdict[1] if verdict is not None and verdict[0] else None
            if verdict is None and kept is self.at_limit:  # the limit cannot be tried: its step
                message = time_limit_message(kept[3], len(actions))
            if message is not None:
                self.host.add(DONE_TIME_LIMIT, message, episode=episode, step=len(actions),
                              reproducer=Reproducer(seed, actions))
                return

    def _raised_plays_on(self, seed: Optional[int], actions: list[dict[Any, Any]]
                         ) -> Optional[tuple[bool, str]]:
        """``(True, message)``: with the limit raised the episode plays on; ``(False, "")``:
        it ends alike; None: the limit cannot be raised, or the two differ before the end."""
        declared = settable_limit(self.host.env)
        if declared is None:
            return None
        name, limit = declared
        raised = limit * 2 + 2
        control = self._replay(seed, actions, name, None)
        longer = self._replay(seed, actions, name, raised)
        if control is None or longer is None:
            return None
        difference = first_difference(control, longer)
        if difference is None:
            # Alike: a game that ended by itself, if the env reads the attribute at all (a
            # lower limit ends it sooner); one that ignores it declares nothing to judge by.
            shorter = self._replay(seed, actions, name, max(1, min(limit, len(actions)) // 2))
            honoured = shorter is None or first_difference(control, shorter) is not None
            return (False, "") if honoured else None
        if difference[0] < len(actions):
            return None  # the limit shows before the end (an observed time left): not judged
        ended = _terminated(control[-1][2])
        still = [key for key in ended if key in _terminated(longer[-1][2])]
        if still == ended:
            return False, ""
        gone = [key for key in ended if key not in still]
        return True, (
            f"the episode ended at step {len(actions)} with {gone} terminated, and with {name} "
            f"raised from {limit} to {raised} the same seed and actions play on there: the "
            "termination is the env's time limit, which is a truncation. Learners bootstrap the "
            "value of a truncated state and not of a terminated one (RLlib, Stable-Baselines3), "
            "so they learn a wrong value. Report the limit in truncateds (each agent's flag and "
            "__all__), and termination only where the game itself ends.")

    def _replay(self, seed: Optional[int], actions: list[dict[Any, Any]], name: str,
                limit: Optional[int]) -> Optional[list[Snapshot]]:
        """The snapshots of the episode on a fresh instance whose limit ``name`` is ``limit``
        (None: as built); None where it cannot be built or set, or the replay raised."""
        env = fresh_env(self.host)
        if env is None:
            return None
        into: list[Snapshot] = []
        try:
            if limit is not None:
                setattr(env, name, limit)
            play_actions(env, seed, actions, self.host.reset_kwargs, into)
            return into
        except Exception:  # a limit that is not an attribute to set, or an episode that ended
            return None
        finally:
            close_quietly(env)


def settable_limit(env: Any) -> Optional[tuple[str, int]]:
    """``(attribute, limit)`` where the env declares its limit as an attribute (not its
    config or spec), which a probe may raise on a fresh instance; else None."""
    for name in (*LIMIT_ATTRIBUTES, "_max_episode_steps"):
        value = _read(env, name)
        if value is not None:
            return name, value
    return None
