"""TorchRL -> hub: where each agent of a TorchRL multi-agent env lives in its tensordicts.

A TorchRL multi-agent env (TorchRL's multi-agent document: ``group_map``, one
nested tensordict per group with the agent dimension first) is read as:

* **agents**: ``group_map``'s own names, in group order; when two groups name an
  agent alike, every agent is ``"<group>_<i>"`` instead;
* **observation**: the group's entries other than ``"mask"``, ``"action_mask"``
  and ``"info"``: the ``"observation"`` entry alone as that space, several as a
  ``Dict`` (plus ``"action_mask"``, as PettingZoo classic keeps it);
* **who acts**: the group's boolean ``"mask"`` when it has one (TorchRL's
  ``PettingZooWrapper`` convention), else every agent that is not done;
* **rewards**: the group's ``"reward"`` (one number per agent), else the root's;
* **done**: the group's ``"terminated"`` / ``"truncated"`` / ``"done"`` when it
  has them, else the root's; the root's ``"done"`` ends the episode.

Example:
    >>> import marlhub
    >>> from marlhub.adapters.torchrl import to_torchrl
    >>> layout = TorchRLAgents(to_torchrl(marlhub.make("traffic")))
    >>> layout.agents, layout.groups["car"].has_mask
    (['car_0', 'car_1', 'car_2', 'car_3', 'light'], True)
    >>> layout.observation_spaces["light"], layout.action_spaces["light"]
    (Box(0.0, 1.0, (7,), float32), Discrete(2))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from marlhub.adapters.torchrl.spec_spaces import space_of_spec
from marlhub.adapters.torchrl.specs import Codec, DictCodec, MultiBinaryCodec
from marlhub.core import AgentID
from marlhub.errors import ConfigError, ProtocolError
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["DONE_KEYS", "GroupLayout", "TorchRLAgents", "merges_observation"]

#: The done flags a TorchRL env may carry, per group or at the root.
DONE_KEYS = ("terminated", "truncated", "done")
#: Entries of a group that are not part of its agents' observations.
_NOT_OBSERVED = ("mask", "info", *DONE_KEYS, "reward")
OWNER = "from_torchrl"


@dataclass
class GroupLayout:
    """One group of a TorchRL env: its agents and the keys of their entries.

    Attributes:
        name: the group's key in the tensordicts.
        agents: the hub ids of its agents, in the group's order.
        observed: the group's entries that make up the observation.
        codecs: per agent, its observation codec and its action codec.
        has_mask: whether ``(name, "mask")`` says who acts.
        has_info: whether ``(name, "info")`` holds per-agent infos.
        done_keys: the done flags the group carries itself.
        has_reward: whether ``(name, "reward")`` holds per-agent rewards.
        merged: whether a Composite ``"observation"`` is opened up beside the
            group's other observed entries.
    """

    name: str
    agents: list[AgentID]
    observed: list[str]
    codecs: list[tuple[Codec, Codec]] = field(default_factory=list)
    has_mask: bool = False
    has_info: bool = False
    done_keys: list[str] = field(default_factory=list)
    has_reward: bool = False
    merged: bool = False


class TorchRLAgents:
    """The agents, spaces and entry keys of a TorchRL multi-agent env.

    Args:
        env: a TorchRL ``EnvBase`` with a ``group_map``.
        group_map: the env's group map, when it is not ``env.group_map`` itself (a
            ``SerialEnv`` has one per copy).

    Raises:
        ProtocolError: the env has no ``group_map`` (not a multi-agent env).
        ConfigError: a spec no gymnasium space holds, rewards of more than one number.
    """

    def __init__(self, env: Any, group_map: Any = None) -> None:
        group_map = group_map if group_map is not None else getattr(env, "group_map", None)
        if not isinstance(group_map, Mapping) or not group_map:
            raise ProtocolError(
                env, ["group_map"], expected="a TorchRL multi-agent env",
                fix="from_torchrl takes TorchRL multi-agent envs, which name their agents in "
                    "`group_map` (group -> agent names), as VmasEnv and PettingZooWrapper do. "
                    "Bring a single-agent env through Gymnasium instead (marlhub.adapters."
                    "gymnasium.from_gymnasium).")
        names = [str(a) for members in group_map.values() for a in members]
        unique = len(set(names)) == len(names)
        self.groups: dict[str, GroupLayout] = {}
        self.observation_spaces: dict[AgentID, gym.Space] = {}
        self.action_spaces: dict[AgentID, gym.Space] = {}
        self.action_keys: dict[str, tuple[str, ...]] = _action_keys(env)
        self.root_done_keys = [k for k in DONE_KEYS if k in env.full_done_spec.keys()]
        self.root_reward = "reward" in env.full_reward_spec.keys()
        for group, members in group_map.items():
            agents: list[AgentID] = ([str(a) for a in members] if unique
                                     else [f"{group}_{i}" for i in range(len(members))])
            self.groups[group] = self._group(env, group, agents)
        self.agents: list[AgentID] = [a for g in self.groups.values() for a in g.agents]

    def _group(self, env: Any, group: str, agents: list[AgentID]) -> GroupLayout:
        obs_spec = _unbatched(env, env.full_observation_spec)[group]
        done_spec = _unbatched(env, env.full_done_spec)
        reward_spec = _unbatched(env, env.full_reward_spec)
        action_spec = _unbatched(env, env.full_action_spec)
        observed = [k for k in obs_spec.keys() if k not in _NOT_OBSERVED]
        layout = GroupLayout(
            group, agents, observed, has_mask="mask" in obs_spec.keys(),
            has_info="info" in obs_spec.keys(),
            done_keys=[k for k in DONE_KEYS if group in done_spec.keys()
                       and k in done_spec[group].keys()],
            has_reward=group in reward_spec.keys() and "reward" in reward_spec[group].keys(),
            merged=merges_observation(obs_spec, observed))
        if not layout.has_reward and not self.root_reward:
            raise ConfigError(OWNER, f"group {group!r} has no 'reward' and neither has the root",
                              fix="Give the env a reward entry per group or at the root.")
        if layout.has_reward:
            _check_scalar_reward(group, reward_spec[group, "reward"])
        key = self.action_keys.get(group)
        if key is None:
            raise ConfigError(OWNER, f"group {group!r} has no action entry",
                              fix="Every group of a TorchRL multi-agent env takes (group, "
                                  "'action'); check the env's action_keys.")
        for i, agent in enumerate(agents):
            obs_space, obs_codec = _observation(obs_spec, observed, i, agent)
            act_space, act_codec = space_of_spec(action_spec[key][i], agent=agent, role="action")
            self.observation_spaces[agent] = obs_space
            self.action_spaces[agent] = act_space
            layout.codecs.append((obs_codec, act_codec))
        return layout


def _unbatched(env: Any, spec: Any) -> Any:
    """``spec`` without the env's batch dimensions (a batch of one is read as one env)."""
    for _ in env.batch_size:
        spec = spec[0]
    return spec


