"""What the JaxMARL and Jumanji adapters share: a pure-JAX env's envs, keys, copies and twin.

A pure-JAX env is pure functions whose state travels apart, so hub envs share the env
of one name and config (:func:`made_once`) and its compiled functions
(:func:`compiled_once`); :class:`PureJaxHubEnv` says how such a hub env copies and
pickles, :class:`JaxTwin` is the native twin of ``--against-native``, and
:func:`make_with_config` is a family's config check.

Example:
    >>> make_with_config("jaxmarl/hanabi", "hanabi", {"num_agentz": 2}, {"num_agents"},
    ...                  owner="Hanabi", library=object, label="JaxMARL", fix="")
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'jaxmarl/hanabi': Hanabi takes no keys ['num_agentz']. Accepted keys: 'num_agents'.
"""

from __future__ import annotations

import copy
import functools
import weakref
from collections.abc import Hashable, Mapping
from typing import Any, Callable, ClassVar, Optional

import numpy as np

from marlhub.core import ALL, AgentID, MultiAgentDict
from marlhub.episode.actions import ActionChecker, check_keys
from marlhub.episode.lockstep import Lockstep, NativeTwin
from marlhub.episode.play import Step
from marlhub.episode.status import NOT_RESET, flag, require_running
from marlhub.errors import ConfigError

__all__ = ["SEEDING", "JaxTwin", "PureJaxHubEnv", "compiled_once", "made_once",
           "make_with_config", "seed_key", "seed_keys", "to_numpy"]

#: How a batch of copies is seeded (a batched source's ``seeding``).
SEEDING = ("copy i is seeded seed + i: it walks its own key from jax.random.PRNGKey(seed + i), "
           "so it is the hub env seeded seed + i, step for step (its floats to rounding: XLA "
           "compiles the batch apart from one copy).")


def seed_key(seed: int) -> Any:
    """The key of ``reset(seed=seed)``: ``jax.random.PRNGKey(seed)``."""
    import jax

    return jax.random.PRNGKey(seed)


def seed_keys(seed: int, num_envs: int) -> Any:
    """The keys of a batch: copy ``i`` gets ``jax.random.PRNGKey(seed + i)``."""
    import jax.numpy as jnp

    return jnp.stack([seed_key(seed + i) for i in range(num_envs)])


@functools.lru_cache(maxsize=128)
def made_once(library: Callable[[], Any], name: str, config: tuple[tuple[str, Any], ...]) -> Any:
    """``library().make(name, **config)``, once per library, name and config: a pure-JAX env
    is pure functions (its state travels apart), so hub envs share it and its compiled code."""
    return library().make(name, **dict(config))


#: Each env object's compiled functions, by what they are (XLA compiles them once per env).
_COMPILED: "weakref.WeakKeyDictionary[Any, dict[Hashable, Any]]" = weakref.WeakKeyDictionary()


def compiled_once(env: Any, kind: Hashable, build: Callable[[], Any]) -> Any:
    """``build()``, the ``kind`` of compiled functions of ``env``, made once per env object:
    hub envs of the same env object share them."""
    cached = _COMPILED.setdefault(env, {})
    if kind not in cached:
        cached[kind] = build()
    return cached[kind]


class PureJaxHubEnv:
    """The episode's bookkeeping, and the copy and pickle rules, of a hub env that holds a
    pure-JAX env (a mixin): the env in ``native_attribute``, its compiled functions
    (``_functions(env)``) in ``_fns``, and in ``made_as`` the ``(name, config)`` from
    which ``_make_again`` makes it again."""

    native_attribute: ClassVar[str]
    _make_again: ClassVar["staticmethod[[str, tuple[tuple[str, Any], ...]], Any]"]
    _functions: ClassVar["staticmethod[[Any], Any]"]
    made_as: Optional[tuple[str, dict[str, Any]]]
    possible_agents: list[AgentID]
    np_random: np.random.Generator
    _name: str
    _checker: ActionChecker

    def __init__(self) -> None:
        super().__init__()
        self._key: Any = None
        self._state: Any = None
        self._masks: dict[AgentID, np.ndarray] = {}
        self._actors: list[AgentID] = []
        self._cannot_step: Optional[str] = NOT_RESET
        self.metadata: dict[str, Any] = {"render_modes": []}

    def _start_key(self, seed: Optional[int]) -> Any:
        """The key an episode starts from: ``jax.random.PRNGKey(seed)`` for a seed; unseeded,
        the key the last episode left, or at the first reset one drawn from ``np_random``."""
        if seed is not None:
            return seed_key(seed)
        if self._key is None:
            return seed_key(int(self.np_random.integers(2**31)))
        return self._key

    def _checked_actions(self, action_dict: MultiAgentDict) -> dict[AgentID, Any]:
        """The actors' actions, each checked against its space and mask.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: a missing or extra agent, an action outside its space or mask.
        """
        require_running(self._name, self._cannot_step)
        check_keys(self._name, action_dict, actors=self._actors,
                   possible_agents=self.possible_agents)
        return {a: self._checker.check(a, action_dict[a], self._masks.get(a))
                for a in self._actors}

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        """A copy that goes on alone: the env and its compiled functions are pure and shared,
        the state and key are immutable JAX arrays; the bookkeeping is copied."""
        new = copy.copy(self)
        memo[id(self)] = new
        new.__dict__.update({k: copy.copy(v) for k, v in self.__dict__.items()
                             if k in ("agents", "_actors", "_masks")})
        new.__dict__.update({k: copy.deepcopy(v, memo) for k, v in self.__dict__.items()
                             if k in ("_np_random", "_np_random_seed")})
        return new

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_fns")  # compiled code: made again where unpickled
        if self.made_as is not None:
            state.pop(self.native_attribute)  # made again from its name and config
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.native_attribute not in state:  # the same env object as the family's
            name, config = state["made_as"]
            setattr(self, self.native_attribute,
                    self._make_again(name, tuple(sorted(config.items()))))
        self._fns = self._functions(getattr(self, self.native_attribute))


