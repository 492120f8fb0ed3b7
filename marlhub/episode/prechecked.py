"""Actions checked once: a context in which the hub's action checks let every action through.

Every hub env checks each action dict it gets (:mod:`~marlhub.episode.actions`).
A vector env checks each copy's dict itself, before any copy moves, so that a
bad action in one copy moves none; then it steps its copies inside
:func:`actions_prechecked`, and their adapters do not check the same actions a
second time: :func:`~marlhub.episode.actions.check_keys`,
:func:`~marlhub.episode.actions.check_action`,
:func:`~marlhub.episode.actions.check_action_dict` and
:class:`~marlhub.episode.actions.ActionChecker` return what they were given, at
once, while it is active. Every adapter, wrapper and view checks through them,
so every one honours it.

A learner that proved its env with ``marlhub check`` and sends only legal
actions (from the masks) may step a single env inside it too, to save the
checks on a hot loop. It is never the default: inside it a bad action is not
refused with an :class:`~marlhub.errors.ActionError`, it goes to the native env
as it is (where it may raise its own error, or be applied). The context belongs
to the thread (a :class:`contextvars.ContextVar`) and ends with the ``with``
block.

Example:
    >>> import marlhub
    >>> env = marlhub.make("openspiel/tic_tac_toe")
    >>> obs, infos = env.reset(seed=0)
    >>> with actions_prechecked():
    ...     actions_are_prechecked()
    True
    >>> actions_are_prechecked()
    False
"""

from __future__ import annotations

import contextvars

__all__ = ["actions_are_prechecked", "actions_prechecked"]

_PRECHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "marlhub_actions_prechecked", default=False)


def actions_are_prechecked() -> bool:
    """Tell whether the hub's action checks are off here (inside :func:`actions_prechecked`)."""
    return _PRECHECKED.get()


class actions_prechecked:  # noqa: N801 (used as a function: ``with actions_prechecked():``)
    """Turn the hub's action checks off for the ``with`` block (see the module): the caller
    checked every action dict already, or takes the native env's behaviour on a bad one.

    A class rather than a generator function: vector envs enter it on every call.
    """

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _PRECHECKED.set(True)

    def __exit__(self, *exc_info: object) -> None:
        _PRECHECKED.reset(self._token)
