"""Action dicts over dm_env_rpc: each agent's action in its tensors, the rest as JSON.

The client (:func:`put_actions`) sends an agent's action as the tensors of
its action space when they carry it exactly (a Python int for Discrete, an
array of the space's dtype and shape for Box...). Everything else (numpy
integers, actions outside the space, keys that name no agent, a key order
other than ``possible_agents``', an action "dict" that is no dict) goes as
JSON in the ``__all__.actions`` tensor, so that the env on the server gets
the very values the caller passed, and raises the very error a local env
would. The server (:func:`take_actions`) checks every tensor as dm_env_rpc
asks (type, shape, bounds for connections that are not marlhub's client)
and rebuilds the dict.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> from marlhub.adapters.remote.layout import Layout
    >>> from marlhub.adapters.remote.tensors import dm_env_rpc_pb2
    >>> spaces = {"a": gym.spaces.Discrete(3), "b": gym.spaces.Discrete(3)}
    >>> layout = Layout(["a", "b"], spaces, spaces)
    >>> request = dm_env_rpc_pb2.StepRequest()
    >>> put_actions({"b": 2, "a": np.int64(1)}, layout, request.actions)
    >>> sorted(request.actions) == [layout.actions_uid, layout.slots["b"].action[0][0]]
    True
    >>> take_actions(request.actions, layout, check_bounds=False)
    {'b': 2, 'a': np.int64(1)}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from marlhub.adapters.remote import codec
from marlhub.adapters.remote.layout import AgentSlots, Layout
from marlhub.adapters.remote.tensors import Leaf, read_sent
from marlhub.errors import RemoteRequestError

__all__ = ["put_actions", "take_actions"]


def _action_parts(space: gym.Space, value: Any, leaves: Iterator[tuple[int, Leaf]],
                  parts: list[Any]) -> bool:
    """Collect ``value``'s leaves in space order; False when it does not travel as tensors."""
    if isinstance(space, gym.spaces.Dict):
        if type(value) is not dict or list(value) != list(space.spaces):
            return False
        return all(_action_parts(sub, value[k], leaves, parts) for k, sub in space.spaces.items())
    if isinstance(space, gym.spaces.Tuple):
        if type(value) is not tuple or len(value) != len(space.spaces):
            return False
        return all(_action_parts(sub, v, leaves, parts) for sub, v in zip(space.spaces, value))
    _, leaf = next(leaves)
    if not leaf.fits(value):
        return False
    parts.append(value)
    return True


def _fits(slots: AgentSlots, space: gym.Space, value: Any) -> list[Any] | None:
    parts: list[Any] = []
    return parts if _action_parts(space, value, iter(slots.action), parts) else None


def put_actions(action_dict: Any, layout: Layout, actions: Any) -> None:
    """Fill a ``StepRequest.actions`` map (uid -> Tensor) with ``action_dict`` (client side)."""
    document: dict[str, Any] = {}
    if type(action_dict) is not dict:
        document["whole"] = action_dict
    else:
        extra = {}
        slots_of = layout.slots.get
        for agent, value in action_dict.items():
            slots = slots_of(agent) if type(agent) in (str, int) else None
            if slots is not None and slots.flat_action:  # one tensor: no walk of the space
                uid, leaf = slots.action[0]
                if leaf.fits(value):
                    leaf.put(value, actions[uid])
                    continue
                parts = None
            else:
                parts = _fits(slots, layout.action_spaces[agent], value) if slots is not None \
                    else None
            if parts is None:
                extra[agent] = value
                continue
            for (uid, leaf), part in zip(slots.action, parts):  # type: ignore[union-attr]
                leaf.put(part, actions[uid])
        if extra:
            document["actions"] = extra
        if len(action_dict) > 1 or (action_dict and next(iter(action_dict)) not in layout.slots):
            order = list(action_dict)
            if order != [a for a in layout.agents if a in action_dict]:
                document["order"] = order
    if document:
        actions[layout.actions_uid].strings.array.append(codec.dumps(document))


def _assemble(space: gym.Space, values: Iterator[Any]) -> Any:
    if isinstance(space, gym.spaces.Dict):
        return {k: _assemble(sub, values) for k, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        return tuple(_assemble(sub, values) for sub in space.spaces)
    return next(values)


def _document(tensor: Any) -> dict[str, Any]:
    if tensor.WhichOneof("payload") != "strings" or len(tensor.strings.array) != 1 \
            or len(tensor.shape):
        raise RemoteRequestError("Step", "__all__.actions must hold one string (JSON), shape []",
                                 code="INVALID_ARGUMENT")
    if not tensor.strings.array[0]:
        return {}  # an empty string says nothing (dm_env_rpc's compliance tests send one)
    try:
        document = codec.loads(tensor.strings.array[0])
    except ValueError as exc:
        raise RemoteRequestError("Step", f"__all__.actions is not valid JSON ({exc})",
                                 code="INVALID_ARGUMENT") from exc
    if not isinstance(document, dict) or set(document) - {"whole", "actions", "order"}:
        raise RemoteRequestError("Step", "__all__.actions must be an object with the keys "
                                 "'whole', 'actions' or 'order'", code="INVALID_ARGUMENT")
    return document


def take_actions(actions: Any, layout: Layout, *, check_bounds: bool) -> Any:
    """Return the action dict a ``StepRequest.actions`` map carries (server side).

    Raises:
        RemoteRequestError: an unknown uid, a malformed tensor (type, shape,
            bounds when ``check_bounds``), an agent with only some of its tensors.
    """
    document: dict[str, Any] = {}
    values: dict[int, Any] = {}
    for uid, tensor in actions.items():
        if uid == layout.actions_uid:
            document = _document(tensor)
            continue
        where = layout.action_index.get(uid)
        if where is None:
            raise RemoteRequestError(
                "Step", f"action uid {uid} is not in this connection's specs (its action uids "
                f"are {sorted(layout.action_specs)})", code="INVALID_ARGUMENT")
        leaf = where[1]
        if not check_bounds and tensor.WhichOneof("payload") == leaf.payload \
                and tuple(tensor.shape) == leaf.shape:
            values[uid] = leaf.read(tensor)  # exactly as marlhub's client packs it
            continue
        try:
            values[uid] = read_sent(tensor, leaf, check_bounds=check_bounds)
        except ValueError as exc:
            name = layout.action_specs[uid].name
            raise RemoteRequestError("Step", f"action tensor {name!r} (uid {uid}): {exc}",
                                     code="INVALID_ARGUMENT") from exc
    if "whole" in document:
        return document["whole"]
    result = {}
    for agent, slots in layout.slots.items():
        if slots.flat_action:
            uid = slots.action[0][0]
            if uid in values:
                result[agent] = values[uid]
            continue
        sent = [uid for uid, _ in slots.action if uid in values]
        if not sent:
            continue
        if len(sent) != len(slots.action):
            missing = [layout.action_specs[uid].name for uid, _ in slots.action if uid not in values]
            raise RemoteRequestError("Step", f"the action of {agent!r} lacks the tensors {missing}",
                                     code="INVALID_ARGUMENT")
        result[agent] = _assemble(layout.action_spaces[agent], iter(values[uid] for uid in sent))
    result.update(document.get("actions", {}))
    order = document.get("order")
    if order is not None:
        if sorted(map(repr, order)) != sorted(map(repr, result)):
            raise RemoteRequestError("Step", "__all__.actions 'order' must list the sent agents",
                                     code="INVALID_ARGUMENT")
        result = {agent: result[agent] for agent in order}
    return result
