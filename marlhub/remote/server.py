"""``serve(env_id)``: host worlds of a registry id for dm_env_rpc clients, in a real gRPC server.

The server makes every world with ``make(env_id, config)`` of the registry it
was started with: clients name no env and no Python object (a ``module:attr``
target never reaches it), they only create, join, step and destroy worlds of
that id (see :mod:`marlhub.adapters.remote` for the protocol). Before it
listens, the server makes one env to check that the id exists, takes the
config, and that its spaces map to dm_env_rpc tensors.

It binds 127.0.0.1 (this machine only) unless given another ``host``; beyond
loopback it should require a token (``token=...``, which clients send as
call metadata), and it warns when it does not. The traffic is plain text
unless the server is given a certificate and its key (``tls_cert=``,
``tls_key=``: then TLS only, and clients pass ``tls_root``); see the guide
``docs/guides/security.rst``.

With ``processes=N`` the server runs N processes listening on the same port
(``SO_REUSEPORT``): each connection lands in one of them, so clients step
their worlds on several cores. A world lives in one process, so joining a
world from another connection works only within one process (one server
process, or connections that share a channel).

Example:
    >>> server = serve("rock_paper_scissors")
    >>> import marlhub
    >>> env = marlhub.make(f"remote/{server.address}")
    >>> env.reset(seed=0)[0]
    {'player1': 0, 'player2': 0}
    >>> env.close(); server.stop()
"""

from __future__ import annotations

import ipaddress
import multiprocessing
import os
import signal
import threading
import warnings
from collections.abc import Mapping
from typing import Any, Optional

from marlhub.conformance.targets import is_registry_id, resolve_target
from marlhub.errors import MarlhubWarning, TargetError
from marlhub.registry import Registry, default_registry
from marlhub.tls import PemPath, server_credentials

