"""The learner's side of the wire: a gRPC server that simulators connect to as clients.

:class:`PolicyServer` listens at ``HOST:PORT`` (loopback unless told
otherwise) and serves the ``ExternalEnv`` service of ``external.proto``. A
simulator calls ``Connect`` with its agents and spaces (the first one fixes
them unless the learner gave them; a simulator whose spaces differ is refused
at connect) and keeps that stream open while it plays; the other calls feed
the :class:`~marlhub.external.episodes.EpisodeBook` that the learner's hub
env reads. When a Connect stream closes (the simulator disconnected or died),
its running episodes end, truncated. A malformed request, a value outside
its space or a bad token gets an error status saying what was wrong; the
server goes on serving the others. A ``GetAction`` (or ``Decide``) or
``EndEpisode`` request may carry the calls that need no answer that the
simulator made since its last request (``logged``): each is applied in order
first, as its unary call would be, so that a decision and its rewards cost
one round trip.

Its bounds, each refused with ``RESOURCE_EXHAUSTED`` past it: ``max_clients``
simulators connected, ``max_client_episodes`` running episodes per simulator
(so one cannot take every place of ``max_episodes``), :attr:`PolicyServer.max_calls`
calls and streams at once, requests of :data:`MAX_MESSAGE_BYTES`, :data:`MAX_LOGGED_CALLS`
calls carried by one request. It speaks plain
text unless given a certificate and its key (``tls_cert``, ``tls_key``: then TLS
only, and simulators pass ``tls_root``).

Example:
    >>> server = PolicyServer("127.0.0.1:0")
    >>> server.port > 0, server.book is None
    (True, True)
    >>> server.stop()
"""

from __future__ import annotations

import hmac
import json
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent import futures
from typing import Any, Callable, Optional

import gymnasium as gym

from marlhub.core import AgentID
from marlhub.errors import EpisodeDroppedError, ExternalEnvError, ExternalTimeoutError
from marlhub.external.codec import (
    WireValueError,
    decode,
    encode_into,
    space_from_message,
)
from marlhub.external.episodes import DEFAULT_MAX_EPISODES, EpisodeBook
from marlhub.external.proto import REFUSED_LOGGED, load_wire
from marlhub.tls import PemPath, server_credentials

__all__ = ["DEFAULT_MAX_CLIENTS", "DEFAULT_MAX_CLIENT_EPISODES", "MAX_LOGGED_CALLS",
           "MAX_MESSAGE_BYTES", "PolicyServer"]

#: How many simulators may be connected at once, unless told otherwise.
DEFAULT_MAX_CLIENTS = 64
#: How many episodes one simulator may run at once, unless told otherwise: a simulator that
#: starts episodes without end is refused (RESOURCE_EXHAUSTED) before the others are.
DEFAULT_MAX_CLIENT_EPISODES = 256
#: The largest request the server reads (bytes): gRPC refuses a larger one with
#: RESOURCE_EXHAUSTED before it is held whole. Observations of 1 MiB fit many times over.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: The most calls one request may carry (``logged``); PolicyClient sends 64 at most.
MAX_LOGGED_CALLS = 1024
#: Each kind of ``Logged`` call, with the name of its unary rpc.
_LOGGED_RPCS = {"log_returns": "LogReturns", "log_action": "LogAction"}


