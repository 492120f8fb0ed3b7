"""Which agents share a TorchRL group: the ``group_map`` given, a premade one, or the default.

TorchRL stacks the agents of a group along one agent dimension (one tensor per
key, one network for the group), so group names are tensordict keys and a
group's agents need specs TorchRL can stack. ``to_torchrl(group_map=...)`` takes

* ``torchrl.envs.utils.MarlGroupMapType.ALL_IN_ONE_GROUP``: every agent in the
  group ``"agents"``; ``ONE_GROUP_PER_AGENT``: each agent in the group
  ``str(agent)`` (TorchRL's own meanings; agent ids need not be strings);
* a dict group name -> agent ids, every agent in exactly one group;
* None, the default (:func:`default_group_map`): ``ALL_IN_ONE_GROUP`` when every
  agent has the same observation and action spaces, as TorchRL's VMAS,
  OpenSpiel and MeltingPot wrappers default to. Otherwise TorchRL's
  PettingZoo rule: agents named ``"<name>_<int>"`` share the group ``"<name>"``
  (when their spaces agree), any other agent has a group of its own.

Example:
    >>> spaces = {"car_0": 1, "car_1": 1, "light": 2}
    >>> default_group_map(list(spaces), same=lambda a, b: spaces[a] == spaces[b])
    {'car': ['car_0', 'car_1'], 'light': ['light']}
    >>> default_group_map([0, 1], same=lambda a, b: True)
    {'agents': [0, 1]}
    >>> resolve_group_map({"team": ["car_0", "car_1"]}, list(spaces), same=lambda a, b: True)
    Traceback (most recent call last):
    ...
    marlhub.errors.AgentIdError: Agent 'light' is in no group of the group_map. Put every agent in exactly one group; the env's agents are 'car_0', 'car_1', 'light'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Callable

from marlhub.core import AgentID
from marlhub.errors import AgentIdError, ConfigError

__all__ = ["ALL_IN_ONE_GROUP_NAME", "default_group_map", "one_group_per_agent",
           "resolve_group_map"]

#: The group of ``MarlGroupMapType.ALL_IN_ONE_GROUP`` (TorchRL's name).
ALL_IN_ONE_GROUP_NAME = "agents"
#: Keys at the root of the env's tensordicts, which no group may take.
RESERVED = ("done", "terminated", "truncated", "next", "action", "reward", "observation")

OWNER = "to_torchrl"
Same = Callable[[AgentID, AgentID], bool]


def one_group_per_agent(agents: Sequence[AgentID]) -> dict[str, list[AgentID]]:
    """Return ``MarlGroupMapType.ONE_GROUP_PER_AGENT``'s map: group ``str(agent)`` per agent.

    Raises:
        ConfigError: two agents print the same (``0`` and ``"0"``).

    Example:
        >>> one_group_per_agent([0, 1])
        {'0': [0], '1': [1]}
    """
    groups: dict[str, list[AgentID]] = {}
    for agent in agents:
        if str(agent) in groups:
            raise ConfigError(
                OWNER, f"agents {groups[str(agent)][0]!r} and {agent!r} would both be the group "
                f"{str(agent)!r} of ONE_GROUP_PER_AGENT",
                fix="Pass group_map as a dict of group name -> agent ids.")
        groups[str(agent)] = [agent]
    return groups


def _convention_name(agent: AgentID) -> str:
    """``"car"`` for ``"car_0"`` (TorchRL's ``"<name>_<int>"`` convention), else ``str(agent)``."""
    if isinstance(agent, str):
        head, sep, tail = agent.rpartition("_")
        if sep and head and tail.isdigit():
            return head
    return str(agent)


def default_group_map(agents: Sequence[AgentID], same: Same) -> dict[str, list[AgentID]]:
    """Return the default group map (see the module): one group if ``same`` holds for all.

    Args:
        agents: every possible agent, in order.
        same: tells whether two agents have the same observation and action spaces.
    """
    first = agents[0]
    if all(same(first, other) for other in agents[1:]):
        return {ALL_IN_ONE_GROUP_NAME: list(agents)}
    by_name: dict[str, list[AgentID]] = {}
    for agent in agents:
        by_name.setdefault(_convention_name(agent), []).append(agent)
    pairs: list[tuple[str, list[AgentID]]] = []
    for name, members in by_name.items():
        if all(same(members[0], m) for m in members[1:]):
            pairs.append((name, members))
        else:
            pairs += [(str(m), [m]) for m in members]
    names = [name for name, _ in pairs]
    if len(set(names)) < len(names) or any(n in RESERVED or n.startswith("_") for n in names):
        return one_group_per_agent(agents)
    return dict(pairs)


def _is_marl_group_map_type(value: Any) -> bool:
    # Looked at by name: this module imports no torchrl.
    return type(value).__name__ == "MarlGroupMapType" and \
        type(value).__module__.startswith("torchrl")


def resolve_group_map(group_map: Any, agents: Sequence[AgentID],
                      same: Same) -> dict[str, list[AgentID]]:
    """Return ``group_map`` as a dict group name -> agent ids, checked.

    Args:
        group_map: None, a ``MarlGroupMapType`` or a dict (see the module).
        agents: every possible agent of the env.
        same: tells whether two agents have the same spaces (for the default).

    Raises:
        ConfigError: a group map of another type, a group name that is no
            string, is empty or collides with a root key (``"done"``...), or an env
            without agents.
        AgentIdError: an agent in no group or in two, or an unknown agent.
    """
    if not agents:
        raise ConfigError(OWNER, "the env has no possible agents, so there is nothing to group",
                          fix="Give the env a non-empty possible_agents.")
    if group_map is None:
        groups = default_group_map(agents, same)
    elif _is_marl_group_map_type(group_map):
        groups = (one_group_per_agent(agents) if group_map.name == "ONE_GROUP_PER_AGENT"
                  else {ALL_IN_ONE_GROUP_NAME: list(agents)})
    elif isinstance(group_map, Mapping):
        groups = {}
        for name, members in group_map.items():
            if isinstance(members, (str, bytes)) or not isinstance(members, Sequence):
                raise ConfigError(OWNER, f"group {name!r} of the group_map holds {members!r}, "
                                  "not a list of agent ids", fix="Map each group name to a list.")
            groups[name] = list(members)
    else:
        raise ConfigError(OWNER,
                          f"group_map={group_map!r} is neither a MarlGroupMapType nor a dict",
                          fix="Pass torchrl.envs.utils.MarlGroupMapType.ALL_IN_ONE_GROUP or "
                              "ONE_GROUP_PER_AGENT, a dict of group name -> agent ids, or None.")
    check_group_map(groups, agents)
    return groups


def check_group_map(groups: Mapping[Any, Sequence[AgentID]], agents: Sequence[AgentID]) -> None:
    """Raise unless every agent of ``agents`` is in exactly one group with a usable name.

    Example:
        >>> check_group_map({"done": ["a"]}, ["a"])
        Traceback (most recent call last):
        ...
        marlhub.errors.ConfigError: Bad config for 'to_torchrl': the group name 'done' is taken by the root of TorchRL's tensordicts. Rename the group; group names are non-empty strings other than 'done', 'terminated', 'truncated', 'next', 'action', 'reward', 'observation', not starting with '_'.
    """
    rule = ("group names are non-empty strings other than "
            f"{', '.join(map(repr, RESERVED))}, not starting with '_'")
    seen: dict[AgentID, Any] = {}
    for name, members in groups.items():
        if not isinstance(name, str) or not name or name.startswith("_"):
            raise ConfigError(OWNER, f"{name!r} cannot name a group", fix=f"Rename it; {rule}.")
        if name in RESERVED:
            raise ConfigError(OWNER, f"the group name {name!r} is taken by the root of TorchRL's "
                              "tensordicts", fix=f"Rename the group; {rule}.")
        if not members:
            raise ConfigError(OWNER, f"group {name!r} is empty",
                              fix="Drop it, or put agents in it.")
        for agent in members:
            if agent not in agents:
                raise AgentIdError(agent, f"The group_map names {agent!r} (group {name!r}), "
                                   "which is no agent of the env", known=list(agents))
            if agent in seen:
                raise AgentIdError(agent, f"Agent {agent!r} is in groups {seen[agent]!r} and "
                                   f"{name!r} of the group_map",
                                   fix="Put every agent in exactly one group.")
            seen[agent] = name
    missing = [a for a in agents if a not in seen]
    if missing:
        raise AgentIdError(missing[0], f"Agent {missing[0]!r} is in no group of the group_map",
                           fix="Put every agent in exactly one group; the env's agents are "
                               f"{', '.join(map(repr, agents))}.")
