"""The ``gymnasium/`` family: every registered Gymnasium env, as independent copies.

``gymnasium/CartPole-v1`` is ``make_multi_agent("CartPole-v1")(config)``:
config ``num_agents`` (default 1) copies, agents ``0 .. num_agents - 1``, copy
``i`` reset with ``seed + i``; every other config key goes to
``gymnasium.make`` (``max_episode_steps``, ``render_mode``, the env's own
keyword arguments such as FrozenLake's ``is_slippery``), and one it rejects
raises :class:`~marlhub.errors.ConfigError` with the accepted keys. Ids are
Gymnasium's own, namespaces included (``gymnasium/phys2d/CartPole-v1``);
:meth:`GymnasiumFamily.ids` lists ``gymnasium.registry``, so envs that other
packages register on import (``ale_py``, say) appear once those are imported.

A Gymnasium env of the Tuple convention (one env for a team, ``Tuple`` spaces over
agents: ``lbforaging``, ``rware``, ma-gym; see
:func:`~marlhub.adapters.gymnasium.is_tuple_team`) is one hub env with agents
``agent_0 .. agent_{n-1}`` (:class:`~marlhub.adapters.gymnasium.TupleAgentsEnv`)
unless the config has ``num_agents``; config ``agents="tuple"`` reads any env with
``Tuple`` spaces so, ``agents="copies"`` makes copies whatever the env.

Example:
    >>> family = GymnasiumFamily()
    >>> env = family.make("FrozenLake-v1", EnvContext({"num_agents": 2, "is_slippery": False}))
    >>> env.possible_agents
    [0, 1]
    >>> dict(family.ids())["gymnasium/CartPole-v1"]
    'CartPoleEnv (gymnasium.envs.classic_control.cartpole); config num_agents + gymnasium.make keys'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import gymnasium as gym

from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["AGENTS", "GymnasiumFamily"]

#: The config key that says how the env's agents are read: ``"tuple"`` or ``"copies"``.
AGENTS = "agents"
TUPLE, COPIES = "tuple", "copies"
#: make_multi_agent's number of copies.
NUM_AGENTS = "num_agents"


class GymnasiumFamily:
    """Resolve ``gymnasium/<id>`` through ``gymnasium.make`` and ``make_multi_agent``."""

    name = "gymnasium"
    description = (
        "Gymnasium envs as independent copies (gymnasium/CartPole-v1), or one team of Tuple "
        "spaces; config: num_agents or agents='tuple', plus gymnasium.make keys"
    )

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every env in ``gymnasium.registry`` that can load.

        Left out: the ids Gymnasium keeps only to say where they went (MuJoCo's v2 and
        v3 envs, moved to gymnasium-robotics; ``GymV21Environment`` and
        ``GymV26Environment``, moved to Shimmy): their entry point only raises that.
        Making one still says so.
        """
        for env_id, spec in sorted(gym.registry.items()):
            if not _moved(spec):
                yield f"{self.name}/{env_id}", _describe(spec)

    def make(self, rest: str, config: EnvContext) -> Any:
        """Build ``gymnasium/<rest>`` with ``config``.

        Raises:
            UnknownEnvError: Gymnasium has no env ``rest`` (with close matches).
            ConfigError: ``num_agents`` is not an integer >= 1, ``agents`` is neither
                ``"tuple"`` nor ``"copies"`` (or ``"tuple"`` with ``num_agents``), or
                ``gymnasium.make`` rejects a key.
            ProtocolError: ``agents="tuple"`` for an env whose spaces are no ``Tuple`` spaces.
        """
        from marlhub.adapters.gymnasium import make_multi_agent
        from marlhub.adapters.gymnasium.lockstep import native_tuple_env
        from marlhub.adapters.gymnasium.tuple_agents import TupleAgentsEnv, is_tuple_team

        self._require_known(rest)
        mode, config = _agents_mode(f"{self.name}/{rest}", config)
        if mode == TUPLE:
            return TupleAgentsEnv(native_tuple_env(rest, config, own_keys=(AGENTS,)))
        hub = make_multi_agent(rest)(config)
        if mode is None and NUM_AGENTS not in config and is_tuple_team(hub.envs[0]):
            hub.close()  # made with Gymnasium's passive checker, which warns at a list of rewards
            return TupleAgentsEnv(native_tuple_env(rest, config, own_keys=(AGENTS,)))
        return hub

    def lockstep(
        self, rest: str, config: EnvContext, *, episodes: int, seed: int, max_steps: int
    ) -> list[Finding]:
        """Compare ``gymnasium/<rest>`` with native Gymnasium copies, step by step.

        See :func:`marlhub.adapters.gymnasium.compare_with_native`, and
        :func:`~marlhub.adapters.gymnasium.compare_tuple_with_native` for a Tuple env.
        """
        from marlhub.adapters.gymnasium import compare_tuple_with_native, compare_with_native
        from marlhub.adapters.gymnasium.tuple_agents import TupleAgentsEnv

        made = self.make(rest, config)
        made.close()
        _, config = _agents_mode(f"{self.name}/{rest}", config)
        compare = compare_tuple_with_native if isinstance(made, TupleAgentsEnv) \
            else compare_with_native
        return compare(rest, config, episodes=episodes, seed=seed, max_steps=max_steps)

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break."""
        from marlhub.adapters.gymnasium.family_tuple import known_faults_of_entry_point

        spec = gym.registry.get(rest)
        return known_faults_of_entry_point(spec.entry_point) if spec is not None else {}

    def _require_known(self, rest: str) -> None:
        if rest not in gym.registry:
            prefix = self.name + "/"
            raise UnknownEnvError(
                prefix + rest, [prefix + i for i in closest(rest, gym.registry)],
                "Gymnasium has no env of that id.",
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}/...>"


def _agents_mode(env_id: str, config: EnvContext) -> tuple[Optional[str], EnvContext]:
    """The config's ``agents`` (None when absent), and the config without it."""
    if not isinstance(config, EnvContext):
        config = EnvContext(dict(config or {}))
    if AGENTS not in config:
        return None, config
    mode = config[AGENTS]
    if mode not in (TUPLE, COPIES) or (mode == TUPLE and NUM_AGENTS in config):
        why = (f"agents must be {TUPLE!r} or {COPIES!r}, got {mode!r}"
               if mode not in (TUPLE, COPIES) else "agents='tuple' reads the agents from the "
               "env's Tuple spaces, so num_agents (a number of copies) has no meaning with it")
        raise ConfigError(env_id, why, fix="Pass agents='tuple' for one env whose spaces are "
                          "Tuples over agents, agents='copies' (with num_agents) for independent "
                          "copies.")
    rest = {k: v for k, v in config.items() if k != AGENTS}
    return mode, config.copy_with_overrides(env_config=rest)


def _moved(spec: Any) -> bool:
    """Tell whether a spec's entry point only raises that the env moved elsewhere."""
    name = getattr(spec.entry_point, "__name__", "")
    return not isinstance(spec.entry_point, str) and name.startswith("_raise")


def _describe(spec: Any) -> str:
    entry = spec.entry_point
    if isinstance(entry, str):
        module, _, attr = entry.partition(":")
        where = f"{attr} ({module})" if attr else module
    else:
        where = getattr(entry, "__qualname__", type(entry).__name__)
    return f"{where}; config num_agents + gymnasium.make keys"