class _Refused(Exception):
    """A request refused with a gRPC status code name and a message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class PolicyServer:
    """Listens for simulators at ``address`` and writes their calls into :attr:`book`.

    Args:
        address: ``HOST:PORT`` to listen at (port 0: any free port, see :attr:`port`).
        token: the token simulators must send (None: none needed).
        max_clients: how many simulators may be connected at once.
        max_episodes: how many episodes may run at once.
        spaces: ``(possible_agents, observation_spaces, action_spaces)`` the simulators must
            declare; None: the first simulator to connect fixes them.
        max_client_episodes: how many episodes one simulator may run at once.
        tls_cert, tls_key: the server's certificate (chain) and private key, PEM files:
            TLS connections only (simulators pass ``tls_root``); None: plain text.

    Attributes:
        book: the episodes (None until the spaces are known).
        port: the port listened at.
        max_calls: calls and streams served at once, ``2 * max_clients + 8`` (each holds a
            thread: a simulator's Connect stream, each Decide stream, each GetAction that
            waits for its answer); more are refused with ``RESOURCE_EXHAUSTED``.

    Raises:
        ExternalEnvError: the address cannot be listened at.
        ConfigError: ``tls_cert`` without ``tls_key`` (or the other way), or a file that
            cannot be read.
    """

    def __init__(self, address: str, *, token: Optional[str] = None,
                 max_clients: int = DEFAULT_MAX_CLIENTS,
                 max_episodes: int = DEFAULT_MAX_EPISODES,
                 spaces: Optional[tuple[list[AgentID], Mapping[AgentID, gym.Space],
                                        Mapping[AgentID, gym.Space]]] = None,
                 max_client_episodes: int = DEFAULT_MAX_CLIENT_EPISODES,
                 tls_cert: Optional[PemPath] = None, tls_key: Optional[PemPath] = None) -> None:
        import grpc

        credentials = server_credentials(tls_cert, tls_key)
        self.address = address
        self.token = token
        self.max_clients = max_clients
        self.max_episodes = max_episodes
        self.max_client_episodes = max_client_episodes
        self.max_calls = 2 * max_clients + 8
        self.book: Optional[EpisodeBook] = None
        self.sessions: dict[str, str] = {}  # session -> the simulator's name
        # session -> the peer of the Connect stream that made it: a session is good only on
        # its own client's connection (another client that presents it is refused)
        self._peers: dict[str, str] = {}
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._wire = load_wire()
        if spaces is not None:
            self.book = self._new_book(*spaces)
        # Each connected simulator holds a thread (its Connect stream), and each of its Decide
        # streams (or GetAction calls waiting for an answer) another. Calls past the threads
        # are refused, not queued: a queue would grow without bound under a flood, and a
        # queued call of a simulator could wait for ever behind others' open streams.
        self._server = grpc.server(futures.ThreadPoolExecutor(
            max_workers=self.max_calls, thread_name_prefix="marlhub-policy-server"),
            options=[("grpc.so_reuseport", 0),  # a second learner on a taken port: refused
                     ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)],
            maximum_concurrent_rpcs=self.max_calls)
        self._server.add_generic_rpc_handlers((self._handlers(grpc),))
        host = address.rsplit(":", 1)[0]
        try:
            self.port = self._server.add_secure_port(address, credentials) \
                if credentials is not None else self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise ExternalEnvError(f"external/{address}", f"cannot listen there ({exc})",
                                   "Pick a free port (0: any) on an address of this "
                                   "machine.") from None
        if not self.port:
            raise ExternalEnvError(f"external/{address}", "cannot listen there (the port is "
                                   "taken, or the host is not this machine's)",
                                   "Pick a free port (0: any), e.g. external/127.0.0.1:0.")
        self.address = f"{host}:{self.port}"
        self._server.start()

    def _new_book(self, agents: list[AgentID], observation_spaces: Mapping[AgentID, gym.Space],
                  action_spaces: Mapping[AgentID, gym.Space]) -> EpisodeBook:
        return EpisodeBook(list(agents), observation_spaces, action_spaces,
                           max_episodes=self.max_episodes, name=f"external/{self.address}")

    def wait_for_book(self, timeout: float) -> EpisodeBook:
        """Return :attr:`book`, waiting up to ``timeout`` s for a simulator to fix the spaces.

        Raises:
            ExternalTimeoutError: no simulator connected in time.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.book is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ExternalTimeoutError(
                        f"external/{self.address}", f"no simulator connected within "
                        f"timeout={timeout:g} s, so the agents and spaces are unknown",
                        "Start a simulator: marlhub.external.PolicyClient("
                        f"'{self.address}', possible_agents=..., observation_spaces=..., "
                        "action_spaces=...), give the spaces in the config "
                        "('possible_agents', 'observation_spaces', 'action_spaces'), or raise "
                        "'timeout'.")
                self._lock.wait(left)
        return self.book

    def describe(self) -> str:
        """Who is connected, for the learner's time-out messages."""
        with self._lock:
            names = sorted(self.sessions.values())
        if not names:
            return f"no simulator is connected to {self.address}"
        return f"{len(names)} simulators connected to {self.address}: {', '.join(names[:5])}"

    def stop(self) -> None:
        """Stop serving: running episodes end, waiting simulators get an error status."""
        self._stopping.set()
        if self.book is not None:
            self.book.close("the learner closed the env")
        self._server.stop(grace=0.5).wait(5.0)

    # -- the service -------------------------------------------------------------------

    def _handlers(self, grpc: Any) -> Any:
        messages = self._wire.messages
        calls: dict[str, Callable[[Any, Any], Any]] = {
            "StartEpisode": self._start_episode, "GetAction": self._get_action,
            "Decide": self._get_action, "LogAction": self._log_action,
            "LogReturns": self._log_returns, "EndEpisode": self._end_episode,
            "Disconnect": self._disconnect}
        table = {}
        for name, (request, response, kind) in self._wire.rpcs.items():
            parse = _parser(messages[request], grpc)
            serialize = messages[response].SerializeToString
            if kind == "unary_stream":  # Connect
                table[name] = grpc.unary_stream_rpc_method_handler(
                    lambda raw, context, parse=parse: self._connect(parse(raw, context), context),
                    response_serializer=serialize)
            elif kind == "stream_stream":  # Decide
                table[name] = grpc.stream_stream_rpc_method_handler(
                    _each(_guarded(calls[name], parse, grpc)), response_serializer=serialize)
            else:
                table[name] = grpc.unary_unary_rpc_method_handler(
                    _guarded(calls[name], parse, grpc), response_serializer=serialize)
        return grpc.method_handlers_generic_handler(self._wire.service, table)

    def _connect(self, request: Any, context: Any) -> Any:
        import grpc

        try:
            name = self._admit(request)
        except _Refused as refused:
            context.abort(getattr(grpc.StatusCode, refused.code), str(refused))
            return  # abort() raises; this is for readers
        session = uuid.uuid4().hex
        with self._lock:
            self.sessions[session] = name
            self._peers[session] = context.peer()
        closed = threading.Event()
        context.add_callback(closed.set)
        try:
            yield self._wire.messages["ConnectResponse"](
                session=session, max_episodes=min(self.max_episodes, self.max_client_episodes),
                takes_logged=True)
            while not closed.wait(0.25) and not self._stopping.is_set():
                pass
        finally:
            with self._lock:
                self.sessions.pop(session, None)
                self._peers.pop(session, None)
            if self.book is not None:
                self.book.disconnect(session, f"the simulator {name} disconnected")

    def _admit(self, request: Any) -> str:
        if self.token and not hmac.compare_digest(request.token.encode(), self.token.encode()):
            raise _Refused("UNAUTHENTICATED", "a wrong or missing token: pass the learner's "
                           "token (config key 'token') as PolicyClient(..., token=...)")
        try:
            agents = [item.agent for item in request.agents]
            observation = {i.agent: space_from_message(i.observation) for i in request.agents}
            action = {i.agent: space_from_message(i.action) for i in request.agents}
        except WireValueError as exc:
            raise _Refused("INVALID_ARGUMENT", f"Connect declares a bad space: {exc}") from None
        if not agents or len(set(agents)) != len(agents):
            raise _Refused("INVALID_ARGUMENT", f"Connect must declare each agent once, with its "
                           f"spaces; got {agents}")
        with self._lock:
            if len(self.sessions) >= self.max_clients:
                raise _Refused("RESOURCE_EXHAUSTED", f"{self.max_clients} simulators are "
                               "connected already (the learner's 'max_clients')")
            if self.book is None:
                self.book = self._new_book(agents, observation, action)
                self._lock.notify_all()
            else:
                problem = _disagreement(self.book, agents, observation, action)
                if problem:
                    raise _Refused("FAILED_PRECONDITION", f"the simulator's agents or spaces "
                                   f"differ from the learner's: {problem}")
        return request.name or f"client-{len(self.sessions)}"

    def _session(self, request: Any, context: Any) -> tuple[EpisodeBook, str]:
        session = request.session
        with self._lock:
            known = session in self.sessions and self._peers.get(session) == context.peer()
        if not known or self.book is None:
            raise _Refused("UNAUTHENTICATED", "an unknown session: call Connect first, keep its "
                           "stream open, and send the session it returned")
        return self.book, session

    def _values(self, book: EpisodeBook, items: Any, spaces: Mapping[AgentID, gym.Space],
                what: str) -> dict[AgentID, Any]:
        values = {}
        for item in items:
            if item.agent not in spaces:
                raise _Refused("INVALID_ARGUMENT", f"{what} of the unknown agent {item.agent!r} "
                               f"(the agents are {book.possible_agents})")
            if item.agent in values:
                raise _Refused("INVALID_ARGUMENT", f"two {what}s of agent {item.agent!r}")
            try:
                values[item.agent] = decode(item.value, spaces[item.agent])
            except WireValueError as exc:
                raise _Refused("INVALID_ARGUMENT", f"the {what} of agent {item.agent!r}: {exc}") \
                    from None
        return values

    def _start_episode(self, request: Any, context: Any) -> Any:
        book, session = self._session(request, context)
        with book.changed:  # the count and the start at once (the book's lock is reentrant)
            running = sum(1 for owner, _ in book.episodes if owner == session)
            if running >= self.max_client_episodes:
                raise _Refused("RESOURCE_EXHAUSTED", f"this simulator runs {running} episodes "
                               f"already, its limit (the learner's 'max_client_episodes'): end "
                               "episodes before starting more")
            full = len(book.episodes) >= book.max_episodes
            try:
                episode_id = book.start_episode(request.episode_id or None,
                                                request.training_enabled, owner=session)
            except ExternalEnvError as exc:
                if full:  # the learner's max_episodes: a bound, like the one above
                    raise _Refused("RESOURCE_EXHAUSTED", str(exc)) from None
                raise
        return self._wire.messages["StartEpisodeResponse"](episode_id=episode_id)

    def _apply_logged(self, request: Any, context: Any) -> None:
        """Apply the calls ``request`` carries, in order, each exactly as its unary call; the
        first one refused ends the request with its error, named in the trailing metadata."""
        if len(request.logged) > MAX_LOGGED_CALLS:
            raise _Refused("RESOURCE_EXHAUSTED", f"a request carries {len(request.logged)} "
                           f"logged calls, more than {MAX_LOGGED_CALLS}: send them in more "
                           "requests")
        for index, item in enumerate(request.logged):
            kind = item.WhichOneof("kind")
            try:
                if kind == "log_returns":
                    self._log_returns(item.log_returns, context)
                elif kind == "log_action":
                    self._log_action(item.log_action, context)
                else:
                    raise _Refused("INVALID_ARGUMENT", f"logged call {index} is empty: set "
                                   "its log_returns or log_action")
            except Exception:
                context.set_trailing_metadata(
                    ((REFUSED_LOGGED, f"{index} {_LOGGED_RPCS.get(kind or '', 'Logged')}"),))
                raise

    def _get_action(self, request: Any, context: Any) -> Any:
        if request.logged:
            self._apply_logged(request, context)
            if not request.observations:  # the logged calls alone: no decision to answer
                return self._wire.messages["GetActionResponse"]()
        book, session = self._session(request, context)
        obs = self._values(book, request.observations, book.observation_spaces, "observation")
        actions = book.get_action(request.episode_id, obs, in_spaces=True, owner=session)
        response = self._wire.messages["GetActionResponse"]()
        for agent, action in actions.items():
            encode_into(response.actions.add(agent=agent).value, action, typed=True)
        return response

    def _log_action(self, request: Any, context: Any) -> Any:
        book, session = self._session(request, context)
        obs = self._values(book, request.observations, book.observation_spaces, "observation")
        actions = self._values(book, request.actions, book.action_spaces, "action")
        book.log_action(request.episode_id, obs, actions, owner=session)
        return self._wire.messages["Ack"]()

    def _log_returns(self, request: Any, context: Any) -> Any:
        book, session = self._session(request, context)
        rewards: dict[AgentID, float] = {}
        for item in request.rewards:
            rewards[item.agent] = rewards.get(item.agent, 0.0) + item.reward
        try:
            infos = {item.agent: json.loads(item.json) if item.json else {}
                     for item in request.infos}
        except ValueError as exc:
            raise _Refused("INVALID_ARGUMENT", f"an info that is no JSON: {exc}") from None
        book.log_returns(request.episode_id, rewards, infos,
                         {a: True for a in request.done_agents}, owner=session)
        return self._wire.messages["Ack"]()

    def _end_episode(self, request: Any, context: Any) -> Any:
        if request.logged:
            self._apply_logged(request, context)
        book, session = self._session(request, context)
        obs = self._values(book, request.observations, book.observation_spaces, "observation")
        book.end_episode(request.episode_id, obs, owner=session)
        return self._wire.messages["Ack"]()

    def _disconnect(self, request: Any, context: Any) -> Any:
        book, session = self._session(request, context)
        with self._lock:
            name = self.sessions.pop(session, "")
        book.disconnect(session, f"the simulator {name} disconnected")
        return self._wire.messages["Ack"]()


