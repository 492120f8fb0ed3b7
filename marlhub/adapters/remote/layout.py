"""The multi-agent mapping onto dm_env_rpc: which tensors a joined connection sees, by name and uid.

A world hosts one hub env. A connection joins it for some of its agents
(all by default) and gets these specs, numbered from 1 in this order:

Observations
    ``__all__.terminated``, ``__all__.truncated`` (bool): ``"__all__"`` of the
    done dicts, the world's state. ``__all__.step`` (string): the last reset or
    step as JSON (see :mod:`~marlhub.adapters.remote.codec`): the reward,
    done and info dicts in their key order, the observation dict's keys (its
    order is who acts next), the env's ``agents``. Then for each agent
    ``A`` of the connection, in ``possible_agents`` order:
    ``A.observation[.key...]`` (its observation space's tensors, see
    :mod:`~marlhub.adapters.remote.tensors`), ``A.reward`` (float64, summed
    since the connection's last step), ``A.discount`` (float64: 0 once the
    agent terminated, else 1), ``A.acting`` (bool: the agent is in the
    observation dict, not done, and has no action waiting), ``A.terminated``
    and ``A.truncated`` (bool), and ``A.action_mask`` (int8, one entry per
    action) when its action space is Discrete: the mask from its
    observation or info, all ones when the env gives none.
Actions
    ``__all__.actions`` (string): JSON for actions no tensor carries exactly
    (marlhub's own client only). ``A.action[.key...]``: the action space's tensors.

A connection joined as a single agent (join setting ``agent``) sees its
agent's tensors without the ``A.`` prefix (``observation``, ``reward``,
``discount``, ``action``), which dm_env's ``DmEnvAdaptor`` reads as a
single-agent env's reward and discount. Agent names are the agent ids as
text; ids must be strings or ints whose text is unique, not empty and free
of ``.`` (dm_env_rpc's nesting separator).

Example:
    >>> import gymnasium as gym
    >>> box, two = gym.spaces.Box(0, 1, (3,)), gym.spaces.Discrete(2)
    >>> layout = Layout(["a", "b"], {"a": box, "b": box}, {"a": two, "b": two})
    >>> [spec.name for spec in layout.observation_specs.values()][:6]
    ['__all__.terminated', '__all__.truncated', '__all__.step', 'a.observation', 'a.reward', 'a.discount']
    >>> Layout(["a", "b"], {"a": box, "b": box}, {"a": two, "b": two}, agents=["b"],
    ...        prefixed=False).action_names()
    ['__all__.actions', 'action']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.remote.codec import IN_TENSORS, UnmappableSpace
from marlhub.adapters.remote.tensors import Leaf, dm_env_rpc_pb2, leaves_of, tensor_spec

__all__ = ["ALL_PREFIX", "AgentSlots", "Layout", "agent_names"]

#: Prefix of the world's own tensors.
ALL_PREFIX = "__all__."
#: Names of each agent's tensors besides its observation and action.
AGENT_SCALARS = ("reward", "discount", "acting", "terminated", "truncated")


def agent_names(agents: Sequence[Any]) -> dict[Any, str]:
    """Return each agent id's name in tensor names.

    Raises:
        UnmappableSpace: an id is neither str nor int, or its text is empty,
            holds ``.``, is ``__all__`` or repeats another's.
    """
    names: dict[Any, str] = {}
    for agent in agents:
        if type(agent) not in (str, int):
            raise UnmappableSpace(f"agent id {agent!r} is a {type(agent).__name__}; dm_env_rpc "
                                  "tensor names need str or int agent ids")
        name = str(agent)
        if not name or "." in name or name == "__all__" or name in names.values():
            raise UnmappableSpace(f"agent id {agent!r} cannot be a tensor name prefix (names must "
                                  "be unique, non-empty, without '.' and not '__all__')")
        names[agent] = name
    return names


#: ``split(value, parts)``: ``value`` with each leaf replaced by ``IN_TENSORS``, its
#: ``(uid, leaf, leaf value)`` appended to ``parts``; raises ``_NoFit`` when it does not fit.
Split = Callable[[Any, list], Any]
#: ``fill(skeleton, observations)``: the value a skeleton and its tensors stand for (a value
#: with no ``IN_TENSORS`` in it, one that travelled as JSON, comes back equal).
Fill = Callable[[Any, Any], Any]


@dataclass
class AgentSlots:
    """The uids of one agent's tensors in a connection's specs.

    ``split`` and ``fill`` are the observation space's walk compiled once (see
    :meth:`Layout.put_observations`); ``flat_action``: the action space is one leaf.
    """

    agent: Any
    space: gym.Space
    observation: list[tuple[int, Leaf]] = field(default_factory=list)
    action: list[tuple[int, Leaf]] = field(default_factory=list)
    scalars: dict[str, int] = field(default_factory=dict)
    action_mask: Optional[int] = None
    mask_size: int = 0
    split: Split = field(default=lambda value, parts: value, repr=False)
    fill: Fill = field(default=lambda skeleton, observations: skeleton, repr=False)
    flat_action: bool = False

    @property
    def flat(self) -> bool:
        """Whether the observation space is one leaf (no Dict or Tuple)."""
        return len(self.observation) == 1 and not self.observation[0][1].path


class Layout:
    """The specs a connection gets for ``agents`` of a world (see the module docstring).

    Args:
        possible_agents: the world's agents, in order.
        observation_spaces: agent -> observation space.
        action_spaces: agent -> action space.
        agents: the connection's agents (default: all), kept in ``possible_agents`` order.
        prefixed: name tensors ``A.…``; False only for a single agent.

    Raises:
        UnmappableSpace: an agent id or a space has no dm_env_rpc form.
    """

    def __init__(self, possible_agents: Sequence[Any], observation_spaces: Mapping[Any, gym.Space],
                 action_spaces: Mapping[Any, gym.Space], *, agents: Optional[Sequence[Any]] = None,
                 prefixed: bool = True) -> None:
        self.names = agent_names(possible_agents)
        chosen = set(possible_agents if agents is None else agents)
        self.agents = [a for a in possible_agents if a in chosen]
        if not prefixed and len(self.agents) != 1:
            raise ValueError("unprefixed tensor names need exactly one agent")
        self.observation_specs: dict[int, Any] = {}
        self.action_specs: dict[int, Any] = {}
        self.observation_spaces = {a: observation_spaces[a] for a in self.agents}
        self.action_spaces = {a: action_spaces[a] for a in self.agents}
        #: action uid -> (agent, leaf).
        self.action_index: dict[int, tuple[Any, Leaf]] = {}
        self.world = {key: self._add_observation(ALL_PREFIX + key, dtype)
                      for key, dtype in (("terminated", dm_env_rpc_pb2.BOOL),
                                         ("truncated", dm_env_rpc_pb2.BOOL),
                                         ("step", dm_env_rpc_pb2.STRING))}
        self.actions_uid = self._add_action(
            dm_env_rpc_pb2.TensorSpec(name=ALL_PREFIX + "actions", dtype=dm_env_rpc_pb2.STRING))
        self.slots: dict[Any, AgentSlots] = {}
        for agent in self.agents:
            prefix = f"{self.names[agent]}." if prefixed else ""
            self.slots[agent] = self._agent(agent, prefix, observation_spaces[agent],
                                            action_spaces[agent])
        #: Every observation uid, and those a direct connection's Step fills itself.
        self.observation_uid_set = frozenset(self.observation_specs)
        self.direct_uids = frozenset(self.observation_uids())

    def _next_uid(self) -> int:
        return len(self.observation_specs) + len(self.action_specs) + 1

    def _add_observation(self, name: str, dtype: int, shape: Sequence[int] = (),
                         bounds: Optional[tuple[Any, Any]] = None) -> int:
        spec = dm_env_rpc_pb2.TensorSpec(name=name, dtype=dtype, shape=list(shape))
        if bounds is not None:
            from dm_env_rpc.v1 import tensor_spec_utils

            tensor_spec_utils.set_bounds(spec, *bounds)
        uid = self._next_uid()
        self.observation_specs[uid] = spec
        return uid

    def _add_action(self, spec: Any) -> int:
        uid = self._next_uid()
        self.action_specs[uid] = spec
        return uid

    def _agent(self, agent: Any, prefix: str, obs_space: gym.Space, act_space: gym.Space) -> AgentSlots:
        slots = AgentSlots(agent, obs_space)
        for leaf in leaves_of(obs_space):
            uid = self._next_uid()
            self.observation_specs[uid] = tensor_spec(f"{prefix}observation{leaf.suffix}", leaf)
            slots.observation.append((uid, leaf))
        for key in AGENT_SCALARS:
            numeric = key in ("reward", "discount")
            slots.scalars[key] = self._add_observation(
                prefix + key, dm_env_rpc_pb2.DOUBLE if numeric else dm_env_rpc_pb2.BOOL,
                bounds=(np.float64(0), np.float64(1)) if key == "discount" else None)
        if isinstance(act_space, gym.spaces.Discrete):
            slots.mask_size = int(act_space.n)
            slots.action_mask = self._add_observation(
                prefix + "action_mask", dm_env_rpc_pb2.INT8, (slots.mask_size,),
                (np.int8(0), np.int8(1)))
        for leaf in leaves_of(act_space):
            uid = self._add_action(tensor_spec(f"{prefix}action{leaf.suffix}", leaf))
            slots.action.append((uid, leaf))
            self.action_index[uid] = (agent, leaf)
        slots.split, slots.fill = _plan(obs_space, iter(slots.observation))
        slots.flat_action = len(slots.action) == 1 and not slots.action[0][1].path
        return slots

    # -- reading ---------------------------------------------------------------

    def action_names(self) -> list[str]:
        """The action tensors' names, in uid order."""
        return [spec.name for spec in self.action_specs.values()]

    def specs(self) -> Any:
        """Return the ``ActionObservationSpecs`` message of the connection (built once)."""
        specs = getattr(self, "_specs", None)
        if specs is None:
            specs = dm_env_rpc_pb2.ActionObservationSpecs()
            for uid, spec in self.observation_specs.items():
                specs.observations[uid].CopyFrom(spec)
            for uid, spec in self.action_specs.items():
                specs.actions[uid].CopyFrom(spec)
            self._specs = specs
        return specs

    def observation_uids(self) -> list[int]:
        """What marlhub's client requests each step: the world's step record and every observation."""
        return [self.world["step"]] + [uid for slots in self.slots.values()
                                       for uid, _ in slots.observation]

    # -- marlhub's client: observations in tensors where they fit -------------------

    def put_observations(self, obs: Any, observations: Any, requested: Any) -> Any:
        """Pack each agent's observation into ``observations`` (uid -> Tensor) where it fits.

        Returns a copy of ``obs`` in which each packed leaf is ``IN_TENSORS``
        (dicts keep their key order, tuples stay tuples); an observation that
        does not fit its space's leaves exactly, or whose tensors were not all
        requested, stays whole and travels as JSON.
        """
        if type(obs) is not dict and not isinstance(obs, Mapping):
            return obs
        every = self.direct_uids.issubset(requested)
        slots_of = self.slots.get
        marked = {}
        for agent, value in obs.items():
            slots = slots_of(agent) if type(agent) in (str, int) else None
            if slots is None or not slots.observation or (not every and any(
                    uid not in requested for uid, _ in slots.observation)):
                marked[agent] = value
                continue
            parts: list[Any] = []
            try:
                skeleton = slots.split(value, parts)
            except _NoFit:
                marked[agent] = value
                continue
            for uid, leaf, part in parts:
                leaf.put(part, observations[uid])
            marked[agent] = skeleton
        return marked

    def take_observations(self, marked: Any, observations: Any) -> Any:
        """Return the observation dict that :meth:`put_observations` split (client side)."""
        if type(marked) is not dict:
            return marked
        slots_of = self.slots.get
        for agent, value in marked.items():
            if value is IN_TENSORS or type(value) in (dict, tuple):
                slots = slots_of(agent)
                if slots is not None:
                    marked[agent] = slots.fill(value, observations)
        return marked


