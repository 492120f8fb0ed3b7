"""The client's end of one dm_env_rpc stream: requests in order, answers within a time limit.

A :class:`Link` opens a gRPC channel to ``HOST:PORT`` (waiting at most
``connect_timeout`` seconds for the server), starts one ``Process`` stream
(with the token as call metadata, when given), and sends requests on it,
several at once when asked (:meth:`Link.calls`: the server answers them in
order, so a reset and the step that fetches its observations cost one round
trip). Every answer must come within ``timeout`` seconds: a watchdog thread
cancels a stream whose answer is late, so a server that hangs or dies makes
the call raise :class:`~marlhub.errors.RemoteEnvError` (naming the address
and the call) instead of blocking forever. An error status in an answer
becomes the exception :mod:`~marlhub.adapters.remote.status` rebuilds.
A link whose stream broke stays broken: make a new env.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any, Optional

from marlhub.adapters.remote.status import error_of
from marlhub.backends import import_backend
from marlhub.errors import RemoteEnvError
from marlhub.tls import channel_credentials

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "DEFAULT_TIMEOUT", "ConnectionLink", "Link", "grpc_target"]

#: Seconds a call waits for the server's answer unless told otherwise.
DEFAULT_TIMEOUT = 30.0
#: Seconds a client waits for the server to accept the connection.
DEFAULT_CONNECT_TIMEOUT = 10.0
_TICK = 0.02


def _grpc() -> Any:
    return import_backend("grpc", package="grpc", extra="remote", feature="Remote envs")


def grpc_target(address: str) -> str:
    """Return ``address`` as gRPC wants it (``HOST:PORT``; IPv6 hosts in brackets).

    Example:
        >>> grpc_target("::1:5000"), grpc_target("127.0.0.1:5000")
        ('[::1]:5000', '127.0.0.1:5000')
    """
    host, _, port = address.rpartition(":")
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else address


class _Watchdog:
    """One thread for every link: cancels the stream of a call past its deadline."""

    def __init__(self) -> None:
        self._links: "weakref.WeakSet[Link]" = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None

    def watch(self, link: "Link") -> None:
        with self._lock:
            self._links.add(link)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="marlhub-remote-watchdog",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(_TICK)
            self._check(time.monotonic())

    def _check(self, now: float) -> None:
        # A frame of its own: no link is held while the thread sleeps, so an env that
        # is dropped closes its stream (and the server frees its world) at once.
        with self._lock:
            links = list(self._links)
        for link in links:
            deadline = link.deadline
            if deadline is not None and now > deadline:
                link.expire(deadline)


_WATCHDOG = _Watchdog()


class Link:
    """One ``Process`` stream to a dm_env_rpc server (see the module docstring).

    Args:
        address: ``HOST:PORT``.
        timeout: seconds each answer may take.
        connect_timeout: seconds the server may take to accept the connection.
        token: sent as ``authorization: Bearer TOKEN`` call metadata.
        tls_root: connect over TLS, trusting this PEM file's certificates (the server's
            self-made certificate or the authority that signed it), or True for gRPC's
            default roots; None: plain text.

    Raises:
        RemoteEnvError: no server accepted the connection in time.
        ConfigError: ``tls_root`` cannot be read.
    """

    def __init__(self, address: str, *, timeout: float = DEFAULT_TIMEOUT,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 token: Optional[str] = None, tls_root: Any = None) -> None:
        grpc = _grpc()
        from dm_env_rpc.v1 import dm_env_rpc_pb2_grpc

        self.address = address
        self.timeout = timeout
        self.deadline: Optional[float] = None
        self.broken: Optional[str] = None
        self._expired = False
        self._deadline_lock = threading.Lock()
        self._rpc_error = grpc.RpcError
        options = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]
        credentials = channel_credentials(tls_root)
        self._channel = grpc.insecure_channel(grpc_target(address), options=options) \
            if credentials is None else \
            grpc.secure_channel(grpc_target(address), credentials, options=options)
        try:
            grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
        except grpc.FutureTimeoutError:
            self._channel.close()
            hint = " over TLS (does the server listen with --tls-cert, and does tls_root " \
                "hold its certificate?)" if credentials is not None else \
                " (a server that takes TLS only needs 'tls_root')"
            raise RemoteEnvError(address, "connect", f"no server accepted the connection within "
                                 f"{connect_timeout:g}s{hint}") from None
        metadata = [("authorization", f"Bearer {token}")] if token else None
        self._requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._stream = dm_env_rpc_pb2_grpc.EnvironmentStub(self._channel).Process(
            iter(self._requests.get, None), metadata=metadata)
        self._finalizer = weakref.finalize(self, _shut, self._requests, self._channel)
        _WATCHDOG.watch(self)

    def expire(self, deadline: float) -> None:
        """Cancel the stream if the call due by ``deadline`` still waits (called by the watchdog)."""
        with self._deadline_lock:
            if self.deadline != deadline:
                return  # answered meanwhile
            self._expired = True
            self.deadline = None
        self._stream.cancel()

    def call(self, call: str, request: Any) -> Any:
        """Send one ``EnvironmentRequest``; return the payload of its answer.

        Raises:
            RemoteEnvError: the stream broke, or the answer was late.
            Exception: the error the server answered with (see ``status``).
        """
        result = self.calls([(call, request)])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def calls(self, requests: Sequence[tuple[str, Any]]) -> list[Any]:
        """Send several requests at once; return each answer's payload or error, in order.

        Raises:
            RemoteEnvError: the stream broke, or an answer was late.
        """
        if self.broken is not None:
            raise RemoteEnvError(self.address, requests[0][0], f"the connection was lost "
                                 f"earlier ({self.broken})",
                                 fix="Make a new env: this one's connection cannot be resumed.")
        for _, request in requests:
            self._requests.put(request)
        return [self._answer(call) for call, _ in requests]

    def _answer(self, call: str) -> Any:
        self.deadline = time.monotonic() + self.timeout
        try:
            response = next(self._stream)
        except self._rpc_error as exc:
            raise self._lost(call, exc) from None
        except StopIteration:
            raise self._lost(call, None) from None
        finally:
            with self._deadline_lock:
                self.deadline = None
        kind = response.WhichOneof("payload")
        if kind == "error":
            return error_of(response.error, address=self.address, call=call)
        return getattr(response, kind)

    def _lost(self, call: str, exc: Any) -> RemoteEnvError:
        if self._expired:
            self.broken = f"no answer to {call} within {self.timeout:g}s"
            return RemoteEnvError(self.address, call, f"the server did not answer within "
                                  f"{self.timeout:g}s (the connection is closed)")
        if exc is None:
            self.broken = "the server ended the stream"
            return RemoteEnvError(self.address, call, self.broken)
        code = exc.code().name if callable(getattr(exc, "code", None)) else "UNKNOWN"
        details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        self.broken = f"{code}: {details}"
        fix = ("Pass the server's token: {'token': ...} in the config, or MARLHUB_TOKEN."
               if code == "UNAUTHENTICATED" else "")
        return RemoteEnvError(self.address, call, f"the connection was lost ({self.broken})",
                              fix=fix)

    def close(self) -> None:
        """End the stream and close the channel (the server frees what it held for it)."""
        self.broken = self.broken or "the env was closed"
        self._finalizer()


def _shut(requests: "queue.SimpleQueue[Any]", channel: Any) -> None:
    requests.put(None)
    channel.close()


class ConnectionLink:
    """A :class:`Link`'s interface over a dm_env_rpc ``Connection`` someone else opened.

    For envs made from dm_env_rpc's own objects (a ``DmEnvAdaptor``'s
    connection): no time limit of marlhub's, the connection's own errors
    translated the same way.
    """

    def __init__(self, connection: Any, address: str = "a dm_env_rpc connection") -> None:
        self.connection = connection
        self.address = address
        self.timeout = DEFAULT_TIMEOUT
        self.broken: Optional[str] = None

    def call(self, call: str, request: Any) -> Any:
        """Send one ``EnvironmentRequest`` through the connection; return the answer's payload."""
        from dm_env_rpc.v1 import error

        if self.broken is not None:
            raise RemoteEnvError(self.address, call, f"the connection was closed ({self.broken})")
        kind = request.WhichOneof("payload")
        try:
            return self.connection.send(getattr(request, kind))
        except error.DmEnvRpcError as exc:
            from google.rpc import status_pb2

            status = status_pb2.Status(code=exc.code, message=exc.message, details=list(exc.details))
            raise error_of(status, address=self.address, call=call) from None
        except Exception as exc:  # grpc.RpcError and the connection's own ValueErrors
            self.broken = f"{type(exc).__name__}: {exc}"
            raise RemoteEnvError(self.address, call, f"the connection failed ({self.broken})") \
                from None

    def calls(self, requests: Sequence[tuple[str, Any]]) -> list[Any]:
        """Send requests one after the other; return each payload or error, in order."""
        results: list[Any] = []
        for call, request in requests:
            try:
                results.append(self.call(call, request))
            except RemoteEnvError:
                raise
            except Exception as exc:
                results.append(exc)
        return results

    def close(self) -> None:
        """Forget the connection (its owner closes it)."""
        self.broken = self.broken or "the env was closed"
