"""The worlds of a server: made from one env factory, named, counted, destroyed.

A :class:`WorldHost` is what a ``marlhub serve ID`` server shares between its
connections. It makes every world with the one factory it was given (the
registry id the server was started with, and its config): a client names no
env and no Python object, only settings the host checks. It also owns the
limits: how many worlds may exist at once, whether clients may change the
config, how long a connection waits for other agents.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> host = WorldHost(lambda config: TicTacToe(config), env_id="tic_tac_toe", max_worlds=1)
    >>> world = host.create({}, owner="conn-1")
    >>> host.create({}, owner="conn-2")
    Traceback (most recent call last):
    ...
    marlhub.errors.RemoteRequestError: CreateWorld was refused (RESOURCE_EXHAUSTED): the server holds its limit of 1 worlds (--max-worlds) Destroy a world first, or start the server with a higher --max-worlds.
    >>> host.destroy(world.name, owner="conn-1"); len(host.worlds)
    0
"""

from __future__ import annotations

import itertools
import json
import secrets
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.adapters.remote.world import World
from marlhub.errors import RemoteRequestError

__all__ = ["DEFAULT_MAX_WORLDS", "DEFAULT_STEP_WAIT", "WorldHost"]

#: Worlds one server holds at once unless told otherwise.
DEFAULT_MAX_WORLDS = 64
#: Seconds a connection's Step waits for the other agents of its world to act.
DEFAULT_STEP_WAIT = 60.0


