"""The ``jaxmarl/`` family: JaxMARL's own registry, one copy per hub env, N copies per batch.

``jaxmarl/MPE_simple_spread_v3`` is ``jaxmarl.make("MPE_simple_spread_v3", **config)``
as a hub env (:class:`~marlhub.adapters.jaxmarl.adapter.JaxMarlHubEnv`); the ids
are ``jaxmarl.registered_envs``, read when the family is listed or used, less
those that cannot be made here (:data:`UNSUPPORTED`: MABrax without brax, the
JaxRobotarium envs without their submodule, STORM whose observations are not one
per agent). ``marlhub.make_vec("jaxmarl/<env>", N)`` is ONE batch under
``jax.vmap`` (:class:`~marlhub.adapters.jaxmarl.batched.JaxMarlBatch`), copy ``i``
seeded ``seed + i``; ``--against-native`` steps JaxMARL's own ``step`` beside it.

Example:
    >>> family = JaxMarlFamily()
    >>> ids = dict(family.ids())
    >>> "jaxmarl/MPE_simple_spread_v3" in ids and "jaxmarl/hanabi" in ids
    True
    >>> family.make("MPE_simple_spred_v3", EnvContext())
    Traceback (most recent call last):
    ...
    marlhub.errors.UnknownEnvError: No env is registered as 'jaxmarl/MPE_simple_spred_v3'. JaxMARL has no env of that name. Did you mean 'jaxmarl/MPE_simple_spread_v3', ...
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any, Optional

from marlhub.adapters.jax_env import make_with_config
from marlhub.adapters.jaxmarl.natives import _jaxmarl, cached_make
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["SCENARIO_FAULTS", "UNSUPPORTED", "JaxMarlFamily", "cached_make"]

#: JaxMARL ids that marlhub does not make, by prefix, and why.
UNSUPPORTED = {
    "storm": "STORM returns one observation array for all agents, not one per agent",
    "JaxRobotarium_": "the JaxRobotarium envs need JaxMARL's git submodule, which pip does "
                      "not install",
    "LearnedPolicyEnemySMAX": "it needs the parameters of a trained enemy policy",
}
_SMAX_PARALLEL = (
    "SMAX's legal actions (get_avail_actions) are masks in infos, which marlhub enforces, and "
    "PettingZoo's parallel_api_test samples every action from the action space, reading masks "
    "only from observation dicts (PettingZoo 1.25 to 1.27); so it sends illegal moves that the "
    "hub refuses")
#: Rules single JaxMARL envs break as the suite measures them (``target.<api>``: that API's
#: own checker fails).
SCENARIO_FAULTS = {name: {"target.pettingzoo.parallel": _SMAX_PARALLEL}
                   for name in ("SMAX", "HeuristicEnemySMAX")}
#: The MABrax ids, made only where brax is installed.
MABRAX = ("ant_4x2", "halfcheetah_6x1", "hopper_3x1", "humanoid_9|8", "walker2d_2x3")


def _unsupported(name: str) -> Optional[str]:
    for prefix, why in UNSUPPORTED.items():
        if name.startswith(prefix):
            return why
    if name in MABRAX:
        from jaxmarl.environments import MABRAX_AVAILABLE

        if not MABRAX_AVAILABLE:
            return "MABrax needs brax, which is not installed (pip install brax)"
    return None


def accepted_keys(cls: type) -> set[str]:
    """The keyword arguments ``cls(...)`` uses: its ``__init__``'s, and its bases' where it
    passes ``**kwargs`` on; ``{"*"}`` when the last of them still takes any."""
    keys: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]
        keys |= {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                          p.KEYWORD_ONLY)}
        if not any(p.kind == p.VAR_KEYWORD for p in parameters):
            return keys
    return {"*"}


class JaxMarlFamily:
    """Resolves ``jaxmarl/<env>`` through JaxMARL's registry (see the module docstring)."""

    name = "jaxmarl"
    description = "JaxMARL's JAX multi-agent envs (jaxmarl.make), batched under jax.vmap"
    #: How worker processes of its copies start: JAX is multithreaded, and a worker forked
    #: from a process that ran it hangs when it uses JAX.
    start_method = "spawn"

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield every env JaxMARL registers that marlhub can make here."""
        for name in _jaxmarl().registered_envs:
            if _unsupported(name) is None:
                yield f"{self.name}/{name}", f"JaxMARL env {name!r}"

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``jaxmarl.make(rest, **config)`` as a hub env.

        Raises:
            UnknownEnvError: ``rest`` is no JaxMARL env (with suggestions).
            ConfigError: an env marlhub cannot make, or keys the env does not take.
        """
        from marlhub.adapters.jaxmarl.adapter import JaxMarlHubEnv

        return JaxMarlHubEnv(self._native(rest, config), made_as=(rest, dict(config)))

    def make_batched(self, rest: str, config: EnvContext, num_envs: int) -> Any:
        """Return ``num_envs`` copies of ``rest`` as ONE batch under ``jax.vmap``."""
        from marlhub.adapters.jaxmarl.batched import JaxMarlBatch

        return JaxMarlBatch(self._native(rest, config), num_envs)

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules JaxMARL itself breaks in ``rest``."""
        return dict(SCENARIO_FAULTS.get(rest, {}))

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int = 3,
                 seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
        """Compare ``jaxmarl/rest`` with JaxMARL's own ``step`` in lockstep (``--against-native``)."""
        from marlhub.adapters.jaxmarl.lockstep import compare_with_native

        return compare_with_native(self.make(rest, config), lambda: self._native(rest, config),
                                   episodes=episodes, seed=seed, max_steps=max_steps)

    def _native(self, rest: str, config: EnvContext) -> Any:
        jaxmarl = _jaxmarl()
        env_id = f"{self.name}/{rest}"
        if rest not in jaxmarl.registered_envs:
            names = list(jaxmarl.registered_envs)
            raise UnknownEnvError(env_id, [f"{self.name}/{n}" for n in closest(rest, names)],
                                  detail="JaxMARL has no env of that name.")
        why = _unsupported(rest)
        if why is not None:
            raise ConfigError(env_id, f"marlhub does not make it: {why}",
                              fix="Pick another id from `marlhub list jaxmarl`.")
        return make_with_config(
            env_id, rest, config, accepted_keys(type(cached_make(rest, ()))),
            owner=f"JaxMARL's {rest}", note=" (it would ignore them)", library=_jaxmarl,
            label="JaxMARL", unknown=tuple(sorted(config)),
            fix="Pass the keyword arguments the env's constructor takes.")
