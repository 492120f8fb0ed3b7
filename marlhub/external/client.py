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

``log_returns`` needs no answer, and what it logs reaches the learner with the
episode's next step anyway: the client keeps it and sends it inside the
episode's next request (``get_action``, ``log_action``, ``end_episode``), so a
decision and its rewards cost one round trip (:mod:`marlhub.external.carry`).
``close()`` sends what is still kept. A call the client can tell may be
refused (an unknown agent or episode) is sent at once; a kept call that the
learner refuses all the same (the episode was let go of meanwhile) raises its
error, as its own call would have, from the request that carried it. What a
simulator logged and never followed with a call is lost if it dies (its own
call would have reached the episode's truncated end): ``carry_logged=False``
sends each ``log_returns`` on its own, as does a learner too old to take them.

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
from marlhub.external.carry import CarriedCalls
from marlhub.external.codec import WireValueError, decode, encode_into, space_message
from marlhub.external.proto import REFUSED_LOGGED, load_wire
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
        carry_logged: send each ``log_returns`` inside the episode's next request (one
            round trip per decision); False: a call of its own each (as does a learner that
            does not take them).

    Attributes:
        session: the session the learner gave this simulator at ``Connect``.
        carries_logged: whether ``log_returns`` rides on the next request.
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
                 connect_timeout: float = 30.0, tls_root: Any = None,
                 carry_logged: bool = True) -> None:
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
            connected = next(self._stream)
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
        self.session = connected.session
        self.carries_logged = bool(carry_logged and connected.takes_logged)
        self._carried = CarriedCalls(connected.max_episodes, self.possible_agents)
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

    def _ask(self, request: Any, call: str = "GetAction") -> Any:
        """Send a GetAction request on this thread's Decide stream (opened on first use);
        return the answer. A refusal ends the stream; the next call opens a new one.
        ``call``: what the request does, for the messages (``LogReturns`` for logged calls)."""
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
            answer = stream.ask(request)
        except (grpc.RpcError, StopIteration) as exc:
            with self._decide_lock:
                self._decide.pop(thread, None)
            stream.end()
            self._carried.forget(request.episode_id)  # its later calls go at once
            if isinstance(exc, grpc.RpcError):
                raise _error(exc, self.address, call) from None
            raise ExternalEnvError(f"the learner at {self.address}", f"{call} failed: the "
                                   "learner ended the stream", "Connect again once it "
                                   "listens.") from None
        if self.carries_logged:
            self._carried.running(request.episode_id)
        return answer

    def _add_values(self, field: Any, values: Mapping[AgentID, Any], what: str) -> None:
        """Add ``values`` to the repeated ``AgentValue`` field ``field`` of a request."""
        for agent, value in _mapping(values, what).items():
            encode_into(field.add(agent=str(agent)).value, value)

    def _carry(self, request: Any, calls: list[Any]) -> None:
        """Put the kept ``calls`` (``LogReturnsRequest`` messages) into ``request.logged``."""
        logged = request.logged
        for call in calls:
            logged.add(log_returns=call)

    def _send_logged(self, episode_id: str, call: str, item: Any = None) -> None:
        """Send the episode's kept calls, then ``item`` (a ``Logged``), on their own: a
        request on the Decide stream that decides nothing."""
        request = self._request("GetAction", episode_id=episode_id)
        self._carry(request, self._carried.take(episode_id))
        if item is not None:
            request.logged.append(item)
        self._ask(request, call)

    def start_episode(self, episode_id: Optional[str] = None,
                      training_enabled: bool = True) -> str:
        """Start an episode; return its id (a new one for None)."""
        started = self._call("StartEpisode", episode_id=episode_id or "",
                             training_enabled=training_enabled).episode_id
        if self.carries_logged:
            self._carried.started(started)
        return started

    def get_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> dict:
        """Return the learner's actions for the agents in ``observation_dict`` (blocks)."""
        request = self._request("GetAction", episode_id=episode_id)
        self._add_values(request.observations, observation_dict, "observation_dict")
        if self.carries_logged:
            self._carry(request, self._carried.take(episode_id))
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
        if self.carries_logged:  # with the calls kept before it, on the Decide stream
            self._send_logged(episode_id, "LogAction", self._wire.messages["Logged"](
                log_action=request))
        else:
            self._call("LogAction", request)

    def log_returns(self, episode_id: str, reward_dict: Mapping[AgentID, Any],
                    info_dict: Optional[Mapping[AgentID, Any]] = None,
                    done_dict: Optional[Mapping[AgentID, Any]] = None) -> None:
        """Add rewards (summed into the learner's next step), infos, and agents that are done.

        Kept and sent inside the episode's next request (with ``carries_logged``), or at once
        where the learner may refuse it; a kept call the learner refuses raises from the
        call that carries it."""
        rewards = {a: float(r) for a, r in _mapping(reward_dict, "reward_dict").items()}
        info_dict = _mapping(info_dict or {}, "info_dict")
        infos = {a: json.dumps(i, default=_jsonable) for a, i in info_dict.items()}
        done = [a for a, flag in _mapping(done_dict or {}, "done_dict").items()
                if flag and a != "__all__"]
        request = self._request("LogReturns", episode_id=episode_id)
        add = request.rewards.add
        for agent, reward in rewards.items():
            add(agent=str(agent), reward=reward)
        for agent, text in infos.items():
            request.infos.add(agent=str(agent), json=text)
        request.done_agents.extend(str(a) for a in done)
        if not self.carries_logged:
            self._call("LogReturns", request)
        elif not self._carried.keep(episode_id, request, rewards, info_dict, done,
                                    sum(map(len, infos.values()))):
            self._send_logged(episode_id, "LogReturns",
                              self._wire.messages["Logged"](log_returns=request))
        elif self._carried.full(episode_id):
            self._send_logged(episode_id, "LogReturns")

    def end_episode(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> None:
        """End the episode (terminated) with the agents' final observations."""
        request = self._request("EndEpisode", episode_id=episode_id)
        self._add_values(request.observations, observation_dict, "observation_dict")
        if self.carries_logged:
            self._carry(request, self._carried.forget(episode_id))
        self._call("EndEpisode", request)

    def close(self) -> None:
        """Send the calls still kept, then disconnect: the learner ends this simulator's
        running episodes, truncated. Kept calls the learner refuses here are dropped without
        a word: it refuses them only for an episode it let go of or ended, or once it is
        gone, and no call of the simulator is left to raise their error."""
        if self.closed:
            return
        for episode_id, calls in self._carried.take_all().items():
            request = self._request("GetAction", episode_id=episode_id)
            self._carry(request, calls)
            try:
                self._call("GetAction", request)
            except ExternalEnvError:
                pass
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
    """The error of a refused or failed call ``call`` (or of the logged call it carried that
    the learner refused: the trailing metadata names it)."""
    code = exc.code().name if hasattr(exc, "code") else "UNKNOWN"
    detail = exc.details() if hasattr(exc, "details") else str(exc)
    for key, value in (exc.trailing_metadata() or ()) if hasattr(exc, "trailing_metadata") \
            else ():
        if key == REFUSED_LOGGED:
            call = value.rsplit(" ", 1)[-1]
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
