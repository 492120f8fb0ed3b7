"""The seam through which whole catalogues of envs join the registry.

An id is either a plain ``name`` (one registered creator) or ``family/rest``.
A :class:`Family` owns every id under its prefix and resolves it lazily through
its library's own catalogue (``pettingzoo/classic/tictactoe-v3`` through
PettingZoo's registry, ``openspiel/kuhn_poker(players=3)`` through
``pyspiel.load_game``, ``gymnasium/CartPole-v1`` through ``gymnasium.make``),
so nothing is imported until an id of that family is used.

Three methods are optional: ``lockstep(rest, config, *, episodes, seed,
max_steps) -> list[Finding]`` compares an env with its native twin (``marlhub
check --against-native``), ``known_faults(rest) -> {rule id: reason}``
names rules the *native* env itself breaks (an upstream bug), whose findings
the conformance suite then reports as warnings that say so, and
``served_id(rest, config) -> id or None`` names the registry id an env of the
family stands for (a ``remote/`` env: the id its server serves), whose known
faults are then the env's too. A family whose envs cannot run in a worker forked from
this process (JAX's: ``jaxmarl/``, ``jumanji/``) says how its workers start,
``start_method = "spawn"``, which ``marlhub check --vector`` follows. The PettingZoo
families also have ``parallel_config(rest, config) -> config or None``: the config that builds the
env's native parallel version, which the registry uses when every agent must
act in every step (:meth:`marlhub.registry.Registry.simultaneous_config`).

Families are registered on a :class:`~marlhub.registry.Registry` with
``registry.register_family(family)``; the built-in families live beside their
adapters and are added to the default registry when marlhub is imported,
without importing their backend.

Example:
    >>> class Echo:
    ...     name = "echo"
    ...     description = "envs named after their argument"
    ...     def ids(self):
    ...         return [("echo/a", "the env a")]
    ...     def make(self, rest, config):
    ...         return rest
    >>> isinstance(Echo(), Family)
    True
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from marlhub.context import EnvContext

__all__ = ["Family"]


@runtime_checkable
class Family(Protocol):
    """A resolver for every id that starts with ``name + "/"``.

    Attributes:
        name: the id prefix, without the slash (``"openspiel"``).
        description: one line for ``marlhub list``.
    """

    name: str
    description: str

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(full_id, one_line_description)`` for every env the family can make now.

        Raises:
            MissingDependencyError: when the family's backend is not installed.
        """
        ...

    def make(self, rest: str, config: EnvContext) -> Any:
        """Build the env for ``family/rest`` with ``config``.

        Returns any supported env type; the registry converts it to the hub.

        Raises:
            UnknownEnvError: ``rest`` names nothing in the catalogue (with suggestions).
            ConfigError: the config has keys or values the env does not accept.
            MissingDependencyError: the backend is not installed.
        """
        ...
