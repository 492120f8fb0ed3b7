"""One dm_env_rpc connection to a marlhub server: its requests, answered in order.

A :class:`Session` answers each ``EnvironmentRequest`` of one ``Process``
stream with one ``EnvironmentResponse``, or with an error status that says
what was wrong (:mod:`~marlhub.adapters.remote.status`); a refused request
changes nothing, and the next request is answered as usual.

``JoinWorld`` settings (all optional): ``agents`` (strings: the agents this
connection acts for; default all), ``agent`` (a string: a single agent, with
unprefixed tensor names), ``direct`` (bool: marlhub's own client; the
connection drives the env alone, Step is ``env.step`` with the action dict as
sent, a Step after the end of an episode goes to the env, which raises, and
only the observations of the agents in the observation dict come back).
``Reset`` / ``ResetWorld`` settings: ``seed`` (int64), ``seed_json`` and
``options`` (JSON, for seeds that are no int64 and for reset options). A
direct connection may also send its ``ResetRequest`` packed as an
``extension``: it is answered with the reset's ``StepResponse``, one round
trip instead of two.

A joined connection that is not direct follows dm_env_rpc's states: the
first Step of a sequence ignores its actions and starts it (resetting the
world when its episode is over), later Steps buffer the connection's actions
and return once the world has moved on (every actor acted), or right away
when one of the connection's agents still has to act; a sequence ends with
TERMINATED (``__all__``) or INTERRUPTED (another connection reset the world).

When the stream ends (the client closed it or went away), the session leaves
its world and destroys the worlds it created that nobody else joined.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from marlhub.adapters.remote import codec
from marlhub.adapters.remote.actions import take_actions
from marlhub.adapters.remote.encode import encode_dense, encode_direct
from marlhub.adapters.remote.host import WorldHost
from marlhub.adapters.remote.properties import answer_properties
from marlhub.adapters.remote.status import status_of
from marlhub.adapters.remote.tensors import dm_env_rpc_pb2
from marlhub.adapters.remote.world import Inbox, World
from marlhub.errors import RemoteRequestError

__all__ = ["Session", "read_settings"]

_RUNNING = dm_env_rpc_pb2.RUNNING
_TERMINATED = dm_env_rpc_pb2.TERMINATED
_INTERRUPTED = dm_env_rpc_pb2.INTERRUPTED
_REQUESTS = {"create_world": "CreateWorld", "join_world": "JoinWorld", "step": "Step",
             "reset": "Reset", "reset_world": "ResetWorld", "leave_world": "LeaveWorld",
             "destroy_world": "DestroyWorld", "extension": "extension"}


def read_settings(call: str, settings: Any, accepted: tuple[str, ...]) -> dict[str, Any]:
    """Return a ``map<string, Tensor>`` of settings as Python values, refusing unknown keys.

    Raises:
        RemoteRequestError: a key not in ``accepted``, or a tensor that does not unpack.
    """
    from dm_env_rpc.v1 import tensor_utils

    unknown = sorted(set(settings) - set(accepted))
    if unknown:
        raise RemoteRequestError(call, f"unknown settings {unknown}; {call} takes "
                                 f"{list(accepted) or 'no settings'}", code="INVALID_ARGUMENT")
    values = {}
    for key, tensor in settings.items():
        try:
            values[key] = tensor_utils.unpack_tensor(tensor)
        except (TypeError, ValueError) as exc:
            raise RemoteRequestError(call, f"setting {key!r} does not unpack ({exc})",
                                     code="INVALID_ARGUMENT") from exc
    return values


def _seed_and_options(call: str, settings: Any) -> tuple[Any, Any]:
    if not settings:
        return None, None
    if len(settings) == 1 and "seed" in settings:  # marlhub's client: one int64, no numpy
        tensor = settings["seed"]
        if tensor.WhichOneof("payload") == "int64s" and not tensor.shape \
                and len(tensor.int64s.array) == 1:
            return int(tensor.int64s.array[0]), None
    values = read_settings(call, settings, ("seed", "seed_json", "options"))
    seed: Any = None
    if "seed" in values:
        seed = values["seed"]
        if not isinstance(seed, (int, np.integer)):
            raise RemoteRequestError(call, f"'seed' must be an integer, got {seed!r}",
                                     code="INVALID_ARGUMENT")
        seed = int(seed)
    try:
        if "seed_json" in values:
            seed = codec.loads(str(values["seed_json"]))
        options = codec.loads(str(values["options"])) if "options" in values else None
    except ValueError as exc:
        raise RemoteRequestError(call, f"a JSON setting does not parse ({exc})",
                                 code="INVALID_ARGUMENT") from exc
    return seed, options


class Session:
    """The server side of one ``Process`` stream.

    Args:
        host: the server's worlds.
        name: the connection's name (its peer address and a number).
        is_active: tells whether the client is still connected (a waiting Step
            gives up when it is not).
    """

    def __init__(self, host: WorldHost, name: str,
                 is_active: Callable[[], bool] = lambda: True) -> None:
        self.host = host
        self.name = name
        self.is_active = is_active
        self.world: Optional[World] = None
        self.inbox: Optional[Inbox] = None
        self.skip_step = False
        self.closed = False
        self._closing = threading.Lock()

    # -- dispatch --------------------------------------------------------------

    def handle(self, request: Any) -> Any:
        """Answer one ``EnvironmentRequest``."""
        response = dm_env_rpc_pb2.EnvironmentResponse()
        kind = request.WhichOneof("payload")
        try:
            handler = _HANDLERS.get(kind)
            if handler is None:
                raise RemoteRequestError("request", "the EnvironmentRequest has no payload this "
                                         "server knows", code="INVALID_ARGUMENT")
            handler(self, getattr(request, kind), response)
        except Exception as exc:  # every failure is an answer, never a broken stream
            response.Clear()
            response.error.CopyFrom(status_of(exc))
        return response

    def _joined(self, call: str) -> tuple[World, Inbox]:
        if self.world is None or self.inbox is None:
            raise RemoteRequestError(call, "this connection has not joined a world",
                                     fix="Send CreateWorld and JoinWorld first.")
        if self.world.destroyed:
            raise RemoteRequestError(call, f"world {self.world.name!r} was destroyed",
                                     code="NOT_FOUND")
        return self.world, self.inbox

    # -- worlds ----------------------------------------------------------------

    def _create_world(self, request: Any, response: Any) -> None:
        settings = read_settings("CreateWorld", request.settings, ("config", "copy_of"))
        world = self.host.create(settings, owner=self.name)
        response.create_world.world_name = world.name

    def _join_world(self, request: Any, response: Any) -> None:
        if self.world is not None:
            raise RemoteRequestError("JoinWorld", f"this connection is joined to world "
                                     f"{self.world.name!r} already", fix="Send LeaveWorld first.")
        world = self.host.get(request.world_name, "JoinWorld")
        settings = read_settings("JoinWorld", request.settings, ("agents", "agent", "direct"))
        agents, prefixed = self._agents_of(world, settings)
        direct = settings.get("direct", False)
        if not isinstance(direct, (bool, np.bool_)):  # "no" and 0.5 are no answer
            shown = direct.item() if isinstance(direct, np.generic) else direct
            raise RemoteRequestError("JoinWorld", f"setting direct must be a bool, got "
                                     f"{type(shown).__name__} {shown!r}", code="INVALID_ARGUMENT")
        direct = bool(direct)
        if direct and len(agents) != len(world.possible_agents):
            raise RemoteRequestError("JoinWorld", "a direct connection acts for every agent",
                                     code="INVALID_ARGUMENT")
        with world.lock:
            inbox = world.join(agents, direct=direct, prefixed=prefixed)
        self.world, self.inbox, self.skip_step = world, inbox, False
        response.join_world.specs.CopyFrom(inbox.layout.specs())

    def _agents_of(self, world: World, settings: dict[str, Any]) -> tuple[list[Any], bool]:
        by_name = {str(a): a for a in world.possible_agents}
        if "agent" in settings and "agents" in settings:
            raise RemoteRequestError("JoinWorld", "give 'agent' or 'agents', not both",
                                     code="INVALID_ARGUMENT")
        if "agent" in settings:
            names, prefixed = [str(settings["agent"])], False
        elif "agents" in settings:
            raw = settings["agents"]
            names, prefixed = ([str(raw)] if isinstance(raw, str) else [str(n) for n in raw]), True
        else:
            return list(world.possible_agents), True
        unknown = [n for n in names if n not in by_name]
        if unknown or not names:
            raise RemoteRequestError("JoinWorld", f"no agents {unknown} in this world; its "
                                     f"agents are {list(by_name)}", code="INVALID_ARGUMENT")
        return [by_name[n] for n in names], prefixed

    def _leave_world(self, request: Any, response: Any) -> None:
        world, inbox = self.world, self.inbox
        self.world = self.inbox = None
        if world is not None and inbox is not None:
            with world.lock:
                world.leave(inbox)
            self.host.sweep()
        response.leave_world.SetInParent()

    def _destroy_world(self, request: Any, response: Any) -> None:
        if self.world is not None and self.world.name == request.world_name:
            raise RemoteRequestError("DestroyWorld", "this connection is joined to that world",
                                     fix="Send LeaveWorld first.")
        self.host.destroy(request.world_name)
        response.destroy_world.SetInParent()

    def _reset_world(self, request: Any, response: Any) -> None:
        world = self.host.get(request.world_name, "ResetWorld")
        seed, options = _seed_and_options("ResetWorld", request.settings)
        with world.lock:
            caller = self.inbox if self.world is world else None
            world.reset(seed, options, caller=caller)
            if caller is not None:
                caller.fresh, caller.ended = True, False
        response.reset_world.SetInParent()

    def _extension(self, request: Any, response: Any) -> None:
        reset = dm_env_rpc_pb2.ResetRequest()
        if request.Is(reset.DESCRIPTOR) and request.Unpack(reset):
            self._reset_and_observe(reset, response)
        else:
            answer_properties(request, response, self)

    def _reset_and_observe(self, request: Any, response: Any) -> None:
        """marlhub's extension: a ``ResetRequest`` answered with the reset's ``StepResponse``.

        A direct connection's reset in one round trip, where Reset and the Step
        that fetches the observations take two messages each way.
        """
        world, inbox = self._joined("Reset")
        if not inbox.direct:
            raise RemoteRequestError("Reset", "the reset-and-observe extension is for direct "
                                     "connections (marlhub's client)", code="INVALID_ARGUMENT",
                                     fix="Send a plain ResetRequest, then a StepRequest.")
        seed, options = _seed_and_options("Reset", request.settings)
        step = dm_env_rpc_pb2.StepResponse(state=_RUNNING)
        with world.lock:
            world.reset(seed, options, caller=inbox)
            inbox.fresh, inbox.ended = False, False
            encode_direct(world, inbox, inbox.layout.direct_uids, step.observations)
            inbox.generation = world.generation
        response.extension.Pack(step)

    # -- the episode -----------------------------------------------------------

    def _reset(self, request: Any, response: Any) -> None:
        world, inbox = self._joined("Reset")
        seed, options = _seed_and_options("Reset", request.settings)
        with world.lock:
            others = [i for i in world.inboxes if i is not inbox]
            if others and not world.over:
                if not inbox.fresh and not inbox.ended:
                    raise RemoteRequestError(
                        "Reset", f"world {world.name!r} is mid-episode and {len(others)} other "
                        "connection(s) act in it", fix="Send ResetWorld to reset it for all.")
                # Another connection started this episode: join it as it runs.
                inbox.fresh, inbox.ended = True, False
                response.reset.specs.CopyFrom(inbox.layout.specs())
                return
            # A failed reset voids the Step that marlhub's client sends right after it.
            self.skip_step = inbox.direct
            world.reset(seed, options, caller=inbox)
            self.skip_step = False
            inbox.fresh, inbox.ended = True, False
        response.reset.specs.CopyFrom(inbox.layout.specs())

    def _step(self, request: Any, response: Any) -> None:
        world, inbox = self._joined("Step")
        if self.skip_step:
            self.skip_step = False
            raise RemoteRequestError("Step", "this Step was not run: the Reset before it failed")
        requested = set(request.requested_observations)
        unknown = requested - inbox.layout.observation_uid_set
        if unknown:
            raise RemoteRequestError(
                "Step", f"requested observation uids {sorted(unknown)} are not in this "
                f"connection's specs (its observation uids are "
                f"{sorted(inbox.layout.observation_specs)})", code="INVALID_ARGUMENT")
        step = response.step
        with world.lock:
            if inbox.direct:
                step.state = self._direct_step(world, inbox, request)
                encode_direct(world, inbox, requested, step.observations)
            else:
                step.state = self._agent_step(world, inbox, request)
                encode_dense(world, inbox, requested, step.observations)
            inbox.generation = world.generation

    def _direct_step(self, world: World, inbox: Inbox, request: Any) -> int:
        if inbox.fresh:  # the Step after a Reset returns the reset's observations
            inbox.fresh = False
            return _RUNNING
        actions = take_actions(request.actions, inbox.layout, check_bounds=False)
        transition = world.step(actions)
        return _TERMINATED if transition.over else _RUNNING

    def _agent_step(self, world: World, inbox: Inbox, request: Any) -> int:
        if inbox.interrupted:
            inbox.interrupted, inbox.fresh = False, True
            return _INTERRUPTED
        if inbox.fresh:
            if world.over:
                world.reset(None, None, caller=inbox)
            inbox.fresh, inbox.ended = False, False
            inbox.episode = world.episode
            inbox.take_rewards()
            return _RUNNING
        actions = take_actions(request.actions, inbox.layout, check_bounds=True)
        if not isinstance(actions, dict):
            raise RemoteRequestError("Step", "send actions as tensors (per agent) or a JSON "
                                     "object of them", code="INVALID_ARGUMENT")
        if actions:
            world.offer(inbox, actions)
        self._wait(world, inbox)
        if inbox.interrupted:
            inbox.interrupted, inbox.fresh = False, True
            return _INTERRUPTED
        if world.over:
            inbox.ended, inbox.fresh = True, True
            return _TERMINATED
        return _RUNNING

    def _wait(self, world: World, inbox: Inbox) -> None:
        """Wait (lock held) until the world moved on or one of the connection's agents must act."""
        deadline = time.monotonic() + self.host.step_wait
        while not (world.generation != inbox.generation or world.must_act(inbox) or world.over
                   or world.destroyed or inbox.interrupted):
            left = deadline - time.monotonic()
            if left <= 0:
                waiting = [a for a in world.actors if a not in world.buffer]
                raise RemoteRequestError(
                    "Step", f"waited {self.host.step_wait:g}s for the agents {waiting} of other "
                    "connections to act", code="DEADLINE_EXCEEDED")
            if not self.is_active() or inbox not in world.inboxes:
                raise RemoteRequestError("Step", "the connection left the world",
                                         code="CANCELLED")
            world.lock.wait(min(left, 0.25))

    # -- the end -----------------------------------------------------------------

    def close(self) -> None:
        """Leave the world and destroy the worlds this connection created (idempotent)."""
        with self._closing:
            if self.closed:
                return
            self.closed = True
        world, inbox = self.world, self.inbox
        self.world = self.inbox = None
        if world is not None and inbox is not None:
            with world.lock:
                world.leave(inbox)
        self.host.release(self.name)


#: Request kind -> the Session method that answers it.
_HANDLERS = {kind: getattr(Session, f"_{kind}") for kind in _REQUESTS}
