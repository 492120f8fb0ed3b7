"""Probes of what happens to an env besides reset and step: copied, rendered, closed.

* ``env.copyable``: to_openspiel's clones, worker processes and checkpoints copy or
  pickle an env in the middle of an episode. A fresh instance, a few steps into
  episode 0, is deep-copied and pickled (with cloudpickle, as worker processes are sent what
  they run); each copy must play the next steps as the
  recording did (a copy that starts over, or that shares state with its original,
  does not), or refuse clearly: a marlhub error when copied (a remote env), or a
  request to reset when stepped (the copy of a PettingZoo env, which PettingZoo
  pickles as a call to its constructor). A class pickle cannot find (made in a function, or by runpy) is only
  deep-copied.
* ``render.mode``: ``render()`` after a reset returns what ``render_mode`` promises
  (an HxWx3 uint8 array for ``rgb_array``, a ``str`` for ``ansi``, and lists of them for
  the ``_list`` modes; ``human`` is not rendered, which would open a window).
* ``env.close``: ``close()`` twice does not raise, and an env whose own ``close()``
  releases something refuses ``step()`` afterwards with a clear error. (An env that
  inherits a ``close()`` that does nothing has nothing to release; stepping on is
  harmless there.)

Each probe builds its own instance (none when the target is one given instance, for
closing; the others then use the env under test, which they only reset and step).

Example:
    >>> import marlhub
    >>> from marlhub.conformance.driver import Driver
    >>> from marlhub.conformance.options import CheckOptions
    >>> driver = Driver(marlhub.make("tic_tac_toe"), "tic_tac_toe", CheckOptions(),
    ...                 make_fresh=lambda: marlhub.make("tic_tac_toe"))
    >>> probes = LifecycleProbes(driver)
    >>> probes.render(); probes.close()
    >>> driver.report.findings
    []
"""

from __future__ import annotations

import copy
import pickle
import re
from typing import Any, Callable, Optional

import numpy as np

from marlhub.conformance.calls import EnvTimeout, short, unpack_step
from marlhub.conformance.host import ProbeHost, close_quietly, fresh_env
from marlhub.conformance.probes import why_not_refused
from marlhub.conformance.trajectories import (
    Recording,
    Snapshot,
    clip,
    copy_actions,
    first_difference,
    play_actions,
    snapshot,
)
from marlhub.contract import rules
from marlhub.contract.findings import Reproducer
from marlhub.errors import MarlhubError

__all__ = ["LifecycleProbes", "why_not_rendered"]

#: Steps the copies play after they were made.
COPY_STEPS = 3

#: What ``render()`` returns in each render mode, as Gymnasium's ``Env.render`` documents it.
_PROMISES = {
    "rgb_array": "an HxWx3 numpy array of uint8",
    "ansi": "a str",
    "human": "None (it draws on the screen)",
    "rgb_array_list": "a list of HxWx3 numpy arrays of uint8",
    "ansi_list": "a list of str",
}


def why_not_rendered(mode: str, frame: Any) -> Optional[str]:
    """What is wrong with ``frame`` for ``render_mode == mode``; None when it keeps the promise.

    Example:
        >>> why_not_rendered("rgb_array", np.zeros((4, 4, 3), np.uint8)) is None
        True
        >>> why_not_rendered("ansi", np.zeros((4, 4, 3), np.uint8))
        'got ndarray where ansi promises a str'
    """
    if mode not in _PROMISES:
        return None  # a mode of the env's own: nothing is promised
    if mode.endswith("_list"):
        if not isinstance(frame, list):
            return f"got {type(frame).__name__} where {mode} promises {_PROMISES[mode]}"
        return next((why for why in (why_not_rendered(mode[:-5], f) for f in frame) if why), None)
    if mode == "ansi":
        ok = isinstance(frame, str)
    elif mode == "human":
        ok = frame is None
    else:
        ok = (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3
              and frame.dtype == np.uint8)
    if ok:
        return None
    got = (f"an array of shape {frame.shape} and dtype {frame.dtype}"
           if isinstance(frame, np.ndarray) and mode == "rgb_array" else type(frame).__name__)
    return f"got {got} where {mode} promises {_PROMISES[mode]}"


