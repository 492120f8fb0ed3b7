"""What a Step response carries: the requested tensors of a connection's view of its world.

Two ways, chosen at JoinWorld:

* :func:`encode_direct`, for marlhub's own client: ``__all__.step`` holds the
  last reset or step of the env (:class:`~marlhub.adapters.remote.world.Transition`)
  as JSON, with each observation that fits its space's tensors replaced by a
  marker and sent in those tensors; observations of agents absent from the
  observation dict are not sent (the dict itself says who observed).
* :func:`encode_dense`, for every other dm_env_rpc client: every requested
  tensor, always: an agent without a new observation shows its last one (or
  a fixed element of its space before it has one), so a client may request
  any tensor at any step, as dm_env_rpc expects.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> from marlhub.adapters.remote.tensors import dm_env_rpc_pb2
    >>> from marlhub.adapters.remote.world import World
    >>> world = World("w", RockPaperScissors(), env_id="rock_paper_scissors", config={})
    >>> with world.lock:
    ...     inbox = world.join(world.possible_agents, direct=False)
    ...     world.reset(0, None)
    >>> response = dm_env_rpc_pb2.StepResponse()
    >>> encode_dense(world, inbox, set(inbox.layout.observation_specs), response.observations)
    >>> acting = inbox.layout.slots["player1"].scalars["acting"]
    >>> list(response.observations[acting].bools.array)
    [True]
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any, Callable

import numpy as np

from marlhub.adapters.remote import codec
from marlhub.adapters.remote.codec import IN_TENSORS
from marlhub.adapters.remote.layout import Layout
from marlhub.adapters.remote.tensors import Leaf, coerce, pack
from marlhub.adapters.remote.world import Inbox, Transition, World
from marlhub.core import ALL
from marlhub.episode.status import flag
from marlhub.errors import RemoteRequestError
from marlhub.spaces import find_action_mask, zero_like

__all__ = ["encode_dense", "encode_direct", "step_document"]

_BOOL = np.dtype(np.bool_)
_DOUBLE = np.dtype(np.float64)
_INT8 = np.dtype(np.int8)

#: ``produce(world, inbox, rewards, tensor)`` fills one requested tensor.
Producer = Callable[[World, Inbox, dict[Any, float], Any], None]


def step_document(transition: Transition, obs: Any) -> str:
    """Return ``__all__.step``: the transition as JSON, with ``obs`` in place of its observations."""
    if transition.raw is not None:
        return codec.dumps({"raw": transition.raw, "reset": transition.is_reset})
    record: dict[str, Any] = {"obs": obs, "infos": transition.infos, "agents": transition.agents}
    if not transition.is_reset:
        record.update(rewards=transition.rewards, terminateds=transition.terminateds,
                      truncateds=transition.truncateds)
    return codec.dumps(record)


def _string(tensor: Any, text: str) -> None:
    tensor.strings.array.append(text)


def encode_direct(world: World, inbox: Inbox, requested: AbstractSet[int],
                  observations: Any) -> None:
    """Fill the response of a direct connection (marlhub's client) to its last Step."""
    transition = world.last
    if transition is None:
        return
    layout = inbox.layout
    step_uid = layout.world["step"]
    if step_uid in requested:
        obs = layout.put_observations(transition.obs, observations, requested)
        _string(observations[step_uid], step_document(transition, obs))
    rest = requested - layout.direct_uids
    if rest:  # other tensors asked for: the world's view as a dm_env_rpc client would see it
        inbox.absorb(transition, new_episode=transition.is_reset)
        _fill(world, inbox, rest, observations, inbox.take_rewards())


def encode_dense(world: World, inbox: Inbox, requested: AbstractSet[int],
                 observations: Any) -> None:
    """Fill the response of a dm_env_rpc connection: every requested tensor."""
    _fill(world, inbox, requested, observations, inbox.take_rewards())


def _fill(world: World, inbox: Inbox, requested: AbstractSet[int], observations: Any,
          rewards: dict[Any, float]) -> None:
    producers = _producers(inbox.layout)
    for uid in requested:
        producers[uid](world, inbox, rewards, observations[uid])


def _producers(layout: Layout) -> dict[int, Producer]:
    cached: dict[int, Producer] | None = getattr(layout, "_producers", None)
    if cached is None:
        cached = {layout.world["terminated"]: _world_flag("terminateds"),
                  layout.world["truncated"]: _world_flag("truncateds"),
                  layout.world["step"]: _dense_document}
        for agent, slots in layout.slots.items():
            space = layout.observation_spaces[agent]
            blank = zero_like(space)
            for uid, leaf in slots.observation:
                cached[uid] = _observation(agent, leaf, blank)
            scalars = slots.scalars
            cached[scalars["reward"]] = _reward(agent)
            cached[scalars["discount"]] = _discount(agent)
            cached[scalars["acting"]] = _acting(agent)
            cached[scalars["terminated"]] = _agent_flag(agent, "terminated")
            cached[scalars["truncated"]] = _agent_flag(agent, "truncated")
            if slots.action_mask is not None:
                cached[slots.action_mask] = _mask(agent, slots.mask_size)
        layout._producers = cached  # type: ignore[attr-defined]
    return cached


def _world_flag(table: str) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        value = getattr(world.last, table, None) if world.last is not None else None
        pack(isinstance(value, dict) and flag(value, ALL), _BOOL, (), tensor)
    return produce


def _dense_document(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
    last = world.last
    if last is None:
        _string(tensor, "{}")
        return
    obs = ({agent: IN_TENSORS for agent in last.obs} if isinstance(last.obs, dict) else last.obs)
    _string(tensor, step_document(last, obs))


def _observation(agent: Any, leaf: Leaf, blank: Any) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        value = inbox.obs.get(agent, blank)
        try:
            array = coerce(leaf.get(value), leaf)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise RemoteRequestError(
                "Step", f"the env's observation of {agent!r} does not fit its space at "
                f"'observation{leaf.suffix}' ({exc})", code="INTERNAL") from exc
        pack(array, leaf.wire, leaf.shape, tensor)
    return produce


def _reward(agent: Any) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        pack(rewards.get(agent, 0.0), _DOUBLE, (), tensor)
    return produce


def _discount(agent: Any) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        pack(0.0 if inbox.terminated.get(agent, False) else 1.0, _DOUBLE, (), tensor)
    return produce


def _acting(agent: Any) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        pack(agent in world.actors and agent not in world.buffer, _BOOL, (), tensor)
    return produce


def _agent_flag(agent: Any, which: str) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        pack(getattr(inbox, which).get(agent, False), _BOOL, (), tensor)
    return produce


def _mask(agent: Any, size: int) -> Producer:
    def produce(world: World, inbox: Inbox, rewards: dict[Any, float], tensor: Any) -> None:
        info = inbox.infos.get(agent)
        mask = find_action_mask(inbox.obs.get(agent), info if isinstance(info, dict) else None)
        if mask is None or mask.shape != (size,):
            mask = np.ones(size, dtype=np.int8)
        pack((mask != 0).astype(np.int8), _INT8, (size,), tensor)
    return produce