class WorldHost:
    """Makes, finds and destroys the worlds of one env factory.

    Args:
        make_env: ``make_env(config) -> hub env``.
        env_id: the id the worlds are made from (announced to clients).
        config: the config every world is made with.
        allow_config: whether CreateWorld's ``config`` setting may add to it.
        max_worlds: worlds at once.
        step_wait: seconds a Step waits for other agents (see :data:`DEFAULT_STEP_WAIT`).
    """

    def __init__(self, make_env: Callable[[dict[str, Any]], Any], *, env_id: str,
                 config: Optional[Mapping[str, Any]] = None, allow_config: bool = False,
                 max_worlds: int = DEFAULT_MAX_WORLDS,
                 step_wait: float = DEFAULT_STEP_WAIT) -> None:
        self.make_env = make_env
        self.env_id = env_id
        self.config = dict(config or {})
        self.allow_config = allow_config
        self.max_worlds = max_worlds
        self.step_wait = step_wait
        self.worlds: dict[str, World] = {}
        self.owners: dict[str, str] = {}
        self._reserved = 0
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)

    def world_config(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The config of a world created with ``settings`` (each a decoded value).

        Raises:
            RemoteRequestError: an unknown setting, or ``config`` where it is not allowed.
        """
        unknown = sorted(set(settings) - {"config"})
        if unknown:
            raise RemoteRequestError(
                "CreateWorld", f"unknown settings {unknown}; CreateWorld takes only 'config' "
                "(a JSON object, if the server allows it)", code="INVALID_ARGUMENT")
        if "config" not in settings:
            return dict(self.config)
        if not self.allow_config:
            raise RemoteRequestError(
                "CreateWorld", f"this server makes {self.env_id!r} with its own config only",
                code="PERMISSION_DENIED",
                fix="Leave 'config' out, or start the server with --allow-config.")
        try:
            extra = json.loads(str(settings["config"]))
        except ValueError as exc:
            raise RemoteRequestError("CreateWorld", f"'config' is not JSON ({exc})",
                                     code="INVALID_ARGUMENT") from exc
        if not isinstance(extra, dict):
            raise RemoteRequestError("CreateWorld", "'config' must be a JSON object",
                                     code="INVALID_ARGUMENT")
        return {**self.config, **extra}

    def create(self, settings: Mapping[str, Any], *, owner: str) -> World:
        """Make a new world (its env made from the host's factory) and name it.

        With the setting ``copy_of`` (a world's name) the new world is a copy of that
        world instead: its env copied as it is, mid-episode included.

        Raises:
            RemoteRequestError: bad settings, no such world to copy, the world
                limit reached, or spaces that do not map to dm_env_rpc tensors.
            Exception: whatever making the env raised (a ``ConfigError``...).
        """
        settings = dict(settings)
        source = settings.pop("copy_of", None)
        if source is not None:
            if settings:
                raise RemoteRequestError("CreateWorld", "'copy_of' takes no other setting",
                                         code="INVALID_ARGUMENT")
            original = self.get(str(source), "CreateWorld")
            return self._add(lambda name: _copy_of(original, name), owner)
        config = self.world_config(settings)

        def build(name: str) -> World:
            env = self.make_env(config)
            try:
                return World(name, env, env_id=self.env_id, config=config)
            except Exception:
                _close(env)
                raise

        return self._add(build, owner)

    def _add(self, build: Callable[[str], World], owner: str) -> World:
        """Reserve a place under the world limit, build the world, register it."""
        with self._lock:
            if len(self.worlds) + self._reserved >= self.max_worlds:
                raise RemoteRequestError(
                    "CreateWorld", f"the server holds its limit of {self.max_worlds} worlds "
                    "(--max-worlds)", code="RESOURCE_EXHAUSTED",
                    fix="Destroy a world first, or start the server with a higher --max-worlds.")
            self._reserved += 1
            name = f"world-{next(self._numbers)}-{secrets.token_hex(4)}"
        try:
            world = build(name)
            with self._lock:
                self.worlds[name] = world
                self.owners[name] = owner
        finally:
            with self._lock:
                self._reserved -= 1
        return world

    def get(self, name: str, call: str) -> World:
        """Return the world ``name``.

        Raises:
            RemoteRequestError: no such world (NOT_FOUND).
        """
        with self._lock:
            world = self.worlds.get(name)
        if world is None:
            raise RemoteRequestError(call, f"there is no world named {name!r} on this server",
                                     code="NOT_FOUND",
                                     fix="Use the world_name CreateWorld returned.")
        return world

    def destroy(self, name: str, *, owner: Optional[str] = None) -> None:
        """Destroy world ``name`` and close its env.

        Raises:
            RemoteRequestError: no such world, or connections are joined to it.
        """
        world = self.get(name, "DestroyWorld")
        with world.lock:
            if world.inboxes:
                raise RemoteRequestError(
                    "DestroyWorld", f"{len(world.inboxes)} connection(s) are joined to world "
                    f"{name!r}", code="FAILED_PRECONDITION",
                    fix="Send LeaveWorld from each of them first.")
            with self._lock:
                self.worlds.pop(name, None)
                self.owners.pop(name, None)
            world.close()

    def release(self, owner: str) -> None:
        """Destroy the worlds ``owner`` created that nobody is joined to (it disconnected)."""
        with self._lock:
            names = [n for n, o in self.owners.items() if o == owner]
        for name in names:
            try:
                self.destroy(name)
            except RemoteRequestError:  # others still joined: destroyed when they leave
                with self._lock:
                    self.owners[name] = ""
        self.sweep()

    def sweep(self) -> None:
        """Destroy worlds whose owner left and that nobody is joined to any more."""
        with self._lock:
            orphans = [n for n, o in self.owners.items() if o == ""]
        for name in orphans:
            try:
                self.destroy(name)
            except RemoteRequestError:
                pass

    def close(self) -> None:
        """Destroy every world (the server stops)."""
        with self._lock:
            worlds = list(self.worlds.values())
            self.worlds.clear()
            self.owners.clear()
        for world in worlds:
            with world.lock:
                world.close()


def _copy_of(original: World, name: str) -> World:
    """A new world holding a copy of ``original``'s env and episode, as they are now."""
    from marlhub.adapters.openspiel.view_copy import snapshot

    with original.lock:
        env, last = snapshot((original.env, original.last))
        world = World(name, env, env_id=original.env_id, config=original.config)
        world.episode, world.last = original.episode, last
    return world


def _close(env: Any) -> None:
    try:
        env.close()
    except Exception:  # best effort
        pass