class LifecycleProbes:
    """The copy, render and close probes of one :class:`~marlhub.conformance.host.ProbeHost`
    (the :class:`~marlhub.conformance.driver.Driver` that runs them)."""

    def __init__(self, driver: ProbeHost) -> None:
        self.d = driver

    # -- copies ---------------------------------------------------------------------------

    def copies(self, ref: Recording) -> None:
        """Deep-copy and pickle an instance a few steps into ``ref``; the copy plays on alike,
        and so does the original after it (a copy that shares state moves the original)."""
        k = min(len(ref.actions) // 2, 10)
        for how, make_copy in (("copy.deepcopy(env)", copy.deepcopy),
                               ("pickle.loads(cloudpickle.dumps(env))", _pickled)):
            env = fresh_env(self.d)
            own = env is not None
            env = env if own else self.d.env
            try:
                try:
                    play_actions(env, ref.seed, ref.actions[:k], self.d.reset_kwargs, [])
                except EnvTimeout:
                    raise
                except Exception:
                    return  # the episodes report what the env raises
                if not self._copy_plays_on(env, how, make_copy, ref, k):
                    return
            finally:
                if own:
                    close_quietly(env)

    def _copy_plays_on(self, env: Any, how: str, make_copy: Callable[[Any], Any],
                       ref: Recording, k: int) -> bool:
        """Whether the copy and then the original played on as the episode did (else report)."""
        where: dict[str, Any] = {"episode": ref.episode,
                                 "reproducer": Reproducer(ref.seed, ref.actions[:k])}
        fix = ("to_openspiel's clones, worker processes and checkpoints copy envs mid-episode: "
               "keep what cannot be copied (windows, fonts, locks, handles of a native engine) "
               "out of the episode state, or define __deepcopy__ / __getstate__ that rebuild it.")
        try:
            twin = make_copy(env)
        except EnvTimeout:
            raise
        except Exception as exc:
            if _unfindable_class(exc) or isinstance(exc, MarlhubError):
                return True  # pickle cannot import the class (where it was defined, not the
                # env), or the env says clearly why it cannot be copied
            self.d.add(rules.ENV_COPYABLE,
                       f"{how} after reset(seed={ref.seed}) and {k} steps of episode 0 raised "
                       f"{type(exc).__name__}: {clip(str(exc)).rstrip('.')}. {fix}", **where)
            return False
        expected = ref.snapshots[k + 1:k + 1 + COPY_STEPS]
        for who, played in (("the env copied", twin), ("the original, after its copy played on,",
                                                       env)):
            into: list[Snapshot] = []
            try:
                error = _step_on(played, ref.actions[k:k + COPY_STEPS], into)
            finally:
                if played is twin and twin is not env:
                    close_quietly(twin)
            if error and played is twin and _refuses_until_reset(error):
                return True  # it says it must be reset first: it does not pass for the original
            difference = None if error else first_difference(expected, into[:len(expected)])
            if error or difference:
                what = (f"raised {error}" if error else
                        f"gave different {difference[1]} {difference[0] + 1} step(s) later "
                        f"({difference[2]}; the episode vs {who.split(',')[0]})"
                        if difference else "")
                self.d.add(rules.ENV_COPYABLE,
                           f"{who} by {how} after {k} steps of episode 0 did not play on as "
                           f"the episode did: the same next actions {what}. A copy must hold the "
                           f"whole episode state and share none of it. {fix}", **where)
                return False
        return True

    # -- render ---------------------------------------------------------------------------

    def render(self) -> None:
        """``render()`` after a seeded reset returns what ``render_mode`` promises."""
        mode = getattr(self.d.env, "render_mode", None)
        if not isinstance(mode, str) or mode not in _PROMISES or mode == "human":
            return  # nothing promised, or a window the check must not open
        env = fresh_env(self.d)
        own = env is not None
        env = env if own else self.d.env
        seed = self.d.options.seed
        try:
            env.reset(seed=seed, **self.d.reset_kwargs)
            frame = env.render()
        except EnvTimeout:
            raise
        except Exception as exc:
            self.d.add(rules.RENDER_MODE,
                       f"render() after reset(seed={seed}) raised {type(exc).__name__}: "
                       f"{clip(str(exc))}, where render_mode is {mode!r}; render every mode "
                       "the env accepts, or refuse the mode in __init__.")
            return
        finally:
            if own:
                close_quietly(env)
        problem = why_not_rendered(mode, frame)
        if problem:
            self.d.add(rules.RENDER_MODE,
                       f"render() after reset(seed={seed}) {problem} (render_mode {mode!r}): "
                       f"{short(frame, 60)}. Video recorders and viewers read render() by its "
                       "mode: return exactly that, or set render_mode to the mode you return.")

    # -- close ----------------------------------------------------------------------------

    def close(self, ref: Optional[Recording] = None) -> None:
        """Close a fresh instance before any reset; close another twice after a reset, then
        step it with episode 0's first action dict (``{}`` without ``ref``); only a given
        instance is not closed."""
        env = fresh_env(self.d)
        # Vector envs, `with` blocks and failed set-ups build an env and close it unused.
        if env is None or not self._closes(
                env, "close() on an instance never reset", "vector envs, `with` blocks and "
                "failed set-ups close an env they never reset: release only what was made "
                "(set what reset() makes to None in __init__)"):
            return
        env = fresh_env(self.d)
        if env is None:
            return
        seed = self.d.options.seed
        try:
            env.reset(seed=seed, **self.d.reset_kwargs)
        except EnvTimeout:
            raise
        except Exception:
            return  # the episodes report what reset raises
        for attempt in ("close()", "close() a second time"):
            if not self._closes(env, f"{attempt} after reset(seed={seed})", "close() may be "
                                "called more than once (vector envs, atexit hooks and `with` "
                                "blocks do): make it do nothing when there is nothing left to "
                                "release"):
                return
        if not _closes_something(env):
            return
        problem = why_not_refused(env, ref.actions[0] if ref and ref.actions else {})
        if problem:
            self.d.add(rules.ENV_CLOSE,
                       f"step() after close() {problem}; after close() has released what "
                       "the env holds, step() must raise a clear error (e.g. "
                       "marlhub.ResetNeededError('the env was closed')).")

    def _closes(self, env: Any, attempt: str, fix: str) -> bool:
        """Call ``env.close()``; report ``attempt`` with ``fix`` and return False if it raised."""
        try:
            env.close()
        except EnvTimeout:
            raise
        except Exception as exc:
            self.d.add(rules.ENV_CLOSE, f"{attempt} raised {type(exc).__name__}: "
                       f"{clip(str(exc))}; {fix}.")
            return False
        return True


def _closes_something(env: Any) -> bool:
    """Whether ``close`` is the env's own rather than a do-nothing one it inherits.

    marlhub's adapters and wrappers pass ``close`` on to the env they hold, whose own
    close is what counts (checked where that env is checked natively).
    """
    from gymnasium import Env

    if type(env).__module__.split(".")[0] == "marlhub":
        return False
    method = getattr(type(env), "close", None)
    return method not in (None, Env.close)


def _refuses_until_reset(error: str) -> bool:
    """Whether a copy's step raised a refusal that asks for a reset (PettingZoo's envs
    pickle as a call to their constructor: marlhub's adapter refuses to step such a copy)."""
    return error.startswith("ResetNeededError") or "reset" in error.lower()


def _unfindable_class(exc: BaseException) -> bool:
    """Whether pickling failed on a class pickle cannot import (made in a function or by
    runpy): where the class lives, not what the env holds."""
    text = str(exc)
    return (re.search(r"local object '[^']*<locals>\.[A-Z]\w*'", text) is not None
            or "Can't pickle <class" in text)


def _pickled(env: Any) -> Any:
    """A copy through cloudpickle (what worker processes send: Gymnasium's AsyncVectorEnv,
    Ray), which pickles lambdas and classes made in functions by value."""
    import cloudpickle  # type: ignore[import-untyped]

    return pickle.loads(cloudpickle.dumps(env))


def _step_on(env: Any, actions: list[dict[Any, Any]], into: list[Snapshot]) -> Optional[str]:
    try:
        for action_dict in actions:
            o, r, te, tr, _ = unpack_step(env.step(copy_actions(action_dict)))
            into.append(snapshot(o, r, te, tr))
    except EnvTimeout:
        raise
    except Exception as exc:
        return f"{type(exc).__name__}: {clip(str(exc))}"
    return None
