"""The ``dmc_soccer/`` family: dm_control's multi-agent soccer, two teams of equal size.

``dmc_soccer/2vs2`` is ``dm_control.locomotion.soccer.load(team_size=2, **config)``
read by :func:`~marlhub.adapters.dm_env.from_dm_env`: four agents, ``player_0`` and
``player_1`` the home team, ``player_2`` and ``player_3`` the away team (dm_control's
order, Shimmy's names). Any ``<n>vs<n>`` with ``n`` from 1 to 11 (the range
``soccer.load`` documents) is an id; ``marlhub list`` shows ``1vs1`` and ``2vs2``.

The config is ``soccer.load``'s keywords, read from its signature (so a keyword a
later dm_control adds is accepted): ``time_limit`` (seconds, dm_control's default 45,
at 40 steps a second), ``disable_walker_contacts``, ``enable_field_box``,
``keep_aspect_ratio``, ``terminate_on_goal`` and ``walker_type``, one of
``soccer.WalkerType``'s members or its name (``"BOXHEAD"``, ``"ANT"``, ``"HUMANOID"``;
the humanoid downloads DeepMind's CMU motion-capture file on first use and needs
h5py). Values are checked against the type of ``soccer.load``'s default before
anything is built; ``team_size`` is the id's and ``random_state`` is refused
(``reset(seed=...)`` seeds the env). A goal ends the episode as terminated (discount
0), the time limit as truncated.

Example:
    >>> family = DmcSoccerFamily()
    >>> sorted(dict(family.ids()))
    ['dmc_soccer/1vs1', 'dmc_soccer/2vs2']
    >>> env = family.make("2vs2", EnvContext({"time_limit": 2.0, "walker_type": "ANT"}))
    >>> env.possible_agents, env.get_action_space("player_0").shape
    (['player_0', 'player_1', 'player_2', 'player_3'], (8,))
"""

from __future__ import annotations

import enum
import importlib.metadata
import inspect
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import numpy as np

from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.errors import ConfigError, MissingDependencyError, UnknownEnvError

__all__ = ["DmcSoccerFamily", "dm_control_fault"]

#: The team sizes ``soccer.load`` documents ("Must be between 1 and 11"; not checked there).
TEAM_SIZES = range(1, 12)
#: The sizes ``marlhub list`` shows.
LISTED = (1, 2)
#: ``soccer.load``'s arguments that the id gives or the hub env owns.
_NOT_CONFIG = {"team_size": "is given by the id (dmc_soccer/<n>vs<n>)",
               "random_state": "is the hub env's to seed: reset(seed=...) seeds it"}
_ID = re.compile(r"(\d+)vs(\d+)")


def dm_control_fault() -> Optional[str]:
    """Why dm_control's soccer cannot run with the installed versions, or None when it can.

    dm_control 1.0.20, the release for MuJoCo 3.1.6 (the oldest MuJoCo marlhub's
    ``mamujoco`` extra takes), calls ``np.array(..., copy=False)`` at every reset of a
    soccer env, which NumPy 2 refuses (ValueError: Unable to avoid copy); 1.0.21 (MuJoCo
    3.2) fixed it.
    """
    try:
        version = importlib.metadata.version("dm_control")
    except importlib.metadata.PackageNotFoundError:
        return None  # the import says so
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:3])
    if numbers < (1, 0, 21) and int(np.__version__.split(".")[0]) >= 2:
        return (f"dm_control {version} calls np.array(..., copy=False), which NumPy "
                f"{np.__version__} refuses at every reset of a soccer env (dm_control 1.0.21, "
                "for MuJoCo 3.2, fixed it)")
    return None


