"""The ``jumanji/`` family: Jumanji's multi-agent envs, one copy per hub env, N copies per batch.

``jumanji/RobotWarehouse-v0`` is ``jumanji.make("RobotWarehouse-v0", **config)`` as a
hub env (:class:`~marlhub.adapters.jumanji.adapter.JumanjiHubEnv`). The ids are the
envs of Jumanji's registry (``jumanji.registered_environments()``) whose specs have
an agent dimension (:func:`~marlhub.adapters.jumanji.specs.agent_dimension`): each is
made once to read them, except the classes that declare a ``DiscreteArray`` action
(one choice per step: single-agent), which are not made at all (Sokoban would
download its levels). Jumanji 1.1 has six: RobotWarehouse, LevelBasedForaging,
Cleaner, Connector, MMST and SearchAndRescue. The config goes to the env's
constructor (``time_limit``, ``generator``, ...), its keys checked against it first.
``marlhub.make_vec("jumanji/<env>", N)`` is ONE batch under ``jax.vmap``
(:class:`~marlhub.adapters.jumanji.batched.JumanjiBatch`), copy ``i`` seeded
``seed + i``; ``--against-native`` steps Jumanji's own ``reset`` and ``step`` beside it.

Example:
    >>> family = JumanjiFamily()
    >>> family.multi_agent(["Cleaner-v0", "Snake-v1"])
    ['Cleaner-v0']
    >>> family.make("Cleaner-v1", EnvContext())
    Traceback (most recent call last):
    ...
    marlhub.errors.UnknownEnvError: No env is registered as 'jumanji/Cleaner-v1'. Jumanji has no env of that name. Did you mean 'jumanji/Cleaner-v0'? ...
    >>> family.make("Snake-v1", EnvContext())
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'jumanji/Snake-v1': marlhub takes Jumanji's multi-agent envs, and it reports no num_agents (a single-agent env). Use a multi-agent env (`marlhub list jumanji`), or Jumanji's own JumanjiToGymWrapper for a single-agent one.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from marlhub.adapters.jax_env import make_with_config
from marlhub.adapters.jumanji.natives import cached_make, jumanji_module
from marlhub.adapters.jumanji.specs import agent_dimension, layout_of
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import RESOURCE_MEMORY_BOUNDED
from marlhub.errors import UnknownEnvError, closest

__all__ = ["SCENARIO_FAULTS", "JumanjiFamily", "accepted_keys", "env_class"]

#: Rules single Jumanji envs break as the suite measures them, and why (confirmed with
#: Jumanji alone), by the env's name without its version.
SCENARIO_FAULTS: dict[str, dict[str, str]] = {
    "RobotWarehouse": {
        RESOURCE_MEMORY_BOUNDED: (
            "JAX's dispatch of Jumanji's jitted step keeps allocating for dozens of replays "
            "before it levels off (natively, tracemalloc over jax.jit(env.step) alone, one "
            "30-step episode of RobotWarehouse-v0 replayed: +33 KiB over 8 replays, +50 KiB over "
            "24, less each time), so the suite's 8 replays see growth that is JAX's and bounded"),
    },
    "MMST": {
        "target.pettingzoo.parallel": (
            "an MMST agent that has connected its nodes has no legal action left (Jumanji masks "
            "all of its row: utils.make_action_mask clears finished agents) and waits while the "
            "others go on, and PettingZoo's parallel API needs every live agent to act in every "
            "step; the AEC API, or to_pettingzoo(env, turn_based='pad'), takes it"),
    },
}


def env_class(name: str) -> Optional[type]:
    """The class Jumanji's registry makes for ``name``, without making it; None where the
    registry cannot say (Jumanji keeps its entries in ``jumanji.registration._REGISTRY``)."""
    registration = jumanji_module().registration
    spec = getattr(registration, "_REGISTRY", {}).get(name)
    if spec is None:
        return None
    try:
        return typing.cast(type, registration.load(spec.entry_point))
    except (ImportError, AttributeError, ValueError):
        return None


def _declares_one_choice(cls: Optional[type]) -> bool:
    """Whether ``cls`` declares a ``DiscreteArray`` action spec (``Environment[State,
    DiscreteArray, Observation]``): one discrete choice per step, a single-agent env."""
    for klass in getattr(cls, "__mro__", ()):
        for base in getattr(klass, "__orig_bases__", ()):
            args = typing.get_args(base)
            if len(args) == 3 and getattr(args[1], "__name__", "") == "DiscreteArray":
                return True
    return False


def accepted_keys(cls: type) -> set[str]:
    """The keyword arguments ``cls(...)`` takes (Jumanji's envs name each of them)."""
    parameters = list(inspect.signature(cls).parameters.values())
    return {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


class JumanjiFamily:
    """Resolves ``jumanji/<env>`` through Jumanji's registry (see the module docstring)."""

    name = "jumanji"
    description = "Jumanji's multi-agent JAX envs (jumanji.make), batched under jax.vmap"
    #: How worker processes of its copies start: JAX is multithreaded, and a worker forked
    #: from a process that ran it hangs when it uses JAX.
    start_method = "spawn"

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield every env of Jumanji's registry whose specs have an agent dimension."""
        names = sorted(jumanji_module().registered_environments())
        for name in self.multi_agent(names):
            env = cached_make(name, ())
            yield (f"{self.name}/{name}",
                   f"Jumanji's {type(env).__name__}, {agent_dimension(env)[0]} agents")

    def multi_agent(self, names: Sequence[str]) -> list[str]:
        """The names of ``names`` whose env has an agent dimension (each made once)."""
        return [name for name in names if _is_multi_agent(name)]

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``jumanji.make(rest, **config)`` as a hub env.

        Raises:
            UnknownEnvError: ``rest`` is no Jumanji env (with suggestions).
            ConfigError: a single-agent env, or keys its constructor does not take.
        """
        from marlhub.adapters.jumanji.adapter import JumanjiHubEnv

        return JumanjiHubEnv(self._native(rest, config), made_as=(rest, dict(config)))

    def make_batched(self, rest: str, config: EnvContext, num_envs: int) -> Any:
        """Return ``num_envs`` copies of ``rest`` as ONE batch under ``jax.vmap``."""
        from marlhub.adapters.jumanji.batched import JumanjiBatch

        return JumanjiBatch(self._native(rest, config), num_envs, name=f"{self.name}/{rest}")

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules Jumanji itself breaks in ``rest``."""
        return dict(SCENARIO_FAULTS.get(rest.rsplit("-v", 1)[0], {}))

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int = 3,
                 seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
        """Compare ``jumanji/rest`` with Jumanji's own ``reset`` and ``step`` in lockstep."""
        from marlhub.adapters.jumanji.lockstep import compare_with_native

        return compare_with_native(self.make(rest, config), lambda: self._native(rest, config),
                                   episodes=episodes, seed=seed, max_steps=max_steps)

    def _native(self, rest: str, config: EnvContext) -> Any:
        jumanji = jumanji_module()
        env_id = f"{self.name}/{rest}"
        names = sorted(jumanji.registered_environments())
        if rest not in names:
            raise UnknownEnvError(env_id, [f"{self.name}/{n}" for n in closest(rest, names)],
                                  detail="Jumanji has no env of that name.")
        cls = env_class(rest) or type(cached_make(rest, ()))
        accepted = accepted_keys(cls)
        env = make_with_config(env_id, rest, config, accepted, owner=f"Jumanji's {cls.__name__}",
                               library=jumanji_module, label="Jumanji",
                               refused=(TypeError, ValueError),
                               fix=f"Pass the keyword arguments {cls.__name__}'s constructor "
                                   f"takes: {sorted(accepted)}.")
        layout_of(env, env_id)  # a single-agent env: refused here, with the reason
        return env


@functools.lru_cache(maxsize=None)
def _is_multi_agent(name: str) -> bool:
    """Whether Jumanji's ``name`` has an agent dimension (see the module); an env that
    cannot be made here is not listed."""
    if _declares_one_choice(env_class(name)):
        return False
    try:
        env = cached_make(name, ())
    except Exception:  # a backend's failure to build (a download, a missing file)
        return False
    return agent_dimension(env)[0] is not None
