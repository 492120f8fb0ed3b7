"""The action-dict validator: every env, adapter and view of marlhub checks actions here.

A hub ``step`` takes one action per actor (the agents of the last observation
dict that are not done). :func:`check_action_dict` checks a whole dict before
anything is applied: that it is a mapping, names no agent outside the actors
(an unknown agent and a known one whose turn it is not get different hints),
misses no actor, and that each action lies in its agent's space and, when a
mask is given, is allowed by it. The first problem raises
:class:`~marlhub.errors.ActionError`; nothing was changed.

What counts as a valid action is what the space's own ``contains`` accepts
(so ``np.int64(2)`` and ``np.array(2)`` are valid Discrete actions), minus
bools (``True`` is not an action) and minus casts ``contains`` would make
silently (a list for a Box, an array of shape ``(1,)`` for a Discrete).
Discrete actions come back as plain ``int``.

:class:`ActionChecker` is the same check with a fast path per agent for Discrete and Box
spaces, for adapters on a hot loop, and :meth:`ActionChecker.check_dict` checks a whole dict
of actions in a few passes of C code when the actors share one Discrete space and none has a
mask (many agents, as in MAgent2's battles); :func:`action_masks` finds whether any actor has
a mask, the same way. Inside :func:`~marlhub.episode.prechecked.actions_prechecked` every
check here lets its input through unchanged.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> spaces = {"a": gym.spaces.Discrete(2), "b": gym.spaces.Discrete(2)}
    >>> check_action_dict("Env", {"a": np.int64(1)}, actors=["a"], possible_agents=["a", "b"],
    ...                   space_of=spaces.__getitem__)
    {'a': 1}
    >>> check_action_dict("Env", {"b": 1}, actors=["a"], possible_agents=["a", "b"],
    ...                   space_of=spaces.__getitem__)
    Traceback (most recent call last):
    ...
    marlhub.errors.ActionError: Bad action for 'b': got 1, expected actions only for the actors ['a']. 'b' either did not receive an observation in the last step, or is done (it got its final observation with a done flag). The actors are the agents of the last observation dict that are not done: marlhub.actors(obs, terminateds, truncateds).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import repeat
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.episode.prechecked import _PRECHECKED
from marlhub.errors import ActionError
from marlhub.spaces import ACTION_MASK_KEY, raw_action_mask, why_illegal

__all__ = [
    "ActionChecker",
    "BoxCheck",
    "DiscreteCheck",
    "action_masks",
    "check_action",
    "check_action_dict",
    "check_keys",
    "fast_check",
    "spaces_hold_masks",
]

#: Integer types whose values a Discrete space takes as they are (the fast path).
_INT_TYPES = frozenset({int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                        np.uint32, np.uint64})

#: Discrete spaces up to this size keep the set of their actions for :meth:`DiscreteCheck.check_all`.
_SMALL_SPACE = 4096

#: How to find the actors, said where an agent that is not one got an action.
_ACTORS_HINT = ("The actors are the agents of the last observation dict that are not done: "
                "marlhub.actors(obs, terminateds, truncateds).")

#: ``check(action, mask) -> bool``: True means legal, False means "look closer".
Check = Callable[[Any, Any], bool]


def check_keys(
    env_name: str,
    action_dict: Any,
    *,
    actors: Sequence[AgentID],
    possible_agents: Sequence[AgentID],
    why_not_actor: Optional[Callable[[AgentID], Optional[str]]] = None,
    finished: Optional[Collection[AgentID]] = None,
) -> None:
    """Raise :class:`ActionError` unless ``action_dict`` is a mapping keyed by exactly ``actors``.

    Args:
        env_name: the env's name, for the message.
        action_dict: what ``step`` received.
        actors: the agents that must act.
        possible_agents: every agent of the env (tells unknown agents from idle ones).
        why_not_actor: optional, a better hint for a known agent that may not act now
            (``"it is a member of group 'g'"``); None keeps the default hint.
        finished: the agents whose part of the episode is over (they got their final
            observation with a done flag), so the message tells a finished agent from one
            that got no observation; None when the caller does not keep them, and the
            message names both possibilities.
    """
    if _PRECHECKED.get():
        return
    if not isinstance(action_dict, Mapping):
        raise ActionError(None, action_dict,
                          expected=f"a dict mapping each actor of {list(actors)} to its action")
    for agent, action in action_dict.items():
        if agent in actors:
            continue
        hint = why_not_actor(agent) if why_not_actor is not None else None
        if hint is not None:
            fix = f"{agent!r}: {hint}; send actions only for the agents in the last observation dict."
        elif agent not in possible_agents:
            fix = f"{agent!r} is not an agent of {env_name}; its agents are {list(possible_agents)}."
        elif finished is not None and agent in finished:
            fix = (
                f"{agent!r} is done: it got its final observation with terminateds[{agent!r}] "
                f"or truncateds[{agent!r}] True, and takes no more actions. {_ACTORS_HINT}"
            )
        elif finished is not None:
            fix = (f"{agent!r} did not receive an observation in the last step; send actions "
                   "only for the agents in the last observation dict.")
        else:
            fix = (
                f"{agent!r} either did not receive an observation in the last step, or is "
                f"done (it got its final observation with a done flag). {_ACTORS_HINT}"
            )
        raise ActionError(agent, action, expected=f"actions only for the actors {list(actors)}",
                          fix=fix)
    missing = [a for a in actors if a not in action_dict]
    if missing:
        raise ActionError(
            missing[0], dict(action_dict),
            expected=f"an action for every actor of the last observation dict {list(actors)}",
            fix=f"Add an action for {', '.join(repr(a) for a in missing)}.")


def check_action(agent: AgentID, space: gym.Space, action: Any, mask: Any = None, *,
                 fix: str = "", context: str = "") -> Any:
    """Return ``action`` (a plain ``int`` for Discrete) if ``space`` and ``mask`` allow it.

    Args:
        agent: the agent, for the message.
        space: its action space.
        action: the action.
        mask: its action mask (any 0/1 sequence), or None to check the space only.
        fix: how to fix it, when the default hint does not fit.
        context: said after the space (``" (member 'b')"``).

    Raises:
        ActionError: the action is outside the space or masked out.
    """
    if _PRECHECKED.get():
        return action
    legal_mask = None if mask is None else np.asarray(mask).astype(np.int8, copy=False)
    why = why_illegal(space, action, legal_mask)
    if why is not None:
        raise ActionError(agent, action, expected=f"an action in {space}{context} ({why})", fix=fix)
    return int(action) if isinstance(space, gym.spaces.Discrete) else action


def check_action_dict(
    env_name: str,
    action_dict: Any,
    *,
    actors: Sequence[AgentID],
    possible_agents: Sequence[AgentID],
    space_of: Callable[[AgentID], gym.Space],
    mask_of: Optional[Callable[[AgentID], Any]] = None,
    why_not_actor: Optional[Callable[[AgentID], Optional[str]]] = None,
    finished: Optional[Collection[AgentID]] = None,
) -> dict[AgentID, Any]:
    """Validate a whole action dict; return it with Discrete actions as plain ints.

    Args:
        env_name: the env's name, for messages.
        action_dict: what ``step`` received.
        actors: the agents that must act, in order.
        possible_agents: every agent of the env.
        space_of: agent -> its action space.
        mask_of: agent -> its action mask or None; None checks spaces only.
        why_not_actor: see :func:`check_keys`.
        finished: see :func:`check_keys`.

    Raises:
        ActionError: the first problem found; nothing was applied.
    """
    if _PRECHECKED.get():  # as check_action passes each one on, without the look-ups
        return {agent: action_dict[agent] for agent in actors}
    check_keys(env_name, action_dict, actors=actors, possible_agents=possible_agents,
               why_not_actor=why_not_actor, finished=finished)
    return {
        agent: check_action(agent, space_of(agent), action_dict[agent],
                            None if mask_of is None else mask_of(agent))
        for agent in actors
    }


class DiscreteCheck:
    """The quick check of a ``Discrete(n, start)`` space: a plain class, so that it pickles.

    Args:
        start: the space's ``start``.
        n: the space's ``n``.

    Example:
        >>> import pickle
        >>> check = pickle.loads(pickle.dumps(DiscreteCheck(1, 3)))
        >>> check.check(3, None), check.check(3, [1, 1, 0]), check.check(0, None)
        (True, False, False)
    """

    __slots__ = ("start", "n", "_legal")  # attribute reads as quick as a closure's cells

    def __init__(self, start: int, n: int) -> None:
        self.start = start
        self.n = n
        self._legal: Optional[frozenset[int]] = None

    def check(self, action: Any, mask: Any) -> bool:
        """Return True when ``action`` is a plain integer in the space and the mask allows it."""
        if type(action) not in _INT_TYPES:
            return False
        index = int(action) - self.start
        if not 0 <= index < self.n:
            return False
        if mask is None:
            return True
        try:
            return bool(mask[index])
        except (IndexError, TypeError):
            return False

    def check_all(self, actions: Collection[Any]) -> bool:
        """Return True when every action passes ``check(action, None)``; in C, not per action.

        Example:
            >>> DiscreteCheck(0, 3).check_all([0, 2, np.int64(1)]), DiscreteCheck(0, 3).check_all([3])
            (True, False)
        """
        if not actions or not set(map(type, actions)) <= _INT_TYPES:
            return False
        if self.n > _SMALL_SPACE:
            return self.start <= min(actions) and max(actions) < self.start + self.n
        legal = self._legal
        if legal is None:
            legal = self._legal = frozenset(range(self.start, self.start + self.n))
        return legal.issuperset(actions)  # one pass of hash look-ups (the types are integers)

    def __reduce__(self) -> tuple[Any, ...]:
        return DiscreteCheck, (self.start, self.n)

    def __repr__(self) -> str:
        return f"DiscreteCheck(start={self.start}, n={self.n})"


#: Boxes of at most this many numbers are checked without numpy (:class:`BoxCheck`).
_SMALL_BOX = 16


class BoxCheck:
    """The quick check of a ``Box`` space: a plain class, so that it pickles.

    Args:
        low: the space's ``low``.
        high: the space's ``high``.
        shape: the space's ``shape``.
        dtype: the space's ``dtype``.

    Example:
        >>> space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        >>> check = BoxCheck(space.low, space.high, space.shape, space.dtype)
        >>> check.check(np.zeros(2, np.float32), None), check.check(np.zeros(2), None)
        (True, False)
        >>> check.check(np.array([0.5, 1.5], np.float32), None)
        False
        >>> check.check(np.array([np.nan, 0], np.float32), None)
        False
    """

    __slots__ = ("low", "high", "shape", "dtype", "_lows", "_highs")

    def __init__(self, low: np.ndarray, high: np.ndarray, shape: tuple[int, ...],
                 dtype: Any) -> None:
        self.low = low
        self.high = high
        self.shape = shape
        self.dtype = dtype
        # Small boxes (most continuous actions) are compared as Python numbers: a few
        # hundred nanoseconds, where two numpy comparisons cost about two microseconds.
        small = int(np.prod(shape, dtype=np.int64)) <= _SMALL_BOX
        self._lows = np.broadcast_to(low, shape).ravel().tolist() if small else None
        self._highs = np.broadcast_to(high, shape).ravel().tolist() if small else None

    def check(self, action: Any, mask: Any) -> bool:
        """Return True when ``action`` is an array of the space's shape and dtype within bounds."""
        if type(action) is not np.ndarray or action.shape != self.shape \
                or action.dtype != self.dtype:
            return False
        lows, highs = self._lows, self._highs
        if lows is None or highs is None:
            return bool((action >= self.low).all()) and bool((action <= self.high).all())
        values = action.tolist() if action.ndim == 1 else action.ravel().tolist()
        # NaN is neither above a low nor below a high: refused, as by numpy's comparisons.
        return all(map(operator.le, lows, values)) and all(map(operator.le, values, highs))

    def __reduce__(self) -> tuple[Any, ...]:
        return BoxCheck, (self.low, self.high, self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"BoxCheck(shape={self.shape}, dtype={self.dtype})"


def fast_check(space: gym.Space) -> Optional[Check]:
    """Return a quick ``check(action, mask) -> bool`` for Discrete and Box spaces, else None.

    True means legal; False means "look closer" (:func:`check_action` finds the
    reason, or finds none for values the quick check does not handle, such as
    a Box action in another float dtype). The check is the bound ``check``
    method of a :class:`DiscreteCheck` or :class:`BoxCheck`: as quick to call
    as a closure, and it pickles (envs that keep checks go to worker processes).

    Example:
        >>> check = fast_check(gym.spaces.Discrete(3))
        >>> check(2, None), check(2, np.array([1, 1, 0])), check(3, None), check(True, None)
        (True, False, False, False)
    """
    if type(space) is gym.spaces.Discrete:
        return DiscreteCheck(int(space.start), int(space.n)).check
    if type(space) is gym.spaces.Box:
        return BoxCheck(space.low, space.high, space.shape, space.dtype).check
    return None


def action_masks(actors: Sequence[AgentID], obs: Mapping[AgentID, Any],
                 infos: Mapping[AgentID, Any], obs_hold_masks: bool = True
                 ) -> Optional[dict[AgentID, Any]]:
    """Return ``{actor: raw_action_mask(obs, info)}``, or None when no actor has a mask.

    The same look-up as :func:`marlhub.spaces.raw_action_mask`, first asked for all
    agents at once: when no observation is a mapping and no info holds an
    ``"action_mask"`` key, no actor has a mask, found in a few passes of C code.
    ``obs_hold_masks=False`` says the observations are no mappings (their spaces
    are arrays or integers, :func:`spaces_hold_masks`), so only the infos are asked.

    Example:
        >>> action_masks(["a"], {"a": np.zeros(2)}, {"a": {}}) is None
        True
        >>> action_masks(["a"], {"a": np.zeros(2)}, {"a": {"action_mask": [1, 0]}})
        {'a': [1, 0]}
    """
    if not obs_hold_masks or _no_mappings(set(map(type, obs.values()))):
        if not any(infos.values()):  # every info empty (or None): no mask in any
            return None
        try:
            if not any(map(operator.contains, infos.values(), repeat(ACTION_MASK_KEY))):
                return None
        except TypeError:  # an info that is no container: look at each
            pass
    return {agent: raw_action_mask(obs.get(agent), infos.get(agent)) for agent in actors}


def spaces_hold_masks(spaces: Iterable[gym.Space]) -> bool:
    """Whether an observation of one of ``spaces`` may be a mapping, and so hold a mask.

    Example:
        >>> spaces_hold_masks([gym.spaces.Box(0, 1, (2,)), gym.spaces.Discrete(3)])
        False
        >>> spaces_hold_masks([gym.spaces.Dict({"action_mask": gym.spaces.MultiBinary(3)})])
        True
    """
    return not all(type(space) in _ARRAY_SPACES for space in spaces)


#: Spaces whose observations are arrays or integers, never mappings.
_ARRAY_SPACES = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiBinary,
                 gym.spaces.MultiDiscrete)


