"""dm_env_rpc -> hub: a marlhub server's world as a hub env whose every call goes over the wire.

:class:`RemoteEnv` connects to a ``marlhub serve`` server, creates a world of
the server's env, joins it as a *direct* connection (it drives the env alone,
see :mod:`~marlhub.adapters.remote.session`) and reads the world's agents and
spaces from the ``marlhub.world`` property. Then ``reset`` is one round trip
(a ``ResetRequest`` sent as marlhub's reset-and-observe extension, answered
with the observations) and ``step`` one ``Step``: the env
on the server gets the very seed, options and action dict the caller passed,
and the caller gets back the very dicts the env returned (observations in
tensors, the rest as JSON, types and key order kept). An error the env raises
(an ``ActionError`` for an illegal action, ``ResetNeededError`` after the
end) comes back as the same marlhub exception with the same message, and the
env's state is what the env left it. ``close()`` destroys the world; so does
the server when the connection drops.

Attributes of a ``RemoteEnv`` besides the hub protocol's: ``address``,
``env_id`` and ``env_config`` (what the server made the world from: ``marlhub
check remote/HOST:PORT --against-native`` builds a local twin from them),
``world_name``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from marlhub.adapters.remote import codec
from marlhub.adapters.remote.actions import put_actions
from marlhub.adapters.remote.layout import Layout
from marlhub.adapters.remote.link import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, Link
from marlhub.adapters.remote.properties import property_request, read_answer
from marlhub.adapters.remote.tensors import dm_env_rpc_pb2
from marlhub.core import MultiAgentEnv
from marlhub.errors import RemoteRequestError

__all__ = ["RemoteEnv", "create_world", "join_world", "leave_and_close", "read_property"]

_INT64 = (-(2**63), 2**63 - 1)


def read_property(link: Link, key: str) -> str:
    """Read a property of the server (dm_env_rpc's properties extension)."""
    request = dm_env_rpc_pb2.EnvironmentRequest()
    request.extension.CopyFrom(property_request(key))
    return read_answer(link.call("extension", request))


def create_world(link: Link, settings: Mapping[str, Any]) -> str:
    """Send CreateWorld with ``settings`` (values ``pack_tensor`` takes); return the world's name."""
    from dm_env_rpc.v1 import tensor_utils

    request = dm_env_rpc_pb2.EnvironmentRequest()
    request.create_world.SetInParent()
    for key, value in settings.items():
        request.create_world.settings[key].CopyFrom(tensor_utils.pack_tensor(value))
    return str(link.call("CreateWorld", request).world_name)


def join_world(link: Link, world: str, settings: Mapping[str, Any]) -> Any:
    """Send JoinWorld; return the ``ActionObservationSpecs``."""
    from dm_env_rpc.v1 import tensor_utils

    request = dm_env_rpc_pb2.EnvironmentRequest()
    request.join_world.world_name = world
    for key, value in settings.items():
        request.join_world.settings[key].CopyFrom(tensor_utils.pack_tensor(value))
    return link.call("JoinWorld", request).specs


def leave_and_close(link: Link, world: str, destroy: bool) -> None:
    """Leave ``world`` (and destroy it when ``destroy``), then close the link; never raises."""
    if link.broken is None:
        try:
            request = dm_env_rpc_pb2.EnvironmentRequest()
            request.leave_world.SetInParent()
            link.call("LeaveWorld", request)
            if destroy:
                request = dm_env_rpc_pb2.EnvironmentRequest()
                request.destroy_world.world_name = world
                link.call("DestroyWorld", request)
        except Exception:  # the server is gone: it frees the world when the stream drops
            pass
    link.close()


class RemoteEnv(MultiAgentEnv):
    """A world of a marlhub server as a hub env (see the module docstring).

    Args:
        address: the server's ``HOST:PORT``.
        config: config for the world's env, added to the server's (the server
            must allow it: ``marlhub serve --allow-config``); None for the server's.
        timeout: seconds each call may take before :class:`~marlhub.errors.RemoteEnvError`.
        connect_timeout: seconds the server may take to accept the connection.
        token: the server's token, if it requires one.
        tls_root: connect over TLS trusting this PEM file (or True: gRPC's default roots).
        world: join this existing world instead of creating one.
        link: an open :class:`~marlhub.adapters.remote.link.Link` to use (and own).
        copy_of: create the world as a copy of this world of the server (its env as
            it is now, mid-episode included): what ``copy.deepcopy`` does.

    Raises:
        RemoteEnvError: no server answered.
        RemoteRequestError: the server refused to create or join the world.
    """

    def __init__(self, address: str, config: Optional[Mapping[str, Any]] = None, *,
                 timeout: float = DEFAULT_TIMEOUT, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 token: Optional[str] = None, world: Optional[str] = None,
                 link: Optional[Link] = None, copy_of: Optional[str] = None,
                 tls_root: Any = None) -> None:
        super().__init__()
        self.address = address
        self._options: dict[str, Any] = {"config": dict(config) if config else None,
                                         "timeout": timeout, "connect_timeout": connect_timeout,
                                         "token": token, "tls_root": tls_root}
        self._link = link or Link(address, timeout=timeout, connect_timeout=connect_timeout,
                                  token=token, tls_root=tls_root)
        self._created = world is None
        try:
            self.env_id = read_property(self._link, "marlhub.env_id")
            settings = {"config": json.dumps(dict(config))} if config else {}
            if copy_of is not None:
                settings = {"copy_of": copy_of}
            self.world_name = world or create_world(self._link, settings)
            specs = join_world(self._link, self.world_name, {"direct": True})
            self._describe(json.loads(read_property(self._link, "marlhub.world")), specs)
        except BaseException:
            self._link.close()
            raise
        self.agents: list[Any] = []

    def _describe(self, description: dict[str, Any], specs: Any) -> None:
        agents = codec.decode(description["possible_agents"])
        self.possible_agents = list(agents)
        self.observation_spaces = {a: codec.space_from(d) for a, d in
                                   zip(agents, description["observation_spaces"])}
        self.action_spaces = {a: codec.space_from(d) for a, d in
                              zip(agents, description["action_spaces"])}
        self.metadata = codec.decode(description["metadata"])
        self.render_mode = codec.decode(description["render_mode"])
        self.env_config = codec.decode(description["config"])
        self._layout = Layout(agents, self.observation_spaces, self.action_spaces)
        mine = {uid: spec.name for uid, spec in self._layout.specs().observations.items()}
        theirs = {uid: spec.name for uid, spec in specs.observations.items()}
        if mine != theirs:
            raise RemoteRequestError("JoinWorld", "the server's specs differ from what its "
                                     "description implies (another marlhub version?)",
                                     address=self.address)
        self._requested = self._layout.observation_uids()
        self._step_uid = self._layout.world["step"]

    # -- the episode ---------------------------------------------------------------

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Any:
        """Reset the world's env with ``seed`` and ``options``; return its observations and infos."""
        from dm_env_rpc.v1 import tensor_utils

        reset = dm_env_rpc_pb2.ResetRequest()
        settings = reset.settings
        if seed is not None:
            if type(seed) is int and _INT64[0] <= seed <= _INT64[1]:
                settings["seed"].int64s.array.append(seed)  # what pack_tensor(seed, INT64) makes
            else:
                settings["seed_json"].CopyFrom(tensor_utils.pack_tensor(codec.dumps(seed)))
        if options is not None:
            settings["options"].CopyFrom(tensor_utils.pack_tensor(codec.dumps(options)))
        request = dm_env_rpc_pb2.EnvironmentRequest()
        request.extension.Pack(reset)  # reset-and-observe: one round trip (see session.py)
        observed = dm_env_rpc_pb2.StepResponse()
        self._link.call("Reset", request).Unpack(observed)
        record = self._record(observed)
        if "raw" in record:
            return record["raw"]
        return record["obs"], record["infos"]

    def step(self, action_dict: Any) -> Any:
        """Step the world's env with ``action_dict``; return its five dicts."""
        request = dm_env_rpc_pb2.EnvironmentRequest()
        step = request.step
        step.requested_observations.extend(self._requested)
        put_actions(action_dict, self._layout, step.actions)
        record = self._record(self._link.call("Step", request))
        if "raw" in record:
            return record["raw"]
        return (record["obs"], record["rewards"], record["terminateds"], record["truncateds"],
                record["infos"])

    def _record(self, response: Any) -> dict[str, Any]:
        observations = response.observations
        record: dict[str, Any] = codec.loads(observations[self._step_uid].strings.array[0])
        if "raw" not in record:
            record["obs"] = self._layout.take_observations(record["obs"], observations)
            agents = record["agents"]
            self.agents = list(agents) if isinstance(agents, (list, tuple)) else []
        return record

    def render(self) -> Any:
        """Return the world's ``env.render()`` (a frame array, text, or None)."""
        return codec.loads(read_property(self._link, "marlhub.render"))

    def close(self) -> None:
        """Leave and destroy the world, and close the connection (idempotent)."""
        leave_and_close(self._link, self.world_name, self._created)

    def __deepcopy__(self, memo: dict[int, Any]) -> "RemoteEnv":
        # A deep copy is a copy of the world on the server, episode included (OpenSpiel's
        # clone() of to_openspiel states relies on it).
        copied = RemoteEnv(self.address, **{k: v for k, v in self._options.items()
                                            if k != "config"}, copy_of=self.world_name)
        copied.agents = list(self.agents)
        return copied

    def __reduce__(self) -> Any:
        # A pickle is a new world of the same server, not yet reset (like the copy of an
        # env that pickles as a fresh instance): it may be loaded long after, elsewhere.
        return (_reconnect, (self.address, self._options))

    def __repr__(self) -> str:
        return f"RemoteEnv({self.env_id!r} at {self.address}, world {self.world_name!r})"


def _reconnect(address: str, options: dict[str, Any]) -> RemoteEnv:
    return RemoteEnv(address, **options)