class _NoFit(Exception):
    """An observation that does not travel in tensors exactly."""


def _plan(space: gym.Space, leaves: Iterator[tuple[int, Leaf]]) -> tuple[Split, Fill]:
    """Compile the walk of ``space``'s values: its ``split`` and ``fill`` (see ``AgentSlots``),
    taking its leaves from ``leaves`` in space order.

    A Dict's skeleton keeps the value's key order; its leaves are found by key.
    """
    if isinstance(space, gym.spaces.Dict):
        plans = {key: _plan(sub, leaves) for key, sub in space.spaces.items()}
        keys = space.spaces.keys()
        splits = {key: plan[0] for key, plan in plans.items()}
        fills = {key: plan[1] for key, plan in plans.items()}

        def split_dict(value: Any, parts: list) -> Any:
            if type(value) is not dict or value.keys() != keys:
                raise _NoFit
            return {key: splits[key](item, parts) for key, item in value.items()}

        def fill_dict(skeleton: Any, observations: Any) -> Any:
            if type(skeleton) is not dict or skeleton.keys() != keys:
                return skeleton  # no skeleton: a value that travelled as JSON
            return {key: fills[key](item, observations) for key, item in skeleton.items()}

        return split_dict, fill_dict
    if isinstance(space, gym.spaces.Tuple):
        items = [_plan(sub, leaves) for sub in space.spaces]
        size = len(items)

        def split_tuple(value: Any, parts: list) -> Any:
            if type(value) is not tuple or len(value) != size:
                raise _NoFit
            return tuple([plan[0](item, parts) for plan, item in zip(items, value)])

        def fill_tuple(skeleton: Any, observations: Any) -> Any:
            if type(skeleton) is not tuple or len(skeleton) != size:
                return skeleton
            return tuple([plan[1](item, observations) for plan, item in zip(items, skeleton)])

        return split_tuple, fill_tuple
    uid, leaf = next(leaves)
    fits, read = leaf.fits, leaf.read

    def split_leaf(value: Any, parts: list) -> Any:
        if not fits(value):
            raise _NoFit
        parts.append((uid, leaf, value))
        return IN_TENSORS

    def fill_leaf(skeleton: Any, observations: Any) -> Any:
        return read(observations[uid]) if skeleton is IN_TENSORS else skeleton

    return split_leaf, fill_leaf
