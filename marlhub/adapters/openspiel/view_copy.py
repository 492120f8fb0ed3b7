"""Copies of a hub env for ``clone()`` of the states :func:`~marlhub.adapters.openspiel.to_openspiel` makes.

OpenSpiel clones states all the time (``random_sim_test`` three times a step,
MCTS once a simulation), so :func:`snapshot` is a deep copy made right and
fast:

* right: it copies what is in memory, not what an object would pickle as.
  Gymnasium's ``EzPickle`` (which PettingZoo's and many Gymnasium envs
  inherit) pickles and deep-copies an env as a call to its constructor: a
  *new, never reset* env, so ``copy.deepcopy`` of a PettingZoo env in an
  episode loses the episode (and hub adapters holding one refuse to step in
  the copy). A snapshot copies the attributes of every plain Python object as
  they are, and clones ``pyspiel`` states with ``State.clone()`` instead of
  replaying their history;
* fast: the bulk is copied by the C pickler (a few times faster than
  ``copy.deepcopy`` on big tables such as a Taxi's transition table), with
  classes, functions and whatever the caller shares kept by reference, as
  ``copy.deepcopy`` keeps them, and objects that define ``__deepcopy__``
  (numpy arrays, ``OpenSpielEnv``) copied by it. What an env only draws with
  (pygame's fonts and surfaces, which neither pickle nor copy) is shared too;
  pygame's sprites, groups and rects, which hold game state, are copied.

Shared references survive (one copy per object), as with ``copy.deepcopy``;
anything the pickler refuses falls back to ``copy.deepcopy``.

Example:
    >>> import pettingzoo
    >>> native = pettingzoo.make("aec", "classic/tictactoe-v3")
    >>> native.reset(seed=0)
    >>> native.step(4)
    >>> native.unwrapped.board.squares, native.agent_selection
    ([0, 0, 0, 0, 1, 0, 0, 0, 0], 'player_2')
    >>> clone = snapshot(native)
    >>> clone.unwrapped.board.squares, clone.agent_selection
    ([0, 0, 0, 0, 1, 0, 0, 0, 0], 'player_2')
    >>> rebuilt = copy.deepcopy(native)  # EzPickle: a new env, back at the start
    >>> rebuilt.unwrapped.board.squares, rebuilt.agent_selection
    ([0, 0, 0, 0, 0, 0, 0, 0, 0], 'player_1')
"""

from __future__ import annotations

import copy
import copyreg
import gc
import io
import pickle
import types
import weakref
from collections.abc import Iterable
from typing import Any

from marlhub.episode.play import RandomEpisode, action_space_getter, random_actions
from marlhub.errors import ResetNeededError, UncopyableEnvError
from marlhub.spaces import ActionSampler

__all__ = ["require_copies", "snapshot"]

#: pickle's own constructor call (its NEWOBJ opcode), missing from typeshed.
_NEWOBJ: Any = getattr(copyreg, "__newobj__")

#: What ``copy.deepcopy`` shares instead of copying (its "atomic" types); so does snapshot.
_BY_REFERENCE = (type, types.FunctionType, types.BuiltinFunctionType, types.ModuleType,
                 types.CodeType, weakref.ref, property, range)

#: ``Py_TPFLAGS_HEAPTYPE``: set on every class written in Python, not on C static types.
_HEAPTYPE = 1 << 9


def snapshot(value: Any, shared: Iterable[Any] = ()) -> Any:
    """Return a deep copy of ``value`` that copies live envs as they are.

    Args:
        value: what to copy (an env, or a dict of an object's attributes).
        shared: objects the copy refers to instead of copying (spaces, say).

    Returns:
        The copy.

    Example:
        >>> a = [1, 2]
        >>> c = snapshot({"x": a, "y": a, "f": len})
        >>> c["x"] is c["y"], c["x"] is a, c["f"] is len
        (True, False, True)
    """
    shared_ids = {id(s): s for s in shared}
    collecting = gc.isenabled()
    try:
        buffer = io.BytesIO()
        pickler = _Pickler(buffer, shared_ids)
        pickler.dump(value)
        buffer.seek(0)
        # The copy is thousands of new containers at once (a transition table, say):
        # collecting garbage every few hundred of them would triple the time. The
        # switch is process-wide; it is put back as it was.
        gc.disable()
        return _Unpickler(buffer, pickler.kept).load()
    except (pickle.PicklingError, TypeError, AttributeError, ValueError):
        # Something the pickler will not take (a lock, a generator, ...) may still deepcopy.
        memo: dict[int, Any] = {i: s for i, s in shared_ids.items()}
        return copy.deepcopy(value, memo)
    finally:
        if collecting:
            gc.enable()


def require_copies(name: str, env: Any, seed: int) -> None:
    """Refuse an env whose copy in the middle of an episode does not go on from there.

    OpenSpiel clones states all the time, so a game over an env whose copies
    restart (state kept outside Python, as MAgent2's C engine keeps its world:
    the copy is a new env, and the hub adapter refuses to step it) is refused
    when it is made, naming what would not copy. Resets ``env`` with ``seed``,
    copies it and steps the copy once with random legal actions.

    Raises:
        UncopyableEnvError: the copy does not go on.
    """
    first = next(iter(RandomEpisode(env, seed, max_steps=0)))
    if first.over:
        return
    clone = snapshot(env)
    actions = random_actions(first.actors, first.obs, first.infos, action_space_getter(clone),
                             ActionSampler(seed))
    try:
        clone.step(actions)
    except ResetNeededError as exc:
        try:
            _Pickler(io.BytesIO(), {}).dump(env)
            what = ""
        except Exception as refusal:  # what the copy could not hold as it is
            what = f"{type(refusal).__name__}: {refusal}"
        raise UncopyableEnvError(name, what) from exc