class DmcSoccerFamily:
    """``dmc_soccer/<n>vs<n>``: dm_control's ``soccer.load(team_size=n)`` (see the module doc)."""

    name = "dmc_soccer"
    description = ("dm_control's multi-agent soccer, n vs n players (dmc_soccer/2vs2); config: "
                   "soccer.load's keywords (time_limit, walker_type, disable_walker_contacts...)")
    #: The marlhub extra that installs dm_control (and Shimmy, the lockstep's peer).
    extra = "dmc"

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules dm_control's soccer is known to break."""
        return {}

    # -- dm_control ---------------------------------------------------------------------

    def soccer(self) -> Any:
        """Return ``dm_control.locomotion.soccer``.

        Raises:
            MissingDependencyError: dm_control is not installed, or is a release that
                cannot run soccer beside the installed NumPy (:func:`dm_control_fault`).
        """
        feature = f"The {self.name}/ env family"
        module = import_backend("dm_control.locomotion.soccer", package="dm_control",
                                extra=self.extra, feature=feature)
        fault = dm_control_fault()
        if fault is not None:
            raise MissingDependencyError(
                "dm-control>=1.0.21", self.extra, f"{feature} ({fault})",
                install="pip install 'dm-control>=1.0.21' (with mujoco>=3.2), or 'numpy<2'")
        return module

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield the listed sizes (every ``<n>vs<n>`` up to 11 is an id too).

        Raises:
            MissingDependencyError: dm_control is not installed.
        """
        self.soccer()
        for n in LISTED:
            yield (f"{self.name}/{n}vs{n}",
                   f"dm_control soccer, {n} vs {n} ({2 * n} agents; any <n>vs<n> up to 11vs11)")

    def team_size(self, rest: str) -> int:
        """Return the team size ``rest`` names.

        Raises:
            UnknownEnvError: ``rest`` is not ``<n>vs<n>`` with ``n`` from 1 to 11.
        """
        match = _ID.fullmatch(rest.strip())
        full = f"{self.name}/{rest}"
        listed = [f"{self.name}/{n}vs{n}" for n in LISTED]
        if match is None:
            raise UnknownEnvError(full, listed, "dm_control's soccer ids are "
                                  "dmc_soccer/<n>vs<n>, n players a team, 1 to 11.")
        home, away = int(match.group(1)), int(match.group(2))
        if home != away:
            raise UnknownEnvError(full, [f"{self.name}/{home}vs{home}"], "dm_control's soccer "
                                  "has two teams of the same size (soccer.load's team_size).")
        if home not in TEAM_SIZES:
            raise UnknownEnvError(full, listed, f"soccer.load takes teams of 1 to 11 players, "
                                  f"not {home}.")
        return home

    def accepted(self) -> list[str]:
        """Return the config keys: ``soccer.load``'s but ``team_size`` and ``random_state``."""
        return [name for name in self._defaults() if name not in _NOT_CONFIG]

    def _defaults(self) -> dict[str, Any]:
        params = inspect.signature(self.soccer().load).parameters.values()
        return {p.name: p.default for p in params
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    def load_kwargs(self, rest: str, config: Optional[Mapping[str, Any]]) -> dict[str, Any]:
        """Check ``config`` against ``soccer.load``; return its keywords, ``team_size`` included.

        Raises:
            UnknownEnvError: a malformed id.
            ConfigError: a key ``soccer.load`` does not take, or a value of another type
                than its default's (a walker type it does not name).
        """
        full = f"{self.name}/{rest}"
        kwargs: dict[str, Any] = {"team_size": self.team_size(rest)}
        defaults = self._defaults()
        for key, value in (config or {}).items():
            if key in _NOT_CONFIG:
                raise ConfigError(full, f"{key!r} {_NOT_CONFIG[key]}", unknown=[key],
                                  fix="Drop it from the config.")
            if key not in defaults:
                raise ConfigError(full, f"unknown key {key!r}: soccer.load takes no such "
                                  "keyword", unknown=[key], accepted=self.accepted())
            kwargs[key] = _checked(full, key, value, defaults[key])
        return kwargs

    # -- making envs ---------------------------------------------------------------------

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``from_dm_env(soccer.load(team_size=n, **config))``.

        Raises:
            UnknownEnvError: not ``<n>vs<n>`` with n from 1 to 11 (with suggestions).
            ConfigError: a key or value ``soccer.load`` does not take.
            MissingDependencyError: dm_control is not installed (or cannot run, see
                :func:`dm_control_fault`).
        """
        from marlhub.adapters.dm_env import from_dm_env

        return from_dm_env(self.native(rest, config))

    def native(self, rest: str, config: Optional[Mapping[str, Any]]) -> Any:
        """Return dm_control's own soccer env for ``rest`` and ``config`` (checked first)."""
        kwargs = self.load_kwargs(rest, config)
        return self.soccer().load(**kwargs)

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int, seed: int,
                 max_steps: int) -> list[Finding]:
        """Compare the hub env with Shimmy's ``DmControlMultiAgentCompatibilityV0`` of another copy.

        See :mod:`marlhub.adapters.dm_env.lockstep`.
        """
        from marlhub.adapters.dm_env import compare_with_native

        ctx = dict(config or {})
        hub = self.make(rest, EnvContext(ctx))
        try:
            return compare_with_native(hub, lambda: self.native(rest, ctx), episodes=episodes,
                                       seed=seed, max_steps=max_steps)
        finally:
            hub.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _checked(full: str, key: str, value: Any, default: Any) -> Any:
    """``value`` for ``soccer.load``'s ``key``, checked against the type of its default."""
    if isinstance(default, enum.Enum):
        members = type(default).__members__
        if isinstance(value, type(default)):
            return value
        if isinstance(value, str) and value.upper() in members:
            return members[value.upper()]
        raise ConfigError(full, f"{key} must be one of {type(default).__name__}'s members, got "
                          f"{value!r}", fix=f"Pass one of {', '.join(map(repr, members))} (or "
                          f"the member itself, {type(default).__name__}.{next(iter(members))}).")
    if isinstance(default, bool):
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        raise ConfigError(full, f"{key} must be True or False, got {value!r}",
                          fix=f"Pass a bool (soccer.load's default is {default}).")
    if isinstance(default, (int, float)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
                or not np.isfinite(value) or value <= 0:
            raise ConfigError(full, f"{key} must be a number above 0, got {value!r}",
                              fix=f"Pass seconds, e.g. 10.0 (soccer.load's default is {default}).")
        return float(value)
    return value
