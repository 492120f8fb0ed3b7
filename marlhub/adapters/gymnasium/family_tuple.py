"""The ``lbforaging/`` and ``rware/`` families: EPyMARL's benchmarks, from their own registries.

Level-Based Foraging (``lbforaging`` 2) and the Multi-Robot Warehouse (``rware``
2) register their envs in Gymnasium's registry when imported
(``Foraging-8x8-2p-3f-v3``, ``rware-tiny-2ag-v2``); each id is the family's id of
the same name (``lbforaging/Foraging-8x8-2p-3f-v3``), an env of the Tuple
convention made a hub env with agents ``agent_0 .. agent_{n-1}``
(:class:`~marlhub.adapters.gymnasium.TupleAgentsEnv`). The config goes to
``gymnasium.make`` (``max_episode_steps``, ``render_mode``, the env's own
keyword arguments such as ``sight`` or ``reward_type``); a key it rejects raises
:class:`~marlhub.errors.ConfigError` listing the accepted ones. Gymnasium's passive
checker is off unless the config sets ``disable_env_checker``: it warns that a
list of rewards is no float, which is the convention.

The ids each package registers only when asked (lbforaging's
``register_grid_envs``: ``Foraging-grid-...``; rware's ``image_registration``:
``rware-img-...``, ``rware-imgdict-...``) are registered the first time such an
id is made; they are not listed.

Example:
    >>> from marlhub.context import EnvContext
    >>> family = LbforagingFamily()
    >>> "lbforaging/Foraging-8x8-2p-3f-v3" in dict(family.ids())
    True
    >>> env = family.make("Foraging-8x8-2p-3f-v3", EnvContext({"sight": 2}))
    >>> env.possible_agents, env.get_action_space("agent_0")
    (['agent_0', 'agent_1'], Discrete(6))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import SEED_REPRODUCIBLE
from marlhub.errors import UnknownEnvError, closest

__all__ = ["LbforagingFamily", "RwareFamily", "TupleFamily", "known_faults_of_entry_point"]


class TupleFamily:
    """The Tuple-convention envs a package registers in Gymnasium's registry, by their ids.

    Subclasses name the package (:attr:`package`), the entry point its envs are
    registered with, the marlhub extra that installs it, and how to describe an id.
    """

    name = ""
    description = ""
    #: The package that registers the envs when imported.
    package = ""
    #: The ``entry_point`` string of its envs' registrations.
    entry_point = ""
    #: The marlhub extra that installs :attr:`package`.
    extra = "epymarl"
    #: How ``marlhub list`` calls its envs.
    env_label = ""
    #: The registration keyword arguments that ``marlhub list`` shows.
    shown: tuple[str, ...] = ()
    #: Id prefix -> the package's function that registers the ids with that prefix.
    on_demand: Mapping[str, str] = {}
    #: ``{rule id: reason}`` that every env of the package is known to break natively.
    faults: Mapping[str, str] = {}

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break."""
        return dict(self.faults)

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every env the package registered on import.

        Raises:
            MissingDependencyError: the package is not installed (names the extra).
        """
        self._backend()
        for env_id, spec in sorted(gym.registry.items()):
            if spec.entry_point == self.entry_point:
                yield f"{self.name}/{env_id}", self._describe(spec)

    def make(self, rest: str, config: EnvContext) -> Any:
        """Build ``<family>/<rest>``: ``gymnasium.make(rest, **config)`` as a hub env.

        Raises:
            UnknownEnvError: the package registers no env ``rest`` (with close matches).
            ConfigError: ``gymnasium.make`` or the env rejects a key.
            MissingDependencyError: the package is not installed.
        """
        from marlhub.adapters.gymnasium.lockstep import native_tuple_env
        from marlhub.adapters.gymnasium.tuple_agents import TupleAgentsEnv

        self._require_known(rest)
        return TupleAgentsEnv(native_tuple_env(rest, dict(config)))

    def lockstep(
        self, rest: str, config: EnvContext, *, episodes: int, seed: int, max_steps: int
    ) -> list[Finding]:
        """Compare ``<family>/<rest>`` with the package's own env, stepped with the same tuples.

        See :func:`marlhub.adapters.gymnasium.compare_tuple_with_native`.
        """
        from marlhub.adapters.gymnasium.lockstep import compare_tuple_with_native

        self._require_known(rest)
        return compare_tuple_with_native(rest, dict(config), episodes=episodes, seed=seed,
                                         max_steps=max_steps)

    def _backend(self) -> Any:
        return import_backend(self.package, package=self.package, extra=self.extra,
                              feature=f"The {self.name}/ env family")

    def _require_known(self, rest: str) -> None:
        module = self._backend()
        if self._ours(rest):
            return
        for prefix, function in self.on_demand.items():
            # Once: registering an id twice makes Gymnasium warn.
            if rest.startswith(prefix) and not any(i.startswith(prefix) for i in gym.registry):
                getattr(module, function)()
        if not self._ours(rest):
            prefix = self.name + "/"
            known = [i for i, spec in gym.registry.items() if spec.entry_point == self.entry_point]
            raise UnknownEnvError(prefix + rest, [prefix + i for i in closest(rest, known)],
                                  f"{self.package} registers no env of that id.")

    def _ours(self, rest: str) -> bool:
        spec = gym.registry.get(rest)
        return spec is not None and spec.entry_point == self.entry_point

    def _describe(self, spec: Any) -> str:
        shown = ", ".join(f"{k}={spec.kwargs[k]!r}" for k in self.shown if k in spec.kwargs)
        return f"{self.env_label} ({shown}); config gymnasium.make keys"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}/...>"


class LbforagingFamily(TupleFamily):
    """``lbforaging/<id>``: Level-Based Foraging, as ``lbforaging`` registers it."""

    name = "lbforaging"
    description = (
        "Level-Based Foraging by its Gymnasium id (lbforaging/Foraging-8x8-2p-3f-v3), agents "
        "agent_0..n-1; config: gymnasium.make keys"
    )
    package = "lbforaging"
    entry_point = "lbforaging.foraging:ForagingEnv"
    env_label = "Level-Based Foraging"
    shown = ("field_size", "players", "max_num_food", "sight", "force_coop")
    on_demand = {"Foraging-grid": "register_grid_envs"}
    faults = {
        SEED_REPRODUCIBLE: (
            "lbforaging 2.0.0's reset(seed=s) places each player on a cell that none of the "
            "players' positions of the last episode holds (spawn_players tests the old ones), so "
            "a seed gives another episode on an env that played one; reproduce: env = "
            "gym.make('Foraging-8x8-2p-3f-v3'); env.reset(seed=0); play an episode to its end; "
            "env.reset(seed=0) observes other positions"),
        "target.gymnasium": (
            "Gymnasium's check_env resets one env twice with one seed and compares the "
            "steps, which lbforaging 2.0.0 does not reproduce (see seed.reproducible)"),
        "target.gymnasium.tuple": (
            "Gymnasium's check_env on lbforaging 2.0.0 itself fails as on the converted env "
            "(check_env(gym.make('Foraging-8x8-2p-1f-v3').unwrapped): 'The `.np_random` is "
            "not properly been updated after step', or other observations under one seed)"),
    }


class RwareFamily(TupleFamily):
    """``rware/<id>``: the Multi-Robot Warehouse, as ``rware`` registers it."""

    name = "rware"
    description = (
        "Multi-Robot Warehouse by its Gymnasium id (rware/rware-tiny-2ag-v2), agents "
        "agent_0..n-1; config: gymnasium.make keys"
    )
    package = "rware"
    entry_point = "rware.warehouse:Warehouse"
    env_label = "Multi-Robot Warehouse"
    shown = ("n_agents", "shelf_rows", "shelf_columns", "request_queue_size")
    on_demand = {"rware-img": "image_registration"}


def known_faults_of_entry_point(entry_point: Any) -> dict[str, str]:
    """The known faults of the package whose envs are registered with ``entry_point``.

    For the ``gymnasium/`` family, which reaches the same envs by their Gymnasium ids.

    Example:
        >>> sorted(known_faults_of_entry_point("lbforaging.foraging:ForagingEnv"))
        ['seed.reproducible', 'target.gymnasium', 'target.gymnasium.tuple']
    """
    for family in (LbforagingFamily, RwareFamily):
        if family.entry_point == entry_point:
            return dict(family.faults)
    return {}