def _action_keys(env: Any) -> dict[str, tuple[str, ...]]:
    keys: dict[str, tuple[str, ...]] = {}
    for key in env.action_keys:
        if isinstance(key, tuple) and len(key) >= 2:
            keys.setdefault(key[0], key)
    return keys


def _check_scalar_reward(group: str, spec: Any) -> None:
    per_agent = tuple(spec.shape[1:])
    if per_agent not in ((), (1,)):
        raise ConfigError(OWNER, f"the rewards of group {group!r} have shape {per_agent} per "
                          "agent; the hub pays one number per agent",
                          fix="Sum or select the reward components with a TorchRL transform "
                              "before from_torchrl.")


def _observation(obs_spec: Any, observed: list[str], i: int,
                 agent: AgentID) -> tuple[gym.Space, Codec]:
    """Agent ``i``'s observation space and codec, from its group's observation spec.

    A ``Composite`` ``"observation"`` beside other entries is opened up (TorchRL's
    ``PettingZooWrapper`` moves ``"action_mask"`` out of a Dict observation; the hub
    puts it back beside the Dict's other members).
    """
    if observed == ["observation"]:
        return space_of_spec(obs_spec["observation"][i], agent=agent, role="observation")
    members: list[tuple[str, Any]] = []
    for key in observed:
        spec = obs_spec[key][i]
        if key == "observation" and merges_observation(obs_spec, observed):
            members.extend(spec.items())
        else:
            members.append((key, spec))
    spaces: dict[str, gym.Space] = {}
    codecs: dict[str, Codec] = {}
    for key, spec in members:
        if key == ACTION_MASK_KEY:
            mask = gym.spaces.MultiBinary(int(spec.shape.numel()))
            spaces[key], codecs[key] = mask, MultiBinaryCodec(mask)
            continue
        spaces[key], codecs[key] = space_of_spec(spec, agent=agent, role="observation",
                                                 path=f"[{key!r}]")
    space = gym.spaces.Dict(spaces)
    return space, DictCodec(space, codecs)


def merges_observation(obs_spec: Any, observed: list[str]) -> bool:
    """Whether the group's Composite ``"observation"`` is opened up beside its other entries."""
    from torchrl.data import Composite

    return ("observation" in observed and len(observed) > 1
            and isinstance(obs_spec["observation"], Composite))
