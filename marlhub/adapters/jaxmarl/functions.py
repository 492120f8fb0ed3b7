"""JaxMARL's functions as the hub calls them: one key discipline, jitted once, vmapped for batches.

A JaxMARL env is pure functions of a PRNG key and a state. marlhub derives every
key the way JaxMARL's own examples do, so an episode replays with JaxMARL alone::

    key = jax.random.PRNGKey(seed)              # reset(seed=seed)
    key, k = jax.random.split(key)
    obs, state = env.reset(k)
    while True:                                  # each step
        key, k = jax.random.split(key)
        obs, state, rewards, dones, infos = env.step(k, state, actions)

One copy calls JaxMARL's own jitted ``env.reset`` and ``env.step`` with these
keys, so its values are JaxMARL's bit for bit; only where ``dones["__all__"]``
comes, where ``env.step`` returns the next episode's first observation, the
true last one is ``env.step_env`` under the key JaxMARL's ``step`` gives it
(``jax.random.split(k)[0]``). A reset without a seed goes on with the key
where the last episode left it.

:class:`JaxFunctions` holds these functions of one env, jitted;
:func:`key_functions` gives them unjitted, which a batch of copies vmaps (copy ``i``
seeded ``seed + i`` walks its own key, so it is the hub env seeded ``seed + i``;
XLA compiles the batch apart from one copy, so its floats agree with one
copy's to rounding, :data:`BATCH_RTOL`, not bit for bit).

Example:
    >>> import jaxmarl
    >>> fns = JaxFunctions(jaxmarl.make("MPE_simple_spread_v3"))
    >>> key, obs, state = fns.reset(fns.seed_key(0))
    >>> sorted(obs), obs["agent_0"].shape
    (['agent_0', 'agent_1', 'agent_2'], (18,))
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from marlhub.adapters.jax_env import compiled_once, seed_key, seed_keys

__all__ = ["BATCH_RTOL", "TURN_BASED", "JaxFunctions", "functions_for", "is_turn_based",
           "key_functions", "mask_function"]

#: JaxMARL's turn-based games: every agent sends an action each step, and those whose turn it
#: is not have one legal action (a no-op). Classes by name, any in the env's MRO.
TURN_BASED = ("HanabiGame",)


def is_turn_based(env: Any) -> bool:
    """Whether ``env`` is one of JaxMARL's turn-based games (:data:`TURN_BASED`)."""
    return any(cls.__name__ in TURN_BASED for cls in type(env).__mro__)

#: How far a batch's floats may be from one copy's (relative): XLA compiles the vmapped
#: step apart, and its fusions round differently (SMAX: 1.3e-08 where one copy has 0.0).
BATCH_RTOL = 1e-5


def functions_for(env: Any) -> "JaxFunctions":
    """Return :class:`JaxFunctions` of ``env``, made once per env object: a JaxMARL env is
    pure functions, so hub envs of the same env object share them (and XLA compiles once)."""
    return compiled_once(env, JaxFunctions, lambda: JaxFunctions(env))


def mask_function(env: Any) -> Optional[Callable[[Any], Any]]:
    """The env's legal-action function (``get_avail_actions``, Hanabi's ``get_legal_moves``),
    or None when it has none (JaxMARL's base class raises ``NotImplementedError``)."""
    import jax

    for name in ("get_legal_moves", "get_avail_actions"):
        fn = getattr(env, name, None)
        if fn is None:
            continue
        try:
            jax.eval_shape(fn, jax.eval_shape(env.reset, jax.random.PRNGKey(0))[1])
        except NotImplementedError:
            continue
        return fn
    return None


def key_functions(env: Any) -> tuple[Callable[..., Any], Callable[..., Any],
                                     Optional[Callable[..., Any]]]:
    """One copy's ``reset(key)``, ``step_env(key, state, actions)`` and ``legal(state)``, not
    jitted, walking the key as the module says (the batch vmaps them, one copy jits them).

    ``reset`` returns ``(key, obs, state)``; ``step_env`` returns
    ``(key, obs, state, rewards, dones, infos)`` with JaxMARL's ``step_env`` under the key
    its own ``step`` gives it (no automatic reset); ``legal`` returns the env's legal-action
    masks per agent, and is None where the env has none.
    """
    import jax

    masks = mask_function(env)

    def reset(key: Any) -> Any:
        key, k = jax.random.split(key)
        obs, state = env.reset(k)
        return key, obs, state

    def step_env(key: Any, state: Any, actions: Any) -> Any:
        key, k = jax.random.split(key)
        k_step, _ = jax.random.split(k)  # the key JaxMARL's own step gives step_env
        obs, state, rewards, dones, infos = env.step_env(k_step, state, actions)
        return key, obs, state, rewards, dones, infos

    return reset, step_env, masks


class JaxFunctions:
    """One JaxMARL env's reset, step and legal actions for one copy, jitted (see the module).

    Args:
        env: a JaxMARL ``MultiAgentEnv``.
    """

    def __init__(self, env: Any) -> None:
        import jax

        self.env = env
        reset, step_env, legal = key_functions(env)
        self.has_masks = legal is not None
        self.legal = jax.jit(legal if legal is not None else lambda state: {})
        self.reset = reset  # JaxMARL's own jitted env.reset, called as its examples do
        self.step = self._own_step
        self._final = jax.jit(step_env)

    def _own_step(self, key: Any, state: Any, actions: Any) -> Any:
        """JaxMARL's own ``env.step``; at the end of an episode, the true last observations and
        state (``env.step`` has already reset them)."""
        import jax

        new_key, k = jax.random.split(key)
        obs, new_state, rewards, dones, infos = self.env.step(k, state, actions)
        if bool(dones["__all__"]):
            _, obs, new_state, _, _, _ = self._final(key, state, actions)
        return new_key, obs, new_state, rewards, dones, infos

    seed_key = staticmethod(seed_key)
    seed_keys = staticmethod(seed_keys)