class JaxTwin(NativeTwin):
    """A pure-JAX env stepped with its own ``reset_fn`` and ``step_fn``, its keys the hub's
    (``jax.random.PRNGKey(seed)``, split before each reset); ``agents`` are the hub's. A
    subclass resets in :meth:`start` and steps, calling :meth:`settle`."""

    def __init__(self, env: Any, reset_fn: Callable[..., Any], step_fn: Callable[..., Any],
                 agents: list[Any]) -> None:
        self.env = env
        self.reset_fn = reset_fn
        self.step_fn = step_fn
        self.agents = agents
        self.key: Any = None
        self.state: Any = None
        self.sums: dict[Any, float] = {}
        self.done = False

    def start(self, key: Any) -> Any:
        """Reset the env under ``key``, keeping its state; return its observations."""
        raise NotImplementedError

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        import jax

        if seed is not None:
            self.key = jax.random.PRNGKey(seed)
        self.key, k = jax.random.split(self.key)
        obs = self.start(k)
        self.sums = dict.fromkeys(self.agents, 0.0)
        self.done = False
        lock.expect("observations", first.obs, self._seen(obs, first.obs), check_dtype=False)

    def settle(self, step: Step, lock: Lockstep, native: Mapping[Any, float], done: bool,
               native_end: str) -> None:
        """Add the native rewards; compare them and the end of the episode with the hub's."""
        self.done = done
        for agent, reward in native.items():
            self.sums[agent] = self.sums.get(agent, 0.0) + reward
        lock.expect("rewards", step.rewards, native, fatal=False, check_dtype=False)
        hub_done = flag(step.terminateds, ALL) or flag(step.truncateds, ALL)
        if hub_done != self.done:
            lock.differ("end of episode", f"hub __all__ done={hub_done}, {native_end}")

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return self.done

    def _seen(self, obs: Any, hub_obs: Mapping[Any, Any]) -> dict[Any, Any]:
        raise NotImplementedError


def to_numpy(tree: Any) -> Any:
    """A pytree of JAX arrays as numpy arrays (one transfer)."""
    import jax

    return jax.device_get(tree)


def make_with_config(env_id: str, rest: str, config: Mapping[str, Any], accepted: set[str], *,
                     owner: str, note: str = "", library: Callable[[], Any], label: str,
                     fix: str, refused: tuple[type[Exception], ...] = (TypeError,),
                     unknown: tuple[str, ...] = ()) -> Any:
    """``library().make(rest, **config)`` (:func:`made_once` where the config is hashable).

    Args:
        accepted: the keys ``owner`` (the env, in messages) takes; ``{"*"}``: any.
        library: imports the library; ``label`` names it in messages.
        note, fix, unknown: the refusals' extra words, fix and ``unknown`` attribute.

    Raises:
        ConfigError: keys not ``accepted``, or ``make`` raised one of ``refused``.
    """
    wrong = sorted(set(config) - accepted)
    if wrong and accepted != {"*"}:
        raise ConfigError(env_id, f"{owner} takes no keys {wrong}{note}", unknown=wrong,
                          accepted=sorted(accepted))
    key = tuple(sorted(dict(config).items()))
    try:
        hash(key)
    except TypeError:  # a list in the config: made anew
        key = ()
    try:
        return made_once(library, rest, key) if key or not config else \
            library().make(rest, **dict(config))
    except refused as exc:
        raise ConfigError(env_id, f"{label} refused the config {dict(config)!r}: {exc}",
                          unknown=unknown, fix=fix) from exc