def _kept(index: int) -> Any:  # pragma: no cover - _Unpickler.find_class replaces it
    """Stand-in that pickles by name; the unpickler resolves it to its table of kept objects."""
    raise RuntimeError("_kept is only meaningful inside snapshot()")


def _set_attributes(obj: Any, state: dict[str, Any]) -> None:
    """State setter of a plain object: its attributes as they were (no ``__setstate__``)."""
    obj.__dict__.update(state)


# How snapshot copies an instance of a class (decided once per class, see _route).
_KEEP = 0  # shared, as copy.deepcopy shares classes and functions
_DEEPCOPY = 1  # the class says how: __deepcopy__
_CLONE = 2  # a pyspiel State: clone(), where pickling would replay its history
_ATTRIBUTES = 3  # a plain object: its __dict__, whatever __getstate__/__setstate__ say
_PICKLE = 4  # anything else: the way pickle (and copy.deepcopy) reduce it

#: Route of each class met so far (classes are few; the table is kept for speed).
_ROUTES: dict[type, int] = {}


def _slot_names(cls: type) -> set[str]:
    slots = vars(cls).get("__slots__", ())
    names = {slots} if isinstance(slots, str) else set(slots)
    return names - {"__dict__", "__weakref__"}


def _is_plain(cls: type) -> bool:
    """Whether every instance keeps its whole state in ``__dict__`` and reduces the default way.

    Such an instance is copied as its attributes, whatever ``__getstate__`` and
    ``__setstate__`` (EzPickle's, say) would make of it. Container subclasses
    (their items live outside ``__dict__``), slotted classes and classes with
    their own reduce or constructor arguments are not plain.
    """
    return (
        getattr(cls, "__reduce_ex__", None) is object.__reduce_ex__
        and getattr(cls, "__reduce__", None) is object.__reduce__
        and not hasattr(cls, "__getnewargs_ex__") and not hasattr(cls, "__getnewargs__")
        and not issubclass(cls, (list, dict, set, frozenset, tuple, str, bytes, int, float))
        and "__dict__" in dir(cls)
        and not any(_slot_names(c) for c in cls.__mro__)
    )


def _renders_only(cls: type) -> bool:
    """Whether ``cls`` is one of pygame's C types that do not pickle: what an env draws with.

    A ``Surface``, a ``Font``, a ``Clock`` neither pickle nor deep-copy (MPE2's
    envs hold a ``Font`` from construction), and a copy of an episode has no use
    for a copy of them: the copy shares them, as a copy shares classes. The rest
    of pygame is game state and is copied like anything else: the sprites and
    groups of ``pygame.sprite`` (classes written in Python; Knights-Archers-Zombies
    keeps its players, zombies and arrows in them) and the C types that pickle
    (``Rect``, ``Color``, ``Vector2``). Shared, they would let a clone move the
    original's sprites.
    """
    module = getattr(cls, "__module__", None) or ""  # SWIG's SwigPyObject has none
    if module.partition(".")[0] != "pygame" or cls.__flags__ & _HEAPTYPE:
        return False
    pickles = (cls in copyreg.dispatch_table
               or getattr(cls, "__reduce_ex__", None) is not object.__reduce_ex__
               or getattr(cls, "__reduce__", None) is not object.__reduce__)
    return not pickles


def _route(cls: type) -> int:
    route = _ROUTES.get(cls)
    if route is None:
        if issubclass(cls, _BY_REFERENCE) or _renders_only(cls):
            route = _KEEP
        elif getattr(cls, "__deepcopy__", None) is not None:
            route = _DEEPCOPY
        elif any(c.__name__ == "State" and c.__module__ == "pyspiel" for c in cls.__mro__):
            route = _CLONE
        else:
            route = _ATTRIBUTES if _is_plain(cls) else _PICKLE
        _ROUTES[cls] = route
    return route


class _Pickler(pickle.Pickler):
    """Pickles what copies by value; puts what is kept, or copied otherwise, in ``kept``."""

    def __init__(self, file: io.BytesIO, shared: dict[int, Any]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.shared = shared
        self.kept: list[Any] = []
        self.memo_of_deepcopy: dict[int, Any] = dict(shared)

    def reducer_override(self, obj: Any) -> Any:
        """Route ``obj``; never called for None, bools, numbers, strings, bytes and builtin containers."""
        if obj is _kept:
            return NotImplemented
        cls = type(obj)
        route = _ROUTES.get(cls)
        if route is None:
            route = _route(cls)
        if route == _KEEP or id(obj) in self.shared:
            return self._keep(obj)
        if route == _ATTRIBUTES:
            state = obj.__dict__
            if type(state) is dict:
                return _NEWOBJ, (cls,), state, None, None, _set_attributes
            return NotImplemented
        if route == _DEEPCOPY:
            return self._keep(copy.deepcopy(obj, self.memo_of_deepcopy))
        if route == _CLONE:
            return self._keep(obj.clone())
        return NotImplemented

    def _keep(self, obj: Any) -> tuple[Any, tuple[int]]:
        self.kept.append(obj)
        return _kept, (len(self.kept) - 1,)


class _Unpickler(pickle.Unpickler):
    """Unpickles a snapshot, resolving ``_kept`` to the pickler's table."""

    def __init__(self, file: io.BytesIO, kept: list[Any]) -> None:
        super().__init__(file)
        self.kept = kept

    def find_class(self, module: str, name: str) -> Any:
        """Return the kept-object look-up for ``_kept``, else what pickle would."""
        if module == __name__ and name == "_kept":
            return self.kept.__getitem__
        return super().find_class(module, name)