def _parser(message_class: Any, grpc: Any) -> Callable[[bytes, Any], Any]:
    def parse(raw: bytes, context: Any) -> Any:
        try:
            return message_class.FromString(raw)
        except Exception as exc:  # protobuf's DecodeError, or worse
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the request does not parse as "
                          f"{message_class.DESCRIPTOR.full_name}: {exc}")
    return parse


def _guarded(call: Callable[[Any, Any], Any], parse: Callable[[bytes, Any], Any],
             grpc: Any) -> Callable[[bytes, Any], Any]:
    """``call`` with its refusals and the book's errors turned into gRPC statuses."""
    def handler(raw: bytes, context: Any) -> Any:
        request = parse(raw, context)
        try:
            return call(request, context)
        except _Refused as refused:
            context.abort(getattr(grpc.StatusCode, refused.code), str(refused))
        except EpisodeDroppedError as exc:
            context.abort(grpc.StatusCode.ABORTED, str(exc))
        except ExternalEnvError as exc:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
    return handler


def _each(handler: Callable[[bytes, Any], Any]) -> Callable[[Any, Any], Any]:
    """A stream's handler: ``handler`` answers each request in order, on the stream; a refusal
    (``context.abort``) ends the stream with its status."""
    def each(requests: Any, context: Any) -> Any:
        for raw in requests:
            yield handler(raw, context)
    return each


def _disagreement(book: EpisodeBook, agents: list[AgentID],
                  observation: Mapping[AgentID, gym.Space],
                  action: Mapping[AgentID, gym.Space]) -> str:
    """What differs between the book's agents and spaces and a simulator's ("" if nothing)."""
    if agents != book.possible_agents:
        return f"agents {agents} vs {book.possible_agents}"
    for agent in agents:
        for kind, theirs, ours in (("observation", observation, book.observation_spaces),
                                   ("action", action, book.action_spaces)):
            if theirs[agent] != ours[agent]:
                return f"the {kind} space of {agent!r} is {theirs[agent]}, the learner's " \
                       f"{ours[agent]}"
    return ""