__all__ = ["RemoteServer", "is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` names this machine only (127.0.0.0/8, ::1, localhost).

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0"), is_loopback("localhost")
        (True, False, True)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class RemoteServer:
    """A running server (see :func:`serve`); a context manager that stops it.

    Attributes:
        env_id: the id it serves.
        host: the interface it listens on.
        port: the port.
        address: ``HOST:PORT``, what clients connect to (``remote/HOST:PORT``).
        worlds: the :class:`~marlhub.adapters.remote.host.WorldHost` of this process.
    """

    def __init__(self, env_id: str, host: str, port: int, grpc_server: Any, worlds: Any,
                 children: Optional[list[Any]] = None) -> None:
        self.env_id = env_id
        self.host = host
        self.port = port
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.worlds = worlds
        self._server = grpc_server
        self._children = children or []
        self._stopped = False

    @property
    def child_processes(self) -> list[Any]:
        """The other server processes (``processes > 1``), as ``multiprocessing`` processes."""
        return list(self._children)

    def stop(self, grace: Optional[float] = 1.0) -> None:
        """Stop serving (streams get ``grace`` seconds), destroy every world, end the processes."""
        if self._stopped:
            return
        self._stopped = True
        for child in self._children:
            child.terminate()
        self._server.stop(grace).wait(None if grace is None else grace + 5)
        self.worlds.close()
        for child in self._children:
            child.join(10)
            if child.is_alive():
                child.kill()
                child.join(5)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until the server stops (or ``timeout`` passes); return whether it stopped."""
        return bool(self._server.wait_for_termination(timeout))

    def __enter__(self) -> "RemoteServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "serving"
        return f"RemoteServer({self.env_id!r} at {self.address}, {state})"


def serve(env_id: str, config: Optional[Mapping[str, Any]] = None, *, host: str = "127.0.0.1",
          port: int = 0, max_worlds: Optional[int] = None, token: Optional[str] = None,
          allow_config: bool = False, max_connections: Optional[int] = None,
          step_wait: Optional[float] = None, processes: int = 1,
          registry: Optional[Registry] = None, reuse_port: bool = False,
          tls_cert: Optional[PemPath] = None, tls_key: Optional[PemPath] = None) -> RemoteServer:
    """Serve worlds of ``env_id`` over dm_env_rpc; return the running server.

    Args:
        env_id: the registry id every world is made of, or an env class or factory as
            ``"package.module:attr"`` / ``"path/to/file.py:attr"`` (as ``marlhub check``
            takes them; a factory that takes a config gets each world's).
        config: the config every world is made with.
        host: the interface to listen on (default 127.0.0.1: this machine only).
        port: the port; 0 picks a free one (see ``RemoteServer.port``).
        max_worlds: worlds at once per process (default 64).
        token: require this token from every client.
        allow_config: let clients add to ``config`` when they create a world.
        max_connections: streams at once per process (default 64).
        step_wait: seconds a connection's Step waits for other agents (default 60).
        processes: server processes sharing the port (see the module docstring).
        registry: where ``env_id`` is made; the default registry when None (with
            ``processes > 1`` only the default registry is used).
        reuse_port: let other processes bind the port too (set for ``processes > 1``).
        tls_cert, tls_key: the server's certificate (chain) and private key, PEM files:
            the server then takes TLS connections only (clients pass ``tls_root``).

    Raises:
        UnknownEnvError, ConfigError, EnvCreationError: ``env_id`` cannot be made.
        ConfigError: ``tls_cert`` without ``tls_key`` (or the other way), or a file that
            cannot be read.
        TargetError: a ``module:attr`` that names nothing loadable.
        RemoteRequestError: its spaces or agent ids have no dm_env_rpc form.
        RemoteEnvError: ``host:port`` cannot be bound.
        MissingDependencyError: grpcio or dm-env-rpc is not installed.
    """
    from marlhub.adapters.remote.host import (
        DEFAULT_MAX_WORLDS,
        DEFAULT_STEP_WAIT,
        WorldHost,
    )
    from marlhub.adapters.remote.view import DEFAULT_MAX_CONNECTIONS, start_grpc_server
    from marlhub.adapters.remote.world import describe_world

    credentials = server_credentials(tls_cert, tls_key)  # bad files fail before anything runs
    make = _maker(env_id, registry or default_registry())
    settings = dict(config or {})
    probe = make(settings)
    try:
        describe_world(probe, env_id, settings)
    finally:
        probe.close()
    if not token and not is_loopback(host):
        warnings.warn(f"marlhub serve listens on {host}, beyond this machine, without a token: "
                      "anyone who reaches the port can create worlds. Pass a token "
                      "(--token or MARLHUB_TOKEN).", MarlhubWarning, stacklevel=2)
    worlds = WorldHost(make, env_id=env_id, config=settings,
                       allow_config=allow_config, max_worlds=max_worlds or DEFAULT_MAX_WORLDS,
                       step_wait=step_wait or DEFAULT_STEP_WAIT)
    grpc_server, bound = start_grpc_server(
        worlds, host, port, token=token, max_connections=max_connections or DEFAULT_MAX_CONNECTIONS,
        reuse_port=reuse_port or processes > 1, credentials=credentials)
    children = []
    for _ in range(processes - 1):
        child = multiprocessing.get_context("spawn").Process(
            target=_serve_child, daemon=True,
            args=(env_id, settings, os.getpid(),
                  dict(host=host, port=bound, max_worlds=max_worlds, token=token,
                       allow_config=allow_config, step_wait=step_wait,
                       max_connections=max_connections, reuse_port=True,
                       tls_cert=tls_cert, tls_key=tls_key)))
        child.start()
        children.append(child)
    return RemoteServer(env_id, host, bound, grpc_server, worlds, children)


def _maker(env_id: str, registry: Registry) -> Any:
    """``config -> env`` for a registry id or a ``module:attr`` target (the operator's choice,
    made once at start: clients only ever get worlds of it)."""
    if ":" in env_id and not is_registry_id(env_id):
        if not resolve_target(env_id).fresh:  # and a TargetError now, not at the first world
            raise TargetError(env_id, "it is one env instance, and every world needs its own env",
                              "Point at the env's class or at a factory function instead.")
        return lambda config: resolve_target(env_id, config=config or None).build()
    return lambda config: registry.make(env_id, config)


def _serve_child(env_id: str, config: dict[str, Any], parent: int,
                 options: dict[str, Any]) -> None:
    """One more server process on the same port (``processes > 1``).

    Runs until terminated, or until its parent is gone (killed without a chance
    to stop it).
    """
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = serve(env_id, config, **options)
    try:
        while not stop.wait(0.5) and os.getppid() == parent:
            pass
    finally:
        server.stop(0.5)
