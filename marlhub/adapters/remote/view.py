"""Hub -> dm_env_rpc: hub envs served to any dm_env_rpc client over gRPC.

:class:`EnvironmentService` is dm_env_rpc's ``Environment`` service: each
``Process`` stream is one :class:`~marlhub.adapters.remote.session.Session`
over the worlds of one :class:`~marlhub.adapters.remote.host.WorldHost`.
:func:`start_grpc_server` runs it in a real ``grpc.server``, bound to
127.0.0.1 unless told otherwise. With a token, every stream must send it as
call metadata (``authorization: Bearer TOKEN``) or is refused with
``UNAUTHENTICATED`` before any request is read. With gRPC server credentials
(:func:`marlhub.tls.server_credentials`) it takes TLS connections only.

``marlhub serve ID`` and :func:`marlhub.remote.serve` build the host from a
registry id; this module takes any factory.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> host = WorldHost(lambda config: RockPaperScissors(config), env_id="rock_paper_scissors")
    >>> server, port = start_grpc_server(host, "127.0.0.1", 0)
    >>> port > 0
    True
    >>> server.stop(None).wait(5)
    True
"""

from __future__ import annotations

import hmac
import itertools
from collections.abc import Iterator
from concurrent import futures
from typing import Any, Optional

from marlhub.adapters.remote.host import WorldHost
from marlhub.adapters.remote.session import Session
from marlhub.backends import import_backend

__all__ = ["DEFAULT_MAX_CONNECTIONS", "MAX_MESSAGE_BYTES", "TOKEN_HEADER", "EnvironmentService",
           "start_grpc_server"]

#: Streams one server serves at once (each holds a worker thread) unless told otherwise.
DEFAULT_MAX_CONNECTIONS = 64
#: The largest request the server reads (bytes): a larger one is refused (RESOURCE_EXHAUSTED)
#: before it is held whole. Actions and world settings are far smaller.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: The call metadata key that carries the token (``Bearer TOKEN``).
TOKEN_HEADER = "authorization"


def _grpc() -> Any:
    return import_backend("grpc", package="grpc", extra="remote", feature="Serving envs over gRPC")


def _service_base() -> Any:
    _grpc()  # the generated service module imports grpc: name that extra first
    return import_backend("dm_env_rpc.v1.dm_env_rpc_pb2_grpc", package="dm_env_rpc", extra="remote",
                          feature="Serving envs over dm_env_rpc").EnvironmentServicer


class EnvironmentService(_service_base()):  # type: ignore[misc]
    """dm_env_rpc's ``Environment`` service over the worlds of ``host``.

    Args:
        host: the worlds.
        token: when set, the token every stream must send (``authorization: Bearer TOKEN``).
    """

    def __init__(self, host: WorldHost, *, token: Optional[str] = None) -> None:
        self.host = host
        self.token = token
        self._numbers = itertools.count(1)

    def authorized(self, metadata: Any) -> bool:
        """Tell whether a stream's call metadata carries the token (always, without one)."""
        if self.token is None:
            return True
        sent = dict(metadata or ()).get(TOKEN_HEADER, "")
        expected = f"Bearer {self.token}"
        return isinstance(sent, str) and hmac.compare_digest(sent.encode(), expected.encode())

    def Process(self, request_iterator: Iterator[Any], context: Any) -> Iterator[Any]:  # noqa: N802
        """Answer each request of one stream in order (dm_env_rpc's only RPC)."""
        if not self.authorized(context.invocation_metadata()):
            context.abort(_grpc().StatusCode.UNAUTHENTICATED,
                          "this marlhub server requires a token: send it as call metadata "
                          f"'{TOKEN_HEADER}: Bearer TOKEN' (marlhub's client: the 'token' config "
                          "key or MARLHUB_TOKEN)")
        session = Session(self.host, f"{context.peer()}#{next(self._numbers)}", context.is_active)
        context.add_callback(session.close)  # the client went away, or the server stops
        try:
            for request in request_iterator:
                yield session.handle(request)
        finally:
            session.close()


def _handlers(service: EnvironmentService) -> Any:
    """``Process`` of ``service``, its requests parsed here: gRPC's own parsing of a stream's
    request, when it fails, leaves the call in the server's books for good (grpcio 1.7x: about
    20 KB per call), so garbage is refused (INVALID_ARGUMENT) by the handler instead."""
    grpc = _grpc()
    from dm_env_rpc.v1 import dm_env_rpc_pb2

    def parsed(requests: Iterator[bytes], context: Any) -> Iterator[Any]:
        for raw in requests:
            try:
                request = dm_env_rpc_pb2.EnvironmentRequest.FromString(raw)
            except Exception as exc:  # protobuf's DecodeError, or worse
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "a request does not parse as "
                              f"dm_env_rpc.v1.EnvironmentRequest: {exc}")
                return  # abort() raises; this is for readers
            yield request

    process = grpc.stream_stream_rpc_method_handler(
        lambda requests, context: service.Process(parsed(requests, context), context),
        response_serializer=dm_env_rpc_pb2.EnvironmentResponse.SerializeToString)
    return grpc.method_handlers_generic_handler("dm_env_rpc.v1.Environment",
                                                {"Process": process})


def start_grpc_server(host: WorldHost, address: str = "127.0.0.1", port: int = 0, *,
                      token: Optional[str] = None,
                      max_connections: int = DEFAULT_MAX_CONNECTIONS,
                      reuse_port: bool = False, credentials: Any = None) -> tuple[Any, int]:
    """Start a ``grpc.server`` serving ``host``; return it and the port it listens on.

    Args:
        host: the worlds to serve.
        address: the interface to bind (127.0.0.1: this machine only).
        port: the port; 0 picks a free one.
        token: require this token from every stream.
        max_connections: streams at once; more are refused (RESOURCE_EXHAUSTED).
        reuse_port: let other processes bind the same port (``SO_REUSEPORT``), so
            that several server processes share the connections.
        credentials: ``grpc.ServerCredentials`` to listen with TLS (None: plain text).

    Raises:
        RemoteEnvError: the address cannot be bound.
    """
    grpc = _grpc()
    from marlhub.errors import RemoteEnvError

    # Requests past MAX_MESSAGE_BYTES are refused by gRPC (RESOURCE_EXHAUSTED) before they
    # are held whole; answers (observations) may be any size.
    options = [("grpc.max_send_message_length", -1),
               ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
               ("grpc.so_reuseport", int(reuse_port))]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_connections + 2),
                         options=options, maximum_concurrent_rpcs=max_connections)
    server.add_generic_rpc_handlers((_handlers(EnvironmentService(host, token=token)),))
    target = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
    try:
        bound = server.add_secure_port(target, credentials) if credentials is not None \
            else server.add_insecure_port(target)
    except RuntimeError as exc:
        bound = 0
        reason = str(exc)
    else:
        reason = "the port is taken or the address is not this machine's"
    if not bound:
        server.stop(None)
        raise RemoteEnvError(target, "bind", f"cannot listen there ({reason})",
                             fix="Pick another --port (0 picks a free one) or --host.")
    server.start()
    return server, bound
