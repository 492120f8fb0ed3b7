"""The table of foreign APIs: how each is detected, converted both ways, catalogued and installed.

Everything that needs to know which APIs exist reads :data:`APIS`:
:func:`to_hub` (detection, in table order), :func:`marlhub.convert` (the
targets), the default registry (the families) and error messages (the
descriptions and extras). Entries name modules and functions as strings, so
reading the table imports no backend. A new foreign API is one folder under
``marlhub/adapters/`` and one row here (see CONTRIBUTING.md).

Example:
    >>> [api.name for api in APIS]
    ['pettingzoo', 'openspiel', 'rllib', 'gymnasium', 'torchrl', 'vmas', 'jaxmarl', 'jumanji', 'remote', 'dm_env']
    >>> sorted(TARGETS)
    ['gymnasium', 'gymnasium.tuple', 'marlhub', 'openspiel', 'pettingzoo.aec', 'pettingzoo.parallel', 'rllib', 'torchrl']
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors()
    >>> to_hub(env) is env
    True
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from marlhub.core import MultiAgentEnv, is_multi_agent_env, missing_protocol_members
from marlhub.errors import ConversionError, ProtocolError

__all__ = [
    "APIS",
    "BUILTIN_FAMILIES",
    "TARGETS",
    "Api",
    "Target",
    "api_named",
    "convert",
    "to_hub",
]


@dataclass(frozen=True)
class Target:
    """One API an env can be converted to: ``package.function(hub_env, **fixed, **options)``.

    ``precheck``, when set, names ``package.precheck(make_fresh, **options)``, which
    refuses up front (on a fresh instance) an env the API cannot take by structure;
    ``make(..., to=...)`` calls it, so the refusal comes when the env is made.
    ``simultaneous`` says the API needs every live agent to act in every step: the
    registry then builds an id's natively parallel version where its family has one
    (:meth:`marlhub.registry.Registry.simultaneous_config`).
    """

    package: str
    function: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    precheck: Optional[str] = None
    simultaneous: bool = False

    def converter(self) -> Callable[..., Any]:
        """Return the converter function (imports its adapter package, not its backend)."""
        return getattr(importlib.import_module(self.package), self.function)

    def check_before(self, make_fresh: Callable[[], Any], *, env_id: Optional[str] = None,
                     aec_of_parallel: bool = False, **options: Any) -> None:
        """Run the target's precheck on ``make_fresh()``, if it has one (it raises to refuse).

        Args:
            make_fresh: makes a fresh instance of the env to probe.
            env_id: the registry id it was made from, for messages.
            aec_of_parallel: the env is the AEC version of an env that exists natively
                in parallel (its config chose it), so a refusal can say how to get the
                parallel one.
            options: the converter's options.
        """
        if self.precheck is not None:
            getattr(importlib.import_module(self.package), self.precheck)(
                make_fresh, env_id=env_id, aec_of_parallel=aec_of_parallel, **options)


@dataclass(frozen=True)
class Api:
    """One foreign env API and everything marlhub knows of it.

    Attributes:
        name: the API's short name (``"pettingzoo"``), also its folder's name.
        describes: what its envs are, for error messages.
        detect: the package's ``is_x(obj) -> bool``; it looks at the object's
            type and imports no backend.
        into_hub: the package's ``from_x(native, **options) -> hub env``.
        targets: target name -> function turning a hub env into this API, or
            ``(function, fixed keyword arguments[, precheck[, simultaneous]])`` (see
            :class:`Target`).
        families: ``"module:Class"`` of each of its registry families (none when it
            has no catalogue; PettingZoo's API has several: PettingZoo's own registry,
            mpe2, magent2, momaland, MaMuJoCo and any module).
        extra: the pip extra that installs its backend (``marlhub[extra]``).
        backend: the backend's top-level package.
    """

    name: str
    describes: str
    detect: str
    into_hub: str
    targets: Mapping[str, str | tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], str]
                     | tuple[str, Mapping[str, Any], str, bool]]
    families: tuple[str, ...]
    extra: str
    backend: str

    @property
    def package(self) -> str:
        """The adapter package, ``marlhub.adapters.<name>``."""
        return f"marlhub.adapters.{self.name}"

    def function(self, name: str) -> Callable[..., Any]:
        """Return ``name`` from the adapter package."""
        return getattr(importlib.import_module(self.package), name)

    def detects(self, obj: Any) -> bool:
        """Tell whether ``obj`` is an env of this API."""
        return bool(self.function(self.detect)(obj))

    def target(self, target: str) -> Target:
        """Return the conversion to ``target``, one of :attr:`targets`."""
        spec = self.targets[target]
        if isinstance(spec, str):
            return Target(self.package, spec)
        return Target(self.package, spec[0], spec[1], *spec[2:])


#: Every foreign API, in the order :func:`to_hub` tries them: a PettingZoo env
#: has reset/step/possible_agents too, and an RLlib view is a Gymnasium env.
APIS: tuple[Api, ...] = (
    Api(
        name="pettingzoo",
        describes="a PettingZoo AEC or parallel env",
        detect="is_pettingzoo_env",
        into_hub="from_pettingzoo",
        targets={
            "pettingzoo.aec": ("to_pettingzoo", {"api": "aec"}),
            "pettingzoo.parallel": ("to_pettingzoo", {"api": "parallel"}, "require_simultaneous",
                                    True),
        },
        families=(
            "marlhub.adapters.pettingzoo.family:PettingZooFamily",
            "marlhub.adapters.pettingzoo.family_packages:Mpe2Family",
            "marlhub.adapters.pettingzoo.family_packages:MAgent2Family",
            "marlhub.adapters.pettingzoo.family_momaland:MomalandFamily",
            "marlhub.adapters.pettingzoo.family_mamujoco:MaMuJoCoFamily",
            "marlhub.adapters.pettingzoo.family_module:PettingZooModuleFamily",
        ),
        extra="pettingzoo",
        backend="pettingzoo",
    ),
    Api(
        name="openspiel",
        describes="an OpenSpiel game or state",
        detect="is_openspiel_object",
        into_hub="from_openspiel",
        targets={"openspiel": "to_openspiel"},
        families=("marlhub.adapters.openspiel.family:OpenSpielFamily",),
        extra="openspiel",
        backend="pyspiel",
    ),
    Api(
        name="rllib",
        # Only marlhub's own RLlib views are unwrapped; other RLlib envs are hub
        # envs by duck typing and reach the conformance suite unrepaired.
        describes="an RLlib MultiAgentEnv",
        detect="is_rllib_view_of_hub",
        into_hub="from_rllib",
        targets={"rllib": "to_rllib"},
        families=(),
        extra="rllib",
        backend="ray",
    ),
    Api(
        name="gymnasium",
        describes="a single-agent Gymnasium env",
        detect="is_gymnasium_env",
        into_hub="from_gymnasium",
        targets={"gymnasium": "to_gymnasium", "gymnasium.tuple": "to_gymnasium_tuple"},
        families=(
            "marlhub.adapters.gymnasium.family:GymnasiumFamily",
            "marlhub.adapters.gymnasium.family_tuple:LbforagingFamily",
            "marlhub.adapters.gymnasium.family_tuple:RwareFamily",
        ),
        extra="gymnasium",
        backend="gymnasium",
    ),
    Api(
        name="torchrl",
        describes="a TorchRL multi-agent env (an EnvBase with a group_map)",
        detect="is_torchrl_env",
        into_hub="from_torchrl",
        targets={"torchrl": "to_torchrl"},
        families=(),
        extra="torchrl",
        backend="torchrl",
    ),
    Api(
        name="vmas",
        describes="a VMAS Environment of one copy",
        detect="is_vmas_env",
        into_hub="from_vmas",
        targets={},
        families=("marlhub.adapters.vmas.family:VmasFamily",),
        extra="vmas",
        backend="vmas",
    ),
    Api(
        name="jaxmarl",
        describes="a JaxMARL MultiAgentEnv (pure JAX functions)",
        detect="is_jaxmarl_env",
        into_hub="from_jaxmarl",
        targets={},
        families=("marlhub.adapters.jaxmarl.family:JaxMarlFamily",),
        extra="jaxmarl",
        backend="jaxmarl",
    ),
    Api(
        name="jumanji",
        describes="a multi-agent Jumanji Environment (pure JAX functions)",
        detect="is_jumanji_env",
        into_hub="from_jumanji",
        targets={},
        families=("marlhub.adapters.jumanji.family:JumanjiFamily",),
        extra="jumanji",
        backend="jumanji",
    ),
    Api(
        name="remote",
        describes="dm_env_rpc's DmEnvAdaptor (a dm_env_rpc server's env)",
        detect="is_dm_env_adaptor",
        into_hub="from_dm_env_rpc",
        targets={},
        families=("marlhub.adapters.remote.family:RemoteFamily",),
        extra="remote",
        backend="dm_env_rpc",
    ),
    Api(
        # After `remote`: dm_env_rpc's adaptor is a dm_env too (of one agent).
        name="dm_env",
        describes="a multi-player dm_env Environment (specs and TimeStep values as lists per "
                  "player: dm_control's soccer)",
        detect="is_dm_env",
        into_hub="from_dm_env",
        targets={},
        families=("marlhub.adapters.dm_env.family:DmcSoccerFamily",),
        extra="dmc",
        backend="dm_env",
    ),
)

#: Target name -> conversion; ``"marlhub"`` (the hub itself) maps to None.
TARGETS: dict[str, Optional[Target]] = {
    "marlhub": None,
    **{name: api.target(name) for api in APIS for name in api.targets},
}


#: ``(module, class name)`` of every API's registry family, which the default registry
#: instantiates (their backends are imported only when one of their ids is used).
BUILTIN_FAMILIES: list[tuple[str, str]] = [
    (family.split(":")[0], family.split(":")[1]) for api in APIS for family in api.families
]


def api_named(name: str) -> Api:
    """Return the row of the API called ``name``.

    Raises:
        KeyError: no API has that name.
    """
    for api in APIS:
        if api.name == name:
            return api
    raise KeyError(f"no foreign API is called {name!r}; the APIs are {[a.name for a in APIS]}")


def to_hub(obj: Any, **options: Any) -> Any:
    """Return ``obj`` as a hub env: itself if it follows the protocol, else adapted.

    Args:
        obj: a hub env, an RLlib ``MultiAgentEnv``, or an env of an API in :data:`APIS`.
        options: passed to the adapter's ``from_x`` when one is needed.

    Raises:
        ProtocolError: ``obj`` is of no kind marlhub can adapt.
    """
    if isinstance(obj, MultiAgentEnv):
        return obj
    for api in APIS:
        if api.detects(obj):
            return api.function(api.into_hub)(obj, **options)
    if is_multi_agent_env(obj):
        return obj
    kinds = ", ".join(api.describes for api in APIS)
    raise ProtocolError(
        obj, missing_protocol_members(obj),
        expected=f"a MultiAgentEnv or an env of a supported API ({kinds})",
    )


def convert(env: Any, to: str = "marlhub", **options: Any) -> Any:
    """Return ``env`` in the API named by ``to``, going through the hub.

    Args:
        env: an env of any supported API (see the module docstring).
        to: ``"marlhub"``, ``"pettingzoo.aec"``, ``"pettingzoo.parallel"``,
            ``"openspiel"``, ``"gymnasium"``, ``"gymnasium.tuple"`` (EPyMARL's
            Tuple convention), ``"rllib"`` (Ray needed) or ``"torchrl"`` (TorchRL needed).
        options: passed to the target's converter (``to_gymnasium(agent_id=...)``,
            ``to_openspiel(short_name=...)``, ``to_pettingzoo(turn_based=...)``,
            ``to_torchrl(group_map=...)``).

    Raises:
        ConversionError: ``to`` names no supported API (a ``ValueError``).
        ProtocolError: ``env`` is of no supported kind (the message lists them).
        MissingDependencyError: the target's backend is not installed.
    """
    if to not in TARGETS:
        raise ConversionError(to, list(TARGETS))
    hub = to_hub(env)
    target = TARGETS[to]
    if target is None:
        if options:
            raise TypeError(f"convert(..., to='marlhub') takes no options, got {sorted(options)}.")
        return hub
    return target.converter()(hub, **target.fixed, **options)
