"""A plain dm_env_rpc server (one agent, no marlhub on the other side) as a one-agent hub env.

Any dm_env_rpc server works, such as the ``catch`` example of dm_env_rpc:
:class:`PlainRemoteEnv` creates a world (or joins a named one), joins it, and
reads its specs the way dm_env's ``DmEnvAdaptor`` does: the observations
named ``reward`` and ``discount`` are the reward and the discount, every
other observation is the agent's. Spaces come from the ``TensorSpec`` s: an
integer scalar with bounds is ``Discrete(max - min + 1, start=min)``, a
string is ``Text``, anything else a ``Box`` of the spec's dtype and bounds.
A single tensor is the space itself, several a ``Dict`` keyed by name.

``reset(seed=..., options=...)`` sends a ``Reset`` whose settings are
``{"seed": seed, **options}`` (leave ``seed`` out with ``seed=None``), then
the ``Step`` that starts the sequence. ``step`` checks the action against the
space first (:class:`~marlhub.errors.ActionError`, nothing sent), then a
``TERMINATED`` state ends the episode: terminated, or truncated when the
server sends a ``discount`` above 0 (dm_env's convention), and
``INTERRUPTED`` is truncation. Steps before a reset and after the end raise
``ResetNeededError``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.remote.adapter import create_world, join_world, leave_and_close
from marlhub.adapters.remote.codec import UnmappableSpace
from marlhub.adapters.remote.link import DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, Link
from marlhub.adapters.remote.tensors import dm_env_rpc_pb2
from marlhub.core import ALL, MultiAgentEnv
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import RemoteEnvError, RemoteRequestError

__all__ = ["PlainRemoteEnv", "space_of_spec"]

_SPECIAL = ("reward", "discount")


def space_of_spec(spec: Any) -> gym.Space:
    """Return the gymnasium space of a dm_env_rpc ``TensorSpec`` (see the module docstring).

    Raises:
        UnmappableSpace: a variable-length shape, or a dtype with no space (protos).
    """
    from dm_env_rpc.v1 import tensor_spec_utils, tensor_utils

    shape = tuple(spec.shape)
    if any(d < 0 for d in shape):
        raise UnmappableSpace(f"tensor {spec.name!r} has a variable-length shape {list(shape)}")
    dtype = tensor_utils.data_type_to_np_type(spec.dtype)
    if dtype.kind == "U":
        return gym.spaces.Text(max_length=1 << 20, min_length=0, charset=string.printable)
    if dtype.kind == "O":
        raise UnmappableSpace(f"tensor {spec.name!r} holds protocol buffers")
    if dtype.kind == "b":
        return gym.spaces.Box(np.zeros(shape, np.bool_), np.ones(shape, np.bool_), shape, np.bool_)
    bounded = spec.HasField("min") or spec.HasField("max")
    bounds = tensor_spec_utils.bounds(spec)
    if dtype.kind in "iu" and not shape and spec.HasField("min") and spec.HasField("max"):
        low, high = int(bounds.min), int(bounds.max)
        return gym.spaces.Discrete(high - low + 1, start=low)
    if dtype.kind == "f" and not bounded:
        return gym.spaces.Box(-np.inf, np.inf, shape, dtype=dtype)
    return gym.spaces.Box(np.broadcast_to(bounds.min, shape).astype(dtype),
                          np.broadcast_to(bounds.max, shape).astype(dtype), shape, dtype=dtype)


def _spaces(specs: Mapping[int, Any], skip: tuple[str, ...]) -> tuple[gym.Space, dict[str, int]]:
    uids = {spec.name: uid for uid, spec in sorted(specs.items()) if spec.name not in skip}
    spaces = {name: space_of_spec(specs[uid]) for name, uid in uids.items()}
    if len(spaces) == 1:
        return next(iter(spaces.values())), uids
    return gym.spaces.Dict(spaces), uids


class PlainRemoteEnv(MultiAgentEnv):
    """A plain single-agent dm_env_rpc server as a hub env with one agent (see the module docstring).

    Args:
        address: ``HOST:PORT``.
        create_settings: CreateWorld settings (values ``pack_tensor`` takes).
        join_settings: JoinWorld settings.
        world: join this world instead of creating one.
        agent_id: the one agent's id.
        timeout, connect_timeout, token, tls_root: as for
            :class:`~marlhub.adapters.remote.adapter.RemoteEnv`.
        link: an open link to use (and own), or a
            :class:`~marlhub.adapters.remote.link.ConnectionLink`.
        specs: the ``ActionObservationSpecs`` of a world ``link`` has joined already
            (then nothing is created or joined, and ``close`` leaves it).
    """

    def __init__(self, address: str, *, create_settings: Optional[Mapping[str, Any]] = None,
                 join_settings: Optional[Mapping[str, Any]] = None, world: Optional[str] = None,
                 agent_id: str = "agent", timeout: float = DEFAULT_TIMEOUT,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, token: Optional[str] = None,
                 link: Any = None, specs: Any = None, tls_root: Any = None) -> None:
        super().__init__()
        self.address = address
        self.agent_id = agent_id
        self._link = link or Link(address, timeout=timeout, connect_timeout=connect_timeout,
                                  token=token, tls_root=tls_root)
        self._created = world is None and specs is None
        try:
            self.world_name = world if world is not None or specs is not None else create_world(
                self._link, create_settings or {})
            self._specs = specs if specs is not None else join_world(
                self._link, str(self.world_name), join_settings or {})
            obs_space, self._obs_uids = _spaces(self._specs.observations, _SPECIAL)
            act_space, self._act_uids = _spaces(self._specs.actions, ())
        except UnmappableSpace as exc:
            self._link.close()
            raise RemoteRequestError("JoinWorld", f"the server's specs have no gymnasium form: "
                                     f"{exc}", address=address) from exc
        except BaseException:
            self._link.close()
            raise
        self.possible_agents = [agent_id]
        self.agents = []
        self.observation_spaces = {agent_id: obs_space}
        self.action_spaces = {agent_id: act_space}
        self._obs_space, self._act_space = obs_space, act_space
        names = {spec.name: uid for uid, spec in self._specs.observations.items()}
        self._reward_uid, self._discount_uid = names.get("reward"), names.get("discount")
        self._requested = sorted(self._specs.observations)
        self._why_not: Optional[str] = NOT_RESET

    def _observe(self, response: Any) -> tuple[Any, Optional[float], Optional[float]]:
        from dm_env_rpc.v1 import tensor_utils

        values = {uid: tensor_utils.unpack_tensor(t) for uid, t in response.observations.items()}
        parts = {name: self._typed(self._obs_space, name, values[uid])
                 for name, uid in self._obs_uids.items()}
        obs = next(iter(parts.values())) if len(parts) == 1 else parts
        reward = values.get(self._reward_uid) if self._reward_uid is not None else None
        discount = values.get(self._discount_uid) if self._discount_uid is not None else None
        return obs, None if reward is None else float(reward), \
            None if discount is None else float(discount)

    def _typed(self, space: gym.Space, name: str, value: Any) -> Any:
        leaf = space[name] if isinstance(space, gym.spaces.Dict) else space
        if isinstance(leaf, gym.spaces.Discrete):
            return int(value)
        if isinstance(leaf, gym.spaces.Box):
            return np.asarray(value, dtype=leaf.dtype).reshape(leaf.shape)
        return str(value)

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict] = None) -> Any:
        """Send Reset (settings: ``seed`` and ``options``) and the Step that starts the sequence."""
        from dm_env_rpc.v1 import tensor_utils

        reset = dm_env_rpc_pb2.EnvironmentRequest()
        reset.reset.SetInParent()
        settings = {**({"seed": seed} if seed is not None else {}), **(options or {})}
        for key, value in settings.items():
            reset.reset.settings[key].CopyFrom(tensor_utils.pack_tensor(value))
        step = dm_env_rpc_pb2.EnvironmentRequest()
        step.step.requested_observations.extend(self._requested)
        answered, observed = self._link.calls([("Reset", reset), ("Step", step)])
        for answer in (answered, observed):
            if isinstance(answer, BaseException):
                raise answer
        obs, _, _ = self._observe(observed)
        self.agents = [self.agent_id]
        self._why_not = None
        return {self.agent_id: obs}, {self.agent_id: {}}

    def step(self, action_dict: Any) -> Any:
        """Check the action, send it, and read the answer as one hub step."""
        from dm_env_rpc.v1 import tensor_utils

        require_running(type(self).__name__, self._why_not)
        agent = self.agent_id
        action = check_action_dict(type(self).__name__, action_dict, actors=[agent],
                                   possible_agents=[agent],
                                   space_of=lambda _: self._act_space)[agent]
        parts = action if isinstance(self._act_space, gym.spaces.Dict) else \
            {next(iter(self._act_uids)): action}
        request = dm_env_rpc_pb2.EnvironmentRequest()
        request.step.requested_observations.extend(self._requested)
        for name, value in parts.items():
            uid = self._act_uids[name]
            request.step.actions[uid].CopyFrom(
                tensor_utils.pack_tensor(value, dtype=self._specs.actions[uid].dtype))
        response = self._link.call("Step", request)
        obs, reward, discount = self._observe(response)
        state = response.state
        terminated = state == dm_env_rpc_pb2.TERMINATED and not (discount or 0.0) > 0.0
        truncated = state == dm_env_rpc_pb2.INTERRUPTED or (
            state == dm_env_rpc_pb2.TERMINATED and not terminated)
        if terminated or truncated:
            self.agents, self._why_not = [], EPISODE_OVER
        return ({agent: obs}, {agent: reward or 0.0}, {agent: terminated, ALL: terminated},
                {agent: truncated, ALL: truncated}, {agent: {}})

    def close(self) -> None:
        """Leave (and destroy, if this env created it) the world; close the connection."""
        leave_and_close(self._link, str(self.world_name), self._created)

    def __deepcopy__(self, memo: dict[int, Any]) -> "PlainRemoteEnv":
        raise self._no_copy()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise self._no_copy()

    def _no_copy(self) -> RemoteEnvError:
        # marlhub's own servers copy a world on request (RemoteEnv); a plain server has no
        # such request, and a connection is not an episode.
        return RemoteEnvError(
            self.address, "copy", "a plain dm_env_rpc server cannot copy a world, so a "
            "connection to one cannot be copied or pickled",
            fix="Connect again with marlhub.make('remote/HOST:PORT') for a new world, or serve "
            "the env with `marlhub serve`, whose worlds copy.")

    def __repr__(self) -> str:
        return f"PlainRemoteEnv(dm_env_rpc server at {self.address}, world {self.world_name!r})"
