"""How ``reset(seed=...)`` reaches a dm_env, whose API has no seed.

dm_env's ``reset()`` takes no seed: an env draws from a random state it was given when
it was made (dm_control's ``soccer.load(random_state=...)``). The hub env seeds that
random state *in place* before each seeded ``reset()``, with ``RandomState.seed(seed)``,
which gives the same stream as a new ``np.random.RandomState(seed)``:

* dm_control's composer envs (soccer, locomotion): ``env.random_state``, the one
  ``RandomState`` the env hands to every hook of its task, arena and walkers, so
  the pitch size, the players' and the ball's starting positions and the throw-ins
  all follow from the seed. Shimmy's ``DmControlMultiAgentCompatibilityV0`` replaces
  the env's ``_random_state`` with ``np.random.RandomState(seed)`` instead, which gives
  the same episodes (the lockstep compares them);
* dm_control's suite envs (``dm_control.rl.control.Environment``): ``env.task.random``.

Any other env: pass ``reseed=callable(env, seed)``, or ``reseed=None`` when the env
takes no seed (a seed given to ``reset`` is then ignored, as the env's own API would).

Example:
    >>> from dm_control.locomotion import soccer
    >>> env = soccer.load(team_size=1)
    >>> seed_in_place = reseeder(env, "auto")
    >>> seed_in_place(env, 3); first = env.random_state.uniform()
    >>> seed_in_place(env, 3); first == env.random_state.uniform()
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import numpy as np

from marlhub.adapters.dm_env.specs import SOURCE
from marlhub.errors import ConfigError

__all__ = ["Reseed", "random_state_of", "reseeder"]

#: ``reseed(env, seed)``: seeds ``env`` before its ``reset()``.
Reseed = Callable[[Any, int], None]


def random_state_of(env: Any) -> Optional[np.random.RandomState]:
    """Return the ``RandomState`` a dm_control env draws from, or None for other envs."""
    for owner, name in ((env, "random_state"), (getattr(env, "task", None), "random")):
        state = getattr(owner, name, None) if owner is not None else None
        if isinstance(state, np.random.RandomState):
            return state
    return None


def seed_random_state(env: Any, seed: int) -> None:
    """Seed the env's own ``RandomState`` in place (``auto``)."""
    state = random_state_of(env)
    if state is not None:
        state.seed(int(seed) % 2**32)


def _no_seed(env: Any, seed: int) -> None:
    """The env takes no seed."""


def reseeder(env: Any, option: Union[str, Reseed, None]) -> Reseed:
    """Return what seeds ``env`` for the option ``reseed`` of the hub env.

    Raises:
        ConfigError: ``"auto"`` for an env with no random state marlhub can find, or an
            option that is neither ``"auto"``, None nor a callable.
    """
    if option is None:
        return _no_seed
    if callable(option):
        return option
    if option != "auto":
        raise ConfigError(SOURCE, f"reseed must be 'auto', None or a function (env, seed), got "
                          f"{option!r}", fix="Leave it 'auto' for dm_control's envs.")
    if random_state_of(env) is None:
        raise ConfigError(
            SOURCE, f"reset(seed=...) cannot reach {type(env).__name__}'s random state: it has "
            "neither a numpy RandomState `random_state` (dm_control's composer envs) nor "
            "`task.random` (dm_control's suite envs)",
            fix="Pass reseed=function(env, seed) that seeds the env, or reseed=None if the env "
            "takes no seed (reset(seed=...) then ignores the seed).")
    return seed_random_state
