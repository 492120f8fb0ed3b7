"""The ``vmas/`` family: every scenario of VMAS's own catalogue, one copy each.

``vmas/balance`` is ``vmas.make_env("balance", num_envs=1, **config)`` as a hub
env (:class:`~marlhub.adapters.vmas.adapter.VmasHubEnv`). The ids are VMAS's
lists ``vmas.scenarios``, ``vmas.mpe_scenarios`` and ``vmas.debug_scenarios``,
read when the family is listed or used; nothing is tabled here. The config
goes to ``vmas.make_env``: its own keys (``max_steps``, ``continuous_actions``,
``device``, ``dict_spaces``, ``multidiscrete_actions``, ``clamp_actions``,
``terminated_truncated``) and the scenario's (``n_agents``...). A key the
scenario does not use is refused (VMAS itself only warns), and so is
``num_envs`` other than 1 (a hub env is one copy: ``marlhub.make_vec`` batches).

VMAS episodes never end unless the scenario ends them or ``max_steps`` is set,
so the family sets ``max_steps`` to :data:`DEFAULT_MAX_STEPS` (100, the
horizon BenchMARL's VMAS tasks use) unless the config says otherwise
(``{"max_steps": None}``: no limit). The limit is reported as truncation.

Example:
    >>> family = VmasFamily()
    >>> ids = dict(family.ids())
    >>> "vmas/balance" in ids and "vmas/simple_spread" in ids
    True
    >>> env = family.make("navigation", EnvContext({"n_agents": 2}))
    >>> env.possible_agents
    ['agent_0', 'agent_1']
    >>> family.make("navigation", EnvContext({"n_agent": 2}))
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'vmas/navigation': the scenario does not use the keys ['n_agent'] (VMAS: Scenario kwargs: {'n_agent': 2} passed but not used by the scenario.). Pass vmas.make_env's own keys ('clamp_actions', 'continuous_actions', 'device', 'dict_spaces', 'grad_enabled', 'max_steps', 'multidiscrete_actions', 'terminated_truncated') or the keys the scenario's make_world reads.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any, Optional

from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import (
    EQUIV_TRAJECTORY,
    RESOURCE_MEMORY_BOUNDED,
    SEED_REPRODUCIBLE,
    VECTOR_RESET_INFOS,
)
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["VmasFamily"]

#: ``vmas.make_env``'s own keyword arguments that a config may set.
MAKE_ENV_KEYS = ("clamp_actions", "continuous_actions", "device", "dict_spaces", "grad_enabled",
                 "max_steps", "multidiscrete_actions", "terminated_truncated")
#: The time limit of a ``vmas/`` env unless its config sets ``max_steps``.
DEFAULT_MAX_STEPS = 100
#: Rules every VMAS scenario breaks natively, as the conformance suite measures them.
KNOWN_FAULTS = {
    RESOURCE_MEMORY_BOUNDED: (
        "VMAS's own step loop keeps allocating for dozens of episodes before it levels off "
        "(natively, tracemalloc: +105 KiB over 8 replays of a balance episode, +121 KiB over "
        "32), so the suite's 8 replays see growth that is VMAS's and bounded"),
    "target.pettingzoo.parallel": (
        "VMAS's reset infos are the reward terms of the last step before the reset, not of the "
        "new episode, so a later reset(seed=s) gives other infos than the first one (natively, "
        "VMAS 1.5.2: env = vmas.make_env('balance', num_envs=1, seed=0, dict_spaces=True); "
        "env.reset(seed=0, return_info=True)[1]['agent_0']['pos_rew'] is 0.0, then after three "
        "steps of [[0.5, 0.5]] each it is -0.0038), which PettingZoo's parallel seed test can "
        "see"),
    VECTOR_RESET_INFOS: (
        "VMAS's reset infos are the reward terms of the last step the simulator made, and a "
        "batch (make_vec('vmas/...', N): one VMAS env) steps every copy in every call, the copy "
        "that ended included, before VMAS's reset_at resets it; so under next_step a copy's "
        "reset infos are those of that extra step, where a separate env's are those of its final "
        "step. Observations, rewards and ends agree"),
}
#: Rules single scenarios break natively (``target.<api>``: that API's own checker fails).
SCENARIO_FAULTS = {
    "road_traffic": {
        SEED_REPRODUCIBLE: (
            "VMAS's road_traffic gives another first episode than the later ones under the same "
            "seed (natively: reset(seed=0) and the same step three times pay agent_0 0.0255, "
            "then 0.0226, 0.0226)"),
        "target.gymnasium": (
            "VMAS's road_traffic gives another first episode than the later ones under the same "
            "seed, so Gymnasium's check_env, which replays a seeded step, sees other rewards"),
        "target.gymnasium.tuple": (
            "VMAS's road_traffic gives another first episode than the later ones under the same "
            "seed, so Gymnasium's check_env, which replays a seeded step, sees other rewards"),
        EQUIV_TRAJECTORY: (
            "VMAS's road_traffic pays the first step after a reset by the action given before "
            "it (natively, VMAS 1.5.2, one copy: three steps, reset(seed=0), one step of 0.2 "
            "pays agent_0 0.0165 when the third step was 0.0, 0.0091 when it was 0.5), and a "
            "batch steps a copy that ended with its slots' zero actions where TorchRL's "
            "VmasEnv passes the policy's"),
    },
    "wind_flocking": {
        SEED_REPRODUCIBLE: (
            "VMAS's wind_flocking carries state from episode to episode under the same seed "
            "(natively: reset(seed=0) and the same step three times give agent_0's second "
            "observation -0.016130, -0.016071, -0.016072)"),
        "target.gymnasium": (
            "VMAS's wind_flocking carries state from episode to episode under the same seed, so "
            "Gymnasium's check_env, which replays a seeded step, sees other observations"),
        "target.gymnasium.tuple": (
            "VMAS's wind_flocking carries state from episode to episode under the same seed, so "
            "Gymnasium's check_env, which replays a seeded step, sees other observations"),
    },
}
_CATALOGUES = (("scenarios", "scenario"), ("mpe_scenarios", "MPE scenario"),
               ("debug_scenarios", "debug scenario"))


def _vmas() -> Any:
    return import_backend("vmas", package="vmas", extra="vmas", feature="The vmas/ env family",
                          provides=("torch",))


class VmasFamily:
    """Resolves ``vmas/<scenario>`` through VMAS's scenario catalogue (see the module docstring)."""

    name = "vmas"
    description = "VMAS's vectorized multi-robot scenarios, one copy each (vmas.make_env)"

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield every scenario VMAS lists, with its catalogue."""
        vmas = _vmas()
        for attribute, kind in _CATALOGUES:
            for scenario in getattr(vmas, attribute, ()):
                yield f"{self.name}/{scenario}", f"VMAS {kind} {scenario!r}"

    def scenarios(self) -> list[str]:
        """Every scenario name VMAS lists."""
        return [full.split("/", 1)[1] for full, _ in self.ids()]

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``vmas.make_env(rest, num_envs=1, **config)`` as a hub env.

        Raises:
            UnknownEnvError: ``rest`` is no VMAS scenario (with suggestions).
            ConfigError: ``num_envs`` other than 1, ``wrapper``, or keys the scenario
                does not use.
        """
        vmas = _vmas()
        self._check_scenario(rest)
        kwargs = _make_env_kwargs(f"{self.name}/{rest}", config)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            native = vmas.make_env(rest, num_envs=1, **kwargs)
        _refuse_unused(f"{self.name}/{rest}", caught)
        from marlhub.adapters.vmas import from_vmas

        return from_vmas(native)

    def make_batched(self, rest: str, config: EnvContext, num_envs: int) -> Any:
        """Return ONE ``vmas.make_env(rest, num_envs=num_envs, **config)`` as a batched source.

        ``marlhub.make_vec("vmas/<scenario>", N)`` holds it
        (:class:`~marlhub.adapters.vmas.batched.VmasBatch`); the config is the one
        :meth:`make` takes.

        Raises:
            UnknownEnvError: ``rest`` is no VMAS scenario (with suggestions).
            ConfigError: ``num_envs``, ``wrapper``, or keys the scenario does not use.
        """
        vmas = _vmas()
        self._check_scenario(rest)
        kwargs = _make_env_kwargs(f"{self.name}/{rest}", config)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            native = vmas.make_env(rest, num_envs=num_envs, **kwargs)
        _refuse_unused(f"{self.name}/{rest}", caught)
        from marlhub.adapters.vmas.batched import VmasBatch

        return VmasBatch(native)

    def batched_lockstep(self, rest: str, config: EnvContext, envs: Any, *,
                         seed: int = 0, steps: int = 30) -> list[Finding]:
        """Compare ``envs`` (``make_vec("vmas/rest", N)``) with a native VMAS batch in lockstep."""
        from marlhub.adapters.vmas.lockstep import compare_batch_with_native

        def make_native() -> Any:
            return _vmas().make_env(rest, num_envs=envs.num_envs,
                                    **_make_env_kwargs(f"{self.name}/{rest}", config))

        return compare_batch_with_native(envs, make_native, seed=seed, steps=steps)

    def _check_scenario(self, rest: str) -> None:
        scenarios = self.scenarios()
        if rest not in scenarios:
            raise UnknownEnvError(f"{self.name}/{rest}",
                                  [f"{self.name}/{s}" for s in closest(rest, scenarios)],
                                  detail="VMAS has no scenario of that name.")

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules VMAS itself breaks in scenario ``rest``."""
        return {**KNOWN_FAULTS, **SCENARIO_FAULTS.get(rest, {})}

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int = 3,
                 seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
        """Compare ``vmas/rest`` with a native VMAS env in lockstep (``--against-native``)."""
        from marlhub.adapters.vmas.lockstep import compare_with_native

        def make_native() -> Any:
            return _vmas().make_env(rest, num_envs=1, **_make_env_kwargs(rest, config))

        return compare_with_native(self.make(rest, config), make_native, episodes=episodes,
                                   seed=seed, max_steps=max_steps)


def _make_env_kwargs(env_id: str, config: EnvContext) -> dict[str, Any]:
    kwargs = {"max_steps": DEFAULT_MAX_STEPS, **config}
    if kwargs.pop("num_envs", 1) != 1:
        raise ConfigError(env_id, "num_envs is not a config key: a hub env is one copy of the "
                          "scenario, and make_vec's num_envs sizes the batch",
                          fix="Leave num_envs out, and batch copies with marlhub.make_vec("
                              f"{env_id!r}, num_envs=N) (one VMAS env of N copies).")
    for key in ("wrapper", "wrapper_kwargs", "scenario", "seed"):
        if key in kwargs:
            raise ConfigError(env_id, f"{key!r} is set by marlhub", unknown=[key],
                              fix="Leave it out: the hub env is VMAS's own Environment, seeded "
                                  "by reset(seed=...).")
    return kwargs


def _refuse_unused(env_id: str, caught: list[warnings.WarningMessage]) -> None:
    """Raise for VMAS's "kwargs passed but not used" warning; re-issue every other warning."""
    for warning in caught:
        text = str(warning.message)
        if text.startswith("Scenario kwargs:"):
            unused = re.findall(r"'([^']+)':", text.split("passed")[0])
            raise ConfigError(
                env_id, f"the scenario does not use the keys {unused} (VMAS: {text.split(' This')[0]})",
                unknown=unused, accepted=MAKE_ENV_KEYS,
                fix=f"Pass vmas.make_env's own keys ({', '.join(map(repr, MAKE_ENV_KEYS))}) or "
                    "the keys the scenario's make_world reads.")
        warnings.warn_explicit(warning.message, warning.category, warning.filename,
                               warning.lineno)
