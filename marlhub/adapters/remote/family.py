"""The ``remote/`` family: ``remote/HOST:PORT`` is the env a dm_env_rpc server serves.

``marlhub.make("remote/127.0.0.1:50051")`` connects to the server. A marlhub
server (``marlhub serve ID``) gives a :class:`~marlhub.adapters.remote.adapter.RemoteEnv`
of a world of its own; any other dm_env_rpc server a one-agent
:class:`~marlhub.adapters.remote.plain.PlainRemoteEnv`. The config holds the
connection's options (:data:`CONNECT_KEYS`), and the env's own config under
``"config"`` (for servers started with ``--allow-config``). The token may
also come from the ``MARLHUB_TOKEN`` environment variable.

``marlhub check remote/HOST:PORT --against-native`` plays the remote env
against a local instance of the id and config the server reports
(:meth:`RemoteFamily.lockstep`), same seeds and actions, step for step.

Example:
    >>> family = RemoteFamily()
    >>> family.make("127.0.0.1", EnvContext())
    Traceback (most recent call last):
    ...
    marlhub.errors.UnknownEnvError: No env is registered as 'remote/127.0.0.1'. Remote ids are remote/HOST:PORT, e.g. remote/127.0.0.1:50051 (IPv6: remote/[::1]:50051). Run `marlhub list` to see every registered id, or register yours with marlhub.register_env(name, creator).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from marlhub.context import EnvContext, make_from_id
from marlhub.contract.findings import Finding
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.errors import ConfigError, RemoteRequestError, UnknownEnvError

__all__ = ["CONNECT_KEYS", "RemoteFamily", "connect", "parse_address"]

#: Config keys of a ``remote/`` id, and what each does.
CONNECT_KEYS = {
    "config": "the env's config, added to the server's (marlhub servers with --allow-config)",
    "timeout": "seconds each call may take (default 30)",
    "connect_timeout": "seconds the server may take to accept the connection (default 10)",
    "token": "the server's token (default: the MARLHUB_TOKEN environment variable)",
    "tls_root": "connect over TLS, trusting this PEM file (the server's certificate or its "
                "authority), or true for gRPC's default roots (default: plain text)",
    "world": "join this existing world instead of creating one",
    "create_settings": "CreateWorld settings (plain dm_env_rpc servers)",
    "join_settings": "JoinWorld settings (plain dm_env_rpc servers)",
    "agent_id": "the agent's id (plain dm_env_rpc servers; default 'agent')",
}
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def parse_address(text: str, env_id: Optional[str] = None) -> str:
    """Return ``HOST:PORT`` if ``text`` is one (IPv6 hosts in brackets), else raise.

    Example:
        >>> parse_address("[::1]:50051"), parse_address("localhost:8")
        ('[::1]:50051', 'localhost:8')

    Raises:
        UnknownEnvError: ``text`` is not ``HOST:PORT`` with a port in 1..65535.
    """
    found = _ADDRESS.match(text)
    if found is None or not 0 < int(found.group(2)) < 65536:
        raise UnknownEnvError(env_id or f"remote/{text}", (), detail=(
            "Remote ids are remote/HOST:PORT, e.g. remote/127.0.0.1:50051 (IPv6: "
            "remote/[::1]:50051)."))
    return text


def connect(address: str, config: Optional[Mapping[str, Any]] = None, **options: Any) -> Any:
    """Return the env a dm_env_rpc server at ``address`` serves, as a hub env.

    Args:
        address: ``HOST:PORT``.
        config: the env's config (see :data:`CONNECT_KEYS`' ``"config"``).
        options: the other keys of :data:`CONNECT_KEYS` (``timeout=5.0``...).

    Returns:
        A ``RemoteEnv`` for a marlhub server, a one-agent ``PlainRemoteEnv`` for
        any other dm_env_rpc server.

    Raises:
        ConfigError: an unknown option.
        RemoteEnvError: no server answered at ``address``.
        RemoteRequestError: the server refused to create or join a world.
    """
    from marlhub.adapters.remote.adapter import RemoteEnv, read_property
    from marlhub.adapters.remote.plain import PlainRemoteEnv

    link, token, timeout, connect_timeout = _open_link(address, options)
    tls_root = options.get("tls_root")
    try:
        read_property(link, "marlhub.env_id")
    except RemoteRequestError:  # no marlhub on the other side: a plain dm_env_rpc server
        if config:
            link.close()
            raise ConfigError(f"remote/{address}", "'config' is for marlhub servers; this is a "
                              "plain dm_env_rpc server", unknown=["config"],
                              fix="Pass its settings as 'create_settings' / 'join_settings'.")
        plain = {k: options[k] for k in ("create_settings", "join_settings", "world", "agent_id")
                 if k in options}
        return PlainRemoteEnv(address, link=link, **plain)
    except BaseException:
        link.close()
        raise
    for key in ("create_settings", "join_settings", "agent_id"):
        if key in options:
            link.close()
            raise ConfigError(f"remote/{address}", f"{key!r} is for plain dm_env_rpc servers; "
                              "this is a marlhub server", unknown=[key],
                              accepted=["config", "timeout", "connect_timeout", "token",
                                        "tls_root", "world"])
    return RemoteEnv(address, config, timeout=timeout, connect_timeout=connect_timeout,
                     token=token, tls_root=tls_root, world=options.get("world"), link=link)


def _open_link(address: str, options: Mapping[str, Any]
               ) -> tuple[Any, Optional[str], float, float]:
    """Check ``options`` and open a link to ``address``; return it, the token and the timeouts."""
    from marlhub.adapters.remote.link import (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_TIMEOUT,
        Link,
    )

    unknown = sorted(set(options) - set(CONNECT_KEYS))
    if unknown:
        raise ConfigError(f"remote/{address}", f"unknown keys {unknown}", unknown=unknown,
                          accepted=list(CONNECT_KEYS))
    token = options.get("token") or os.environ.get("MARLHUB_TOKEN") or None
    timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
    connect_timeout = float(options.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
    link = Link(address, timeout=timeout, connect_timeout=connect_timeout, token=token,
                tls_root=options.get("tls_root"))
    return link, token, timeout, connect_timeout


class RemoteFamily:
    """Resolves ``remote/HOST:PORT`` by connecting to that server (see the module docstring)."""

    name = "remote"
    description = ("envs served over dm_env_rpc (gRPC): remote/HOST:PORT of `marlhub serve ID` "
                   "or of any dm_env_rpc server")

    def ids(self) -> Iterable[tuple[str, str]]:
        """Nothing to list: servers are found by address."""
        return []

    def make(self, rest: str, config: EnvContext) -> Any:
        """Connect to ``rest`` (``HOST:PORT``) with the options in ``config``."""
        address = parse_address(rest)
        options = dict(config or {})
        env_config = options.pop("config", None)
        return connect(address, env_config, **options)

    def served_id(self, rest: str, config: Optional[Mapping[str, Any]] = None) -> Optional[str]:
        """The id the marlhub server at ``rest`` serves (None: a plain dm_env_rpc server).

        The conformance suite reads it to mark the served env's known faults.

        Raises:
            RemoteEnvError: no server answered at ``rest``.
        """
        from marlhub.adapters.remote.adapter import read_property

        options = {k: v for k, v in (config or {}).items() if k != "config"}
        link = _open_link(parse_address(rest), options)[0]
        try:
            return read_property(link, "marlhub.env_id")
        except RemoteRequestError:
            return None
        finally:
            link.close()

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int = 3,
                 seed: Optional[int] = 0, max_steps: int = 1000) -> list[Finding]:
        """Compare the remote env with a local one of the id and config its server reports."""
        from marlhub.adapters.remote.lockstep import compare_with_local

        remote = self.make(rest, config)
        try:
            env_id = getattr(remote, "env_id", None)
            if env_id is None:
                return [Finding(EQUIV_TRAJECTORY, "warning", (
                    f"--against-native: remote/{rest} is a plain dm_env_rpc server, which names "
                    "no env marlhub could make locally; the lockstep comparison was skipped."))]
            try:
                local = make_from_id(env_id, remote.env_config)
            except UnknownEnvError:
                return [Finding(EQUIV_TRAJECTORY, "warning", (
                    f"--against-native: remote/{rest} serves {env_id!r}, which is no registry id "
                    "(a module:attr target of its server), so no local twin was made and the "
                    f"lockstep comparison was skipped; check {env_id!r} itself where it is "
                    "importable."))]
            return compare_with_local(remote, local, episodes=episodes, seed=seed,
                                      max_steps=max_steps)
        finally:
            remote.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
