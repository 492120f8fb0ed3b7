"""Jumanji's functions as the hub calls them: one key discipline, jitted once, vmapped for batches.

A Jumanji env is pure functions: ``reset(key) -> (state, timestep)`` and
``step(state, action) -> (state, timestep)``; the env keeps its own key in its
state, so a step takes none. marlhub derives the reset keys as JaxMARL's adapter
does, so an episode replays with Jumanji alone::

    key = jax.random.PRNGKey(seed)              # reset(seed=seed)
    key, k = jax.random.split(key)
    state, timestep = jax.jit(env.reset)(k)
    while not timestep.last():                   # each step
        state, timestep = jax.jit(env.step)(state, action)

A reset without a seed goes on with the key where the last reset left it.
:class:`JumanjiFunctions` holds ``jax.jit(env.reset)`` and ``jax.jit(env.step)`` of
one env (Jumanji's README jits them so), so one copy's values are Jumanji's bit for
bit. A batch vmaps the same functions (copy ``i`` seeded ``seed + i`` walks its own
key, so it is the hub env seeded ``seed + i``); XLA compiles the batch apart from one
copy, so its floats agree with one copy's to rounding, :data:`BATCH_RTOL`.

Example:
    >>> import jumanji
    >>> fns = functions_for(jumanji.make("Cleaner-v0"))
    >>> key, state, timestep = fns.reset(seed_key(0))
    >>> timestep.observation.action_mask.shape
    (3, 4)
"""

from __future__ import annotations

from typing import Any

from marlhub.adapters.jax_env import compiled_once, seed_key, seed_keys

__all__ = ["BATCH_RTOL", "LAST", "JumanjiFunctions", "functions_for", "seed_key", "seed_keys"]

#: Jumanji's ``StepType.LAST`` (``FIRST`` 0, ``MID`` 1, ``LAST`` 2).
LAST = 2

#: How far a batch's floats may be from one copy's, relatively or absolutely, as XLA compiles
#: the vmapped step apart and its fusions may round differently.
BATCH_RTOL = 1e-5


def functions_for(env: Any) -> "JumanjiFunctions":
    """Return :class:`JumanjiFunctions` of ``env``, made once per env object: hub envs of the
    same env object share them."""
    return compiled_once(env, JumanjiFunctions, lambda: JumanjiFunctions(env))


class JumanjiFunctions:
    """One Jumanji env's reset and step for one copy, jitted (see the module).

    Args:
        env: a Jumanji ``Environment``.
    """

    def __init__(self, env: Any) -> None:
        import jax

        self.env = env
        self._reset = jax.jit(env.reset)
        self.step = jax.jit(env.step)

    def reset(self, key: Any) -> tuple[Any, Any, Any]:
        """``(key, state, timestep)``: the key split, Jumanji's ``reset`` under the second half."""
        import jax

        key, k = jax.random.split(key)
        state, timestep = self._reset(k)
        return key, state, timestep
