"""The :class:`Registry`: string ids to env creators, families and entry points.

How an id is resolved by :meth:`Registry.make`, first match wins:

1. a name registered with :meth:`Registry.register` (the built-in envs too);
2. ``prefix/rest`` where a family named ``prefix`` is registered: the family
   makes ``rest`` (ids under a family's prefix cannot be registered one by one);
3. an entry point of the registry's group (see :mod:`marlhub.registry.entry_points`),
   discovered once, on first need, and imported when its id is made.

Creators follow RLlib: ``creator(config)`` where ``config`` is an
:class:`~marlhub.context.EnvContext`; a creator that takes no positional
argument (an env class without constructor arguments) is called without it and
accepts no config keys. What a creator returns goes through
:func:`marlhub.adapters.to_hub`, so it may return an env of any supported API.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> registry = Registry()
    >>> def make_rps(config):
    ...     '''Rock-paper-scissors from the RLlib docs.'''
    ...     return RockPaperScissors(config)
    >>> _ = registry.register("my_rps", make_rps)
    >>> registry.registered("my_*"), registry.entries("my_*")
    (['my_rps'], [('my_rps', 'Rock-paper-scissors from the RLlib docs.')])
    >>> sorted(registry.make("my_rps").possible_agents)
    ['player1', 'player2']
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any, Callable, Optional, cast

from marlhub.adapters.apis import TARGETS, convert, to_hub
from marlhub.adapters.family import Family
from marlhub.context import EnvContext
from marlhub.errors import (
    ConfigError,
    EntryPointError,
    EnvCreationError,
    EnvRegistrationError,
    MarlhubError,
    MarlhubWarning,
    MissingDependencyError,
    ProtocolError,
    UnknownEnvError,
    closest,
)
from marlhub.registry.entry_points import EntryPointEnv, discover
from marlhub.registry.ids import (
    pattern_reaches,
    split_id,
    validate_family_name,
    validate_name,
)
from marlhub.registry.parallel import aec_of_parallel, simultaneous_config
from marlhub.registry.spec import EnvSpec, Listing, RegistryProblem

__all__ = ["Registry"]


class Registry:
    """A table of env ids: explicit registrations, families and (optionally) entry points.

    Instances are independent; :func:`marlhub.registry.default_registry` is the
    one behind ``marlhub.make``. All methods are thread-safe.

    Args:
        entry_point_group: the entry point group to discover envs from
            (``"marlhub.envs"`` for the default registry); None discovers none.
    """

    def __init__(self, *, entry_point_group: Optional[str] = None) -> None:
        self._specs: dict[str, EnvSpec] = {}
        self._families: dict[str, Family] = {}
        self._entry_point_group = entry_point_group
        self._entry_points: Optional[dict[str, EntryPointEnv]] = None
        self._discovery_problems: list[RegistryProblem] = []
        self._problems: list[RegistryProblem] = []
        self._lock = threading.RLock()

    # -- registration ------------------------------------------------------------

    def register(
        self,
        name: str,
        creator: Callable[..., Any],
        *,
        overwrite: bool = False,
        description: Optional[str] = None,
    ) -> EnvSpec:
        """Register ``creator`` under ``name``; return its spec.

        Args:
            name: the id; a ``prefix/name`` is allowed while no family claims ``prefix``.
            creator: an env class or a function ``creator(config)`` returning an env.
            overwrite: replace an existing registration of ``name``.
            description: one line for ``marlhub list``; defaults to the creator's
                ``description`` attribute or its docstring's first line.

        Raises:
            EnvRegistrationError: the name is malformed, taken (without
                ``overwrite=True``) or under a family's prefix, or the creator
                is not callable.
        """
        validate_name(name)
        if not callable(creator):
            raise EnvRegistrationError(
                name,
                f"the creator must be callable, got {type(creator).__name__} {creator!r:.60}",
                "Pass an env class or a function that takes the config and returns an env.",
            )
        if description is not None and not isinstance(description, str):
            raise EnvRegistrationError(
                name,
                f"description must be a string, got {type(description).__name__}",
                "Pass one line of text, or leave it out to use the creator's docstring.",
            )
        spec = EnvSpec.of(name, creator, description)
        with self._lock:
            prefix, _ = split_id(name)
            if prefix is not None and prefix in self._families:
                raise EnvRegistrationError(
                    name,
                    f"ids under {prefix + '/'!r} belong to the family {prefix!r}, which resolves "
                    "them itself",
                    "Register it under another prefix, e.g. 'mypkg/...'.",
                )
            if name in self._specs and not overwrite:
                raise EnvRegistrationError(
                    name,
                    f"the name is taken by {self._specs[name].creator!r:.80}",
                    "Pass overwrite=True to replace it, or unregister it first.",
                )
            self._specs[name] = spec
        return spec

    def register_family(self, family: Family, *, overwrite: bool = False) -> None:
        """Make ``family`` resolve every id under ``family.name + "/"``.

        Raises:
            EnvRegistrationError: ``family`` does not follow the
                :class:`~marlhub.adapters.family.Family` protocol, its name is
                malformed or taken (without ``overwrite=True``), or ids are
                already registered under its prefix.
        """
        name = getattr(family, "name", None)
        if not isinstance(family, Family):
            raise EnvRegistrationError(
                str(name),
                f"{type(family).__name__} does not follow the Family protocol "
                "(attributes name and description, methods ids() and make(rest, config))",
                "See marlhub.adapters.family.Family.",
            )
        name = validate_family_name(name)  # the same object, now known to be a str
        with self._lock:
            if name in self._families and not overwrite:
                raise EnvRegistrationError(
                    name,
                    f"the family name is taken by {self._families[name]!r:.80}",
                    "Pass overwrite=True to replace it, or unregister_family() it first.",
                )
            inside = sorted(i for i in self._specs if i.startswith(name + "/"))
            if inside:
                raise EnvRegistrationError(
                    name,
                    f"ids are already registered under {name + '/'!r}: {inside[:5]}",
                    "Unregister them first, or give the family another name.",
                )
            self._families[name] = family

    def unregister(self, name: str) -> None:
        """Remove the registration of ``name``.

        Raises:
            UnknownEnvError: ``name`` was not registered with :meth:`register`.
        """
        with self._lock:
            if name not in self._specs:
                raise UnknownEnvError(
                    name, closest(name, self._specs), "Only registered names can be unregistered."
                )
            del self._specs[name]

    def unregister_family(self, name: str) -> None:
        """Remove the family named ``name``.

        Raises:
            UnknownEnvError: no family of that name is registered.
        """
        with self._lock:
            if name not in self._families:
                raise UnknownEnvError(
                    name + "/", [f + "/" for f in closest(name, self._families)],
                    "No family of that name is registered.",
                )
            del self._families[name]

    @property
    def families(self) -> dict[str, Family]:
        """The registered families by name (a copy)."""
        with self._lock:
            return dict(self._families)

    @property
    def problems(self) -> list[RegistryProblem]:
        """What was skipped so far: malformed entry points, families that failed to load."""
        self._entry_point_table()
        with self._lock:
            return self._discovery_problems + self._problems

    def record_problem(self, problem: RegistryProblem) -> None:
        """Record something that could not be registered, to show in listings and errors.

        Used when building a registry, e.g. for a built-in family whose module
        fails to import.
        """
        with self._lock:
            self._problems.append(problem)

    # -- entry points ---------------------------------------------------------------

    def refresh_entry_points(self) -> None:
        """Forget discovered entry points; the next look-up discovers them again."""
        with self._lock:
            self._entry_points = None
            self._discovery_problems = []

    def _entry_point_table(self) -> dict[str, EntryPointEnv]:
        with self._lock:
            if self._entry_points is None:
                if self._entry_point_group is None:
                    self._entry_points = {}
                else:
                    self._entry_points, self._discovery_problems = discover(
                        self._entry_point_group
                    )
                    for problem in self._discovery_problems:
                        warnings.warn(str(problem), MarlhubWarning, stacklevel=4)
            return self._entry_points

    def _entry_point(self, env_id: str) -> Optional[EntryPointEnv]:
        prefix, _ = split_id(env_id)
        if env_id in self._specs or (prefix is not None and prefix in self._families):
            return None  # explicit registrations and families win
        return self._entry_point_table().get(env_id)

    # -- look-up ------------------------------------------------------------------

    def spec(self, env_id: str) -> EnvSpec:
        """Return the spec of ``env_id`` without making it.

        A family id's spec has no creator and the family's description; whether
        the family knows ``rest`` is only found out by :meth:`make`.

        Raises:
            UnknownEnvError: nothing resolves ``env_id``.
            EntryPointError: its entry point does not load.
        """
        if not isinstance(env_id, str):
            raise UnknownEnvError(repr(env_id), (), f"Env ids are strings, got {type(env_id).__name__}.")
        with self._lock:
            spec = self._specs.get(env_id)
            prefix, _ = split_id(env_id)
            family = self._families.get(prefix) if prefix is not None else None
        if spec is not None:
            return spec
        if family is not None:
            return EnvSpec(env_id, None, str(family.description), f"family {prefix}")
        ep = self._entry_point(env_id)
        if ep is not None:
            return ep.load()
        raise self._unknown(env_id)

    def make(
        self,
        env_id: str,
        config: Optional[Mapping[str, Any]] = None,
        *,
        to: Optional[str] = None,
        **convert_options: Any,
    ) -> Any:
        """Build the env registered as ``env_id``, as a hub env or in the API named by ``to``.

        Args:
            env_id: a registered name, ``family/rest``, or an entry point's name.
            config: the env's config; a dict becomes an
                :class:`~marlhub.context.EnvContext` (copied, never
                mutated); an ``EnvContext`` keeps its worker attributes.
            to: the API to hand the env out in (see :func:`marlhub.convert`);
                None for the hub.
            convert_options: passed to the converter when ``to`` is given.

        Returns:
            The env, converted to the hub protocol by :func:`marlhub.adapters.to_hub`,
            then to ``to`` when given.

        Raises:
            UnknownEnvError: nothing resolves ``env_id`` (with close matches).
            ConfigError: ``config`` is not a mapping, or the env rejects it; keyword
                arguments without ``to`` (the config goes in ``config``).
            EnvCreationError: the creator raised a non-marlhub exception (chained).
            EntryPointError: the id's entry point does not load.
            MissingDependencyError: the family's backend is not installed.
            ProtocolError: the creator returned something that is no env.
            NotParallelizableError: ``to="pettingzoo.parallel"`` of a turn-based env
                (probed on a fresh instance; ``turn_based="pad"`` takes it).
        """
        if to is None and convert_options:
            raise ConfigError(
                env_id,
                f"make() got keyword arguments {sorted(convert_options)}, which go to the "
                "converter named by to=, and no to=",
                fix=f"Pass the env's config as a dict: marlhub.make({env_id!r}, "
                    f"{dict(convert_options)!r}).",
            )
        target = TARGETS.get(to) if to is not None else None
        if target is not None and target.simultaneous:  # a natively parallel version
            config = self.simultaneous_config(env_id, config)
        hub = self._build(env_id, _to_context(env_id, config))
        if target is not None:  # refuse what the API cannot take when made, on a fresh instance
            target.check_before(
                lambda: self._build(env_id, _to_context(env_id, config)), env_id=env_id,
                aec_of_parallel=target.simultaneous and aec_of_parallel(
                    self.families, env_id, _to_context(env_id, config)), **convert_options)
        return hub if to is None else convert(hub, to=to, **convert_options)

    def simultaneous_config(self, env_id: str, config: Optional[Mapping[str, Any]] = None) -> Any:
        """Return the config that has every agent act each step (:mod:`marlhub.registry.parallel`)."""
        return simultaneous_config(self.families, env_id, _to_context(env_id, config), config)

    def _build(self, env_id: str, ctx: EnvContext) -> Any:
        """Call the creator (or the family) of ``env_id`` and bring the result to the hub."""
        spec = self.spec(env_id)
        if spec.creator is None:
            prefix, rest = split_id(env_id)
            with self._lock:
                family = self._families.get(cast(str, prefix))  # family ids have a prefix
            if family is None:  # unregistered meanwhile
                raise self._unknown(env_id)
            env = _call(env_id, ctx, lambda: family.make(rest, ctx))
        else:
            creator = spec.creator
            if spec.takes_config:
                env = _call(env_id, ctx, lambda: creator(ctx))
            elif ctx:
                raise ConfigError(
                    env_id,
                    f"its creator {creator!r:.60} takes no config, got keys {sorted(map(str, ctx))}",
                )
            else:
                env = _call(env_id, ctx, creator)
        try:
            return to_hub(env)
        except ProtocolError as exc:
            raise ProtocolError(
                env,
                exc.missing,
                expected=f"the creator of {env_id!r} to return a MultiAgentEnv or an env of a "
                "supported API",
            ) from exc

    def _unknown(self, env_id: str) -> UnknownEnvError:
        with self._lock:
            plain = list(self._specs) + list(self._entry_point_table())
            families = dict(self._families)
            problems = list(self._problems)
        prefix, rest = split_id(env_id)
        suggestions = closest(env_id, plain)
        detail = ""
        if prefix is not None and prefix not in families:
            suggestions += [f"{f}/{rest}" for f in closest(prefix, families)]
            failed = [p for p in problems if p.family == prefix]
            if failed:
                detail = f"The family {prefix!r} is not available: {failed[0].message}."
        if not suggestions and prefix is None:
            # "leduc_poker" for "openspiel/leduc_poker": look inside the families.
            for family in families.values():
                try:
                    ids = [i for i, _ in family.ids()]
                except Exception:  # a family that cannot list is no help here
                    continue
                suggestions += closest(env_id, ids)
        return UnknownEnvError(env_id, suggestions[:5], detail)

    # -- listing ------------------------------------------------------------------

    def listing(self, pattern: str = "*", *, families: bool = True, describe: bool = True) -> Listing:
        """Return the ids matching glob ``pattern``, their descriptions and what was skipped.

        Family ids are enumerated only for families that ``pattern`` reaches
        (see :func:`~marlhub.registry.ids.pattern_reaches`): ``"*"`` lists every
        family's catalogue, ``"tic*"`` none. A family whose ``ids()`` raises
        (its backend is missing, say) is skipped and reported in ``problems``.

        Args:
            pattern: an :mod:`fnmatch` glob over ids, case-sensitive.
            families: include family ids at all.
            describe: load entry points for their descriptions (otherwise "").
        """
        if not isinstance(pattern, str):
            raise TypeError(f"pattern must be a glob string such as 'openspiel/*', got {pattern!r}")
        table = self._entry_point_table()
        with self._lock:
            specs = dict(self._specs)
            all_families = dict(self._families)
            fams = all_families if families else {}
            problems = [
                p
                for p in self._discovery_problems + self._problems
                if p.family is None or (families and pattern_reaches(pattern, p.family))
            ]
        rows: dict[str, str] = {i: s.description for i, s in specs.items() if fnmatchcase(i, pattern)}
        for env_id, ep in table.items():
            if env_id in rows or not fnmatchcase(env_id, pattern) or env_id in specs:
                continue
            prefix, _ = split_id(env_id)
            if prefix is not None and prefix in all_families:
                problems.append(
                    RegistryProblem(ep.source, f"skipped, the family {prefix!r} owns its prefix")
                )
                continue
            rows[env_id] = ""
            if describe:
                try:
                    rows[env_id] = ep.load().description
                except EntryPointError as exc:
                    rows[env_id] = "(broken entry point, see below)"
                    problems.append(RegistryProblem(ep.source, str(exc), error=exc))
        for name, family in fams.items():
            if not pattern_reaches(pattern, name):
                continue
            try:
                found = list(family.ids())
            except MissingDependencyError as exc:
                problems.append(RegistryProblem(f"family {name!r}", str(exc), family=name, error=exc))
                continue
            except Exception as exc:  # a broken family must not hide the others
                problem = RegistryProblem(
                    f"family {name!r}",
                    f"ids() raised {type(exc).__name__}: {exc}",
                    family=name,
                    error=exc,
                )
                warnings.warn(str(problem), MarlhubWarning, stacklevel=2)
                problems.append(problem)
                continue
            for env_id, description in found:
                if not str(env_id).startswith(name + "/"):
                    problems.append(
                        RegistryProblem(
                            f"family {name!r}",
                            f"its ids() yielded {env_id!r}, which is not under {name + '/'!r}",
                            family=name,
                        )
                    )
                elif fnmatchcase(env_id, pattern):
                    rows.setdefault(env_id, str(description))
        return Listing(sorted(rows.items()), problems)

    def registered(self, pattern: str = "*", *, families: bool = True) -> list[str]:
        """Return the ids matching glob ``pattern``, sorted (see :meth:`listing`)."""
        return self.listing(pattern, families=families, describe=False).ids

    def entries(self, pattern: str = "*", *, families: bool = True) -> list[tuple[str, str]]:
        """Return ``(id, description)`` for the ids matching ``pattern``, sorted (see :meth:`listing`)."""
        return self.listing(pattern, families=families).entries

    def __repr__(self) -> str:
        return (
            f"<Registry {len(self._specs)} ids, families {sorted(self._families)}, "
            f"entry points {self._entry_point_group!r}>"
        )


def _to_context(env_id: str, config: Any) -> EnvContext:
    if config is None:
        return EnvContext()
    if isinstance(config, EnvContext):
        return config.copy_with_overrides()
    if isinstance(config, Mapping):
        return EnvContext(dict(config))
    raise ConfigError(
        env_id,
        f"config must be a mapping such as a dict, got {type(config).__name__} {config!r:.60}",
        fix="Pass a dict of the env's settings (e.g. config={'max_steps': 10}) or None.",
    )


def _call(env_id: str, ctx: EnvContext, build: Callable[[], Any]) -> Any:
    try:
        return build()
    except MarlhubError:
        raise
    except Exception as exc:
        raise EnvCreationError(env_id, ctx, exc) from exc
