"""A VMAS env's own random stream, where VMAS keeps one for all its envs in a process.

VMAS runs ``reset`` and ``step`` under its ``local_seed`` decorator, which
swaps in the random state (torch, numpy, ``random``) stored in the class
attribute ``Environment.vmas_random_state`` and stores it back afterwards. All
VMAS envs of a process share that one list, so two envs reset with the same
seed and stepped in turn draw different numbers (PettingZoo's ``seed_test``
makes exactly two). :class:`RandomStream` gives one env a stream of its own,
as it would have in a process of its own, by swapping the list's contents
around each call; VMAS itself does the seeding and drawing.

Example:
    >>> import vmas, torch
    >>> envs = [vmas.make_env("balance", num_envs=1) for _ in range(2)]
    >>> streams = [RandomStream(env) for env in envs]
    >>> for env, stream in zip(envs, streams):
    ...     with stream:
    ...         _ = env.reset(seed=3)
    >>> draws = []
    >>> for env, stream in zip(envs, streams):
    ...     with stream:
    ...         draws.append(env.step([torch.zeros(1, 2)] * len(env.agents))[0][0])
    >>> bool(torch.equal(draws[0], draws[1]))
    True
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["RandomStream"]


class RandomStream:
    """A context manager: inside it, ``env`` draws from its own copy of VMAS's random state.

    The first time, the env takes the process-wide state as it stands (so envs
    reset without a seed still differ); after that it goes on from where it left
    its own stream, and the process-wide state is as it was before the call.

    Args:
        env: a VMAS ``Environment``.
    """

    __slots__ = ("shared", "own", "saved")

    def __init__(self, env: Any) -> None:
        self.shared: list[Any] = type(env).vmas_random_state
        self.own: Optional[list[Any]] = None
        self.saved: Optional[list[Any]] = None

    def __enter__(self) -> "RandomStream":
        if self.own is not None:
            self.saved = list(self.shared)
            self.shared[:] = self.own
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.own = list(self.shared)
        if self.saved is not None:
            self.shared[:] = self.saved
            self.saved = None