#: Types known not to be mappings (an observation of one holds no mask), learnt as met.
_NOT_MAPPINGS: set[type] = {np.ndarray, int, float, np.float32, np.float64, np.int64}


def _no_mappings(types: set[type]) -> bool:
    """Tell whether none of ``types`` is a mapping; remember those that are not."""
    if types <= _NOT_MAPPINGS:
        return True
    for kind in types:
        if kind is dict or issubclass(kind, Mapping):
            return False
    _NOT_MAPPINGS.update(types)
    return True


class ActionChecker:
    """:func:`check_action` with a quick check per agent, built on first use.

    Agents with equal Discrete spaces share one :class:`DiscreteCheck`, so that
    :meth:`check_dict` can check all their actions at once.

    Args:
        space_of: agent -> its action space (looked up once per agent).

    Example:
        >>> checker = ActionChecker({"a": gym.spaces.Discrete(2)}.__getitem__)
        >>> checker.check("a", 1, [1, 1]), checker.check("a", np.array(1), [1, 1])
        (1, 1)
        >>> checker.check("a", 1, [1, 0])
        Traceback (most recent call last):
        ...
        marlhub.errors.ActionError: Bad action for 'a': got 1, expected an action in Discrete(2) (action 1 is masked out; legal actions are [0]). Send exactly one action for each agent in the last observation dict, inside its action space and mask.
    """

    def __init__(self, space_of: Callable[[AgentID], gym.Space]) -> None:
        self._space_of = space_of
        self._fast: dict[AgentID, Optional[Check]] = {}
        self._discrete: dict[tuple[int, int], DiscreteCheck] = {}
        self._shared: Optional[DiscreteCheck] = None
        self._shared_agents: frozenset[AgentID] = frozenset()

    def forget(self) -> None:
        """Drop the quick checks (after the agents' spaces changed)."""
        self._fast = {}
        self._discrete = {}
        self._shared = None
        self._shared_agents = frozenset()

    def _quick(self, agent: AgentID) -> Optional[Check]:
        fast = fast_check(self._space_of(agent))
        owner = getattr(fast, "__self__", None)
        if type(owner) is DiscreteCheck:  # one instance per space: check_all groups by it
            fast = self._discrete.setdefault((owner.start, owner.n), owner).check
        self._fast[agent] = fast
        return fast

    def check(self, agent: AgentID, action: Any, mask: Any = None) -> Any:
        """Return ``action`` to pass on if legal for ``agent``, else raise (see :func:`check_action`).

        A plain integer or an array of the space's exact type comes back as it is;
        other accepted forms (a 0-d array for a Discrete space) as :func:`check_action` makes them.
        """
        fast = self._fast.get(agent)
        if fast is None and agent not in self._fast:
            fast = self._quick(agent)
        if fast is not None and fast(action, mask):
            return action
        return check_action(agent, self._space_of(agent), action, mask)

    def check_dict(self, env_name: str, action_dict: Any, *, actors: list[AgentID],
                   possible_agents: Sequence[AgentID],
                   masks: Optional[Mapping[AgentID, Any]] = None,
                   finished: Optional[Collection[AgentID]] = None) -> dict[AgentID, Any]:
        """:func:`check_action_dict` for many agents: ``{actor: action to pass on}``, actors' order.

        The whole dict is checked before anything is returned. In the common case
        (a dict in the actors' order, the actors sharing one Discrete space, no
        masks: ``masks`` None, see :func:`action_masks`) every pass over the agents
        is C code and ``action_dict`` itself comes back; otherwise the keys go
        through :func:`check_keys` and each action through :meth:`check`.

        Raises:
            ActionError: the first problem: a missing or foreign key, then the first
                actor, in order, whose action is not legal.

        Example:
            >>> checker = ActionChecker(lambda agent: gym.spaces.Discrete(3))
            >>> checker.check_dict("Env", {"b": 2, "a": 0}, actors=["a", "b"], possible_agents="ab")
            {'a': 0, 'b': 2}
        """
        if _PRECHECKED.get():
            return action_dict
        values: Collection[Any]
        if type(action_dict) is dict and list(action_dict) == actors:
            values = action_dict.values()  # keyed by exactly the actors, in order
            in_order = True
        else:
            if type(action_dict) is not dict or action_dict.keys() != set(actors):
                check_keys(env_name, action_dict, actors=actors, possible_agents=possible_agents,
                           finished=finished)
            values = list(map(action_dict.__getitem__, actors))
            in_order = False
        check = self.check
        if masks is not None:
            return {agent: check(agent, value, masks.get(agent))
                    for agent, value in zip(actors, values)}
        shared = self._shared
        if shared is None or not self._shared_agents.issuperset(actors):
            shared = self._shared_check(actors)
        if shared is not None and shared.check_all(values):
            return action_dict if in_order else dict(zip(actors, values))
        return {agent: check(agent, value) for agent, value in zip(actors, values)}

    def _shared_check(self, actors: list[AgentID]) -> Optional[DiscreteCheck]:
        """The one Discrete check of every actor, when they share one (then remembered)."""
        checks = set(map(self._fast.get, actors))  # None for agents not checked yet
        owner = getattr(checks.pop(), "__self__", None) if len(checks) == 1 else None
        if type(owner) is not DiscreteCheck:
            return None
        self._shared, self._shared_agents = owner, frozenset(actors)
        return owner
