"""The simulator's side of the wire: :class:`PolicyClient`, RLlib's name, over gRPC.

A simulator in another process (or on another machine) makes a
``PolicyClient`` with its agents and spaces and calls the same five methods
as an in-process :class:`~marlhub.external.simulator.ExternalMultiAgentEnv`:
``start_episode``, ``get_action`` (blocks until the learner answers),
``log_action``, ``log_returns`` and ``end_episode``. Episodes may run
concurrently, from several threads of one client or from several clients.
``get_action`` sends its requests on one ``Decide`` stream per thread (cheaper
than a call per decision), ended by ``close()`` or once its thread has ended.
The learner's side listens (``marlhub.make_vec("external/HOST:PORT", N)``).

A refused call raises :class:`~marlhub.errors.ExternalEnvError` with the
server's message; a call on an episode the learner let go of (a reset
mid-episode, a time-out) raises :class:`~marlhub.errors.EpisodeDroppedError`:
start a new episode and go on.

Example (the learner listens in this process, the simulator plays in a thread)::

    import threading, gymnasium as gym, marlhub
    from marlhub.external import PolicyClient

    envs = marlhub.make_vec("external/127.0.0.1:0", 1, {"timeout": 10}, wait=False)
    def simulator():
        with PolicyClient(envs.address, possible_agents=["a"],
                          observation_spaces={"a": gym.spaces.Discrete(3)},
                          action_spaces={"a": gym.spaces.Discrete(2)}) as client:
            episode = client.start_episode()
            client.get_action(episode, {"a": 0})
            client.end_episode(episode, {"a": 1})
    threading.Thread(target=simulator).start()
    obs, infos = envs.reset()
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import EpisodeDroppedError, ExternalEnvError
from marlhub.external.codec import WireValueError, decode, encode_into, space_message
from marlhub.external.proto import load_wire
from marlhub.tls import channel_credentials

__all__ = ["PolicyClient"]


class PolicyClient:
    """Connects a simulator to a learner listening at ``address``.

    Args:
        address: the learner's ``HOST:PORT``.
        token: the learner's token (its config key ``token``), if it has one.
        possible_agents: every agent of the simulator, in order.
        observation_spaces, action_spaces: each agent's spaces (Box, Discrete,
            MultiDiscrete, MultiBinary, or Dict and Tuple of them).
        name: how the learner names this simulator in its messages.
        connect_timeout: seconds to wait for the learner to listen.
        tls_root: connect over TLS, trusting this PEM file's certificates (the learner's
            self-made certificate or the authority that signed it), or True for gRPC's
            default roots; None: plain text.

    Attributes:
        session: the session the learner gave this simulator at ``Connect``.
        learner_gone: set once the ``Connect`` stream ended (``close()``, or the learner
            went away); calls then raise :class:`~marlhub.errors.ExternalEnvError`.

    Raises:
        ExternalEnvError: nobody listens at ``address`` in time, or the learner refused
            the connection (a wrong token, spaces that differ from the learner's, too many
            simulators).
        ConfigError: ``tls_root`` cannot be read.
    """

    def __init__(self, address: str, *, token: Optional[str] = None,
                 possible_agents: list[AgentID],
                 observation_spaces: Mapping[AgentID, gym.Space],
                 action_spaces: Mapping[AgentID, gym.Space], name: str = "",
                 connect_timeout: float = 30.0, tls_root: Any = None) -> None:
        import grpc

        self.address = address
        self.possible_agents = list(possible_agents)
        self.observation_spaces = dict(observation_spaces)
        self.action_spaces = dict(action_spaces)
        self.closed = False
        self._wire = wire = load_wire()
        # A simulator started before its learner retries at least every second, where gRPC's
        # backoff would wait up to two minutes between tries (and miss a short-lived learner).
        options = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100), ("grpc.max_reconnect_backoff_ms", 1000)]
        credentials = channel_credentials(tls_root)
        self._channel = grpc.insecure_channel(address, options=options) if credentials is None \
            else grpc.secure_channel(address, credentials, options=options)
        messages = wire.messages
        prefix = f"/{wire.service}/"
        self._calls = {
            name_: getattr(self._channel, kind)(
                prefix + name_, request_serializer=messages[request].SerializeToString,
                response_deserializer=messages[response].FromString)
            for name_, (request, response, kind) in wire.rpcs.items()}
        # get_action's Decide stream of each thread that calls it
        self._decide: dict[threading.Thread, _DecideStream] = {}
        self._decide_lock = threading.Lock()
        request = messages["ConnectRequest"](token=token or "", name=name)
        try:
            for agent in self.possible_agents:
                item = request.agents.add(agent=str(agent))
                item.observation.CopyFrom(space_message(self.observation_spaces[agent]))
                item.action.CopyFrom(space_message(self.action_spaces[agent]))
        except (KeyError, WireValueError) as exc:
            self._channel.close()
            raise ExternalEnvError(f"PolicyClient({address!r})", f"cannot declare the spaces: "
                                   f"{exc}", "Give every agent an observation and an action "
                                   "space the wire takes.") from None
        try:
            grpc.channel_ready_future(self._channel).result(timeout=connect_timeout)
            self._stream = self._calls["Connect"](request, wait_for_ready=True)
            self.session = next(self._stream).session
        except grpc.FutureTimeoutError:
            self._channel.close()
            over, hint = (" over TLS", "does the learner listen with tls_cert, and does "
                          "tls_root hold its certificate?") if credentials is not None else \
                ("", "a learner that takes TLS only needs tls_root=")
            raise ExternalEnvError(f"PolicyClient({address!r})", f"no learner listens there"
                                   f"{over} (waited {connect_timeout:g} s; {hint})", "Start the "
                                   "learner first (marlhub.make_vec('external/HOST:PORT', N)), "
                                   "or raise connect_timeout.") from None
        except grpc.RpcError as exc:
            self._channel.close()
            raise _error(exc, address, "Connect") from None
        self.learner_gone = threading.Event()
        threading.Thread(target=self._watch, daemon=True, name="marlhub-policy-client").start()

    def _watch(self) -> None:
        """Keep the Connect stream open (it says the simulator is alive) until either side ends."""
        try:
            for _ in self._stream:
                pass
        except Exception:  # grpc.RpcError: cancelled by close(), or the learner went away
            pass
        self.learner_gone.set()

    def _request(self, name: str, **fields: Any) -> Any:
        """A new request of the call ``name``, of this simulator's session."""
        if self.closed:
            raise ExternalEnvError(f"PolicyClient({self.address!r})", f"{name}() after close()",
                                   "Make a new PolicyClient.")
        return self._wire.messages[self._wire.rpcs[name][0]](session=self.session, **fields)

    def _call(self, name: str, request: Any = None, **fields: Any) -> Any:
        """Send ``request`` (or a new one with ``fields``); return the response."""
        import grpc

        if request is None:
            request = self._request(name, **fields)
        try:
            return self._calls[name](request)
        except grpc.RpcError as exc:
            raise _error(exc, self.address, name) from None

    def _ask(self, request: Any) -> Any:
        """Send a GetAction request on this thread's Decide stream (opened on first use);
        return the answer. A refusal ends the stream; the next call opens a new one."""
        import grpc

        thread = threading.current_thread()
        stream = self._decide.get(thread)
        if stream is None:
            stream = _DecideStream(self._calls["Decide"])
            with self._decide_lock:
                for gone in [t for t in self._decide if not t.is_alive()]:
                    self._decide.pop(gone).end()  # threads that ended hold no stream
                self._decide[thread] = stream
        try:
            return stream.ask(request)
        except (grpc.RpcError, StopIteration) as exc:
            with self._decide_lock:
                self._decide.pop(thread, None)
            stream.end()
            if isinstance(exc, grpc.RpcError):
                raise _error(exc, self.address, "GetAction") from None
            raise ExternalEnvError(f"the learner at {self.address}", "GetAction failed: the "
                                   "learner ended the stream", "Connect again once it "
                                   "listens.") from None

    def _add_values(self, field: Any, values: Mapping[AgentID, Any], what: str) -> None:
        """Add ``values`` to the repeated ``AgentValue`` field ``field`` of a request."""
        for agent, value in _mapping(values, what).items():
            encode_into(field.add(agent=str(agent)).value, value)

    def start_episode(self, episode_id: Optional[str] = None,
                      training_enabled: bool = True) -> str:
        """Start an episode; return its id (a new one for None)."""
        return self._call("StartEpisode", episode_id=episode_id or "",
                          training_enabled=training_enabled).episode_id

    def get_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> dict:
        """Return the learner's actions for the agents in ``observation_dict`` (blocks)."""
        request = self._request("GetAction", episode_id=episode_id)
        self._add_values(request.observations, observation_dict, "observation_dict")
        response = self._ask(request)
        try:
            return {item.agent: decode(item.value, self.action_spaces[item.agent])
                    for item in response.actions}
        except (KeyError, WireValueError) as exc:
            raise ExternalEnvError(f"episode {episode_id!r}", f"the learner answered an action "
                                   f"this simulator cannot take: {exc}", "Check that both sides "
                                   "declare the same spaces.") from None

    def log_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any],
                   action_dict: Mapping[AgentID, Any]) -> None:
        """Record actions the simulator took itself for these observations (off-policy)."""
        request = self._request("LogAction", episode_id=episode_id)
        self._add_values(request.observations, observation_dict, "observation_dict")
        self._add_values(request.actions, action_dict, "action_dict")
        self._call("LogAction", request)

    def log_returns(self, episode_id: str, reward_dict: Mapping[AgentID, Any],
                    info_dict: Optional[Mapping[AgentID, Any]] = None,
                    done_dict: Optional[Mapping[AgentID, Any]] = None) -> None:
        """Add rewards (summed into the learner's next step), infos, and agents that are done."""
        messages = self._wire.messages
        rewards = [messages["AgentReward"](agent=str(a), reward=float(r))
                   for a, r in _mapping(reward_dict, "reward_dict").items()]
        infos = [messages["AgentInfo"](agent=str(a), json=json.dumps(i, default=_jsonable))
                 for a, i in _mapping(info_dict or {}, "info_dict").items()]
        done = [str(a) for a, flag in _mapping(done_dict or {}, "done_dict").items()
                if flag and a != "__all__"]
        self._call("LogReturns", episode_id=episode_id, rewards=rewards, infos=infos,
                   done_agents=done)

    def end_episode(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> None:
        """End the episode (terminated) with the agents' final observations."""
        request = self._request("EndEpisode", episode_id=episode_id)
        self._add_values(request.observations, observation_dict, "observation_dict")
        self._call("EndEpisode", request)

    def close(self) -> None:
        """Disconnect: the learner ends this simulator's running episodes, truncated."""
        if self.closed:
            return
        try:
            self._call("Disconnect")
        except ExternalEnvError:
            pass  # the learner is gone already
        self.closed = True
        with self._decide_lock:
            streams, self._decide = list(self._decide.values()), {}
        for stream in streams:
            stream.end()
        self._stream.cancel()
        self._channel.close()

    def __enter__(self) -> "PolicyClient":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PolicyClient({self.address!r}, session={self.session[:8]})"


class _DecideStream:
    """One thread's ``Decide`` stream: requests go in through a queue, answers come back in
    order (one request in flight at a time: the thread waits for each answer)."""

    def __init__(self, call: Any) -> None:
        self._requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        self._answers = call(iter(self._requests.get, None))

    def ask(self, request: Any) -> Any:
        self._requests.put(request)
        return next(self._answers)

    def end(self) -> None:
        """End the stream (and gRPC's thread that reads its requests)."""
        self._requests.put(None)
        self._answers.cancel()


def _error(exc: Any, address: str, call: str) -> ExternalEnvError:
    code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
    detail = exc.details() if hasattr(exc, "details") else str(exc)
    error: type[ExternalEnvError]
    if code == "ABORTED":
        error, what, fix = EpisodeDroppedError, "was refused", "Start a new episode and go on."
    elif code in ("UNAVAILABLE", "CANCELLED", "DEADLINE_EXCEEDED"):
        error, what, fix = ExternalEnvError, f"failed ({code})", \
            "The learner is gone or unreachable; connect again once it listens."
    else:
        error, what, fix = ExternalEnvError, f"was refused ({code})", \
            "Fix the request as the message says."
    return error(f"the learner at {address}", f"{call} {what}: {_problem(detail, fix)}", fix)


def _problem(detail: str, fix: str) -> str:
    """The learner's message as the problem of a client's error that ends with ``fix``:
    without ``fix`` where the learner already gave it, and without the final period.

    Example:
        >>> _problem("episode 'e': the learner closed the env. Start a new episode and go on.",
        ...          "Start a new episode and go on.")
        "episode 'e': the learner closed the env"
    """
    detail = detail.rstrip()
    if detail.endswith(fix):
        detail = detail[:-len(fix)].rstrip()
    return detail.rstrip(".")


def _mapping(value: Any, what: str) -> Mapping[AgentID, Any]:
    if not isinstance(value, Mapping):
        raise ExternalEnvError("PolicyClient", f"{what} must be a dict keyed by agent, got "
                               f"{type(value).__name__}", "Pass {agent_id: value, ...}.")
    return value


def _jsonable(value: Any) -> Any:
    return value.tolist() if isinstance(value, (np.ndarray, np.generic)) else str(value)
