"""Where each agent's data sits in the TorchRL env's tensordicts: groups, codecs, masks, specs.

A :class:`Layout` is decided once per env from the hub env's spaces and the
group map (:mod:`~marlhub.adapters.torchrl.groups`). Every group ``g`` holds, per
agent (along the group's agent dimension):

* ``(g, "observation")``: the agent's observation (:mod:`~marlhub.adapters.torchrl.specs`);
  a Dict observation ``{"observation": x, "action_mask": m}`` (OpenSpiel,
  PettingZoo classic) becomes ``x``, any other Dict a nested ``Composite``;
* ``(g, "action_mask")``: bool, the legal actions, when the group's agents have
  Discrete actions and masks (in the observation, or in infos: the env is reset
  once to look); all True for agents that do not act;
* ``(g, "mask")``: bool, whether the agent acts in the next step;
* ``(g, "action")``, ``(g, "reward")`` and ``(g, "done" | "terminated" | "truncated")``;
  a reward is ``(1,)`` per agent, or ``(k,)`` for an agent paid arrays of k objectives
  (a declared reward space, :mod:`marlhub.rewards`): the group's spec is ``(n_agents, k)``.

A group whose agents' specs differ (shapes, bounds) is stacked lazily, as
TorchRL does for heterogeneous agents; specs TorchRL cannot stack at all
(different kinds, different Dict keys) are refused with a ConfigError.

Example:
    >>> from marlhub.envs import Traffic
    >>> layout = Layout(Traffic(), None, categorical=True, info_masks=False)
    >>> layout.group_map
    {'car': ['car_0', 'car_1', 'car_2', 'car_3'], 'light': ['light']}
    >>> layout.slots["light"].group, layout.slots["car_2"].index
    ('light', 2)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.torchrl.groups import resolve_group_map
from marlhub.adapters.torchrl.specs import OWNER, Codec, codec_for, encoded_zero
from marlhub.core import AgentID
from marlhub.errors import ConfigError
from marlhub.rewards import reward_space_of
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["AgentSlot", "GroupSlot", "Layout", "has_observation_mask"]

#: The inner key of the Dict observations that carry a mask (OpenSpiel, PettingZoo classic).
INNER = "observation"


def has_observation_mask(space: gym.Space) -> bool:
    """Tell whether ``space`` is a Dict observation with an ``"action_mask"`` entry."""
    return isinstance(space, gym.spaces.Dict) and ACTION_MASK_KEY in space.spaces


@dataclass
class AgentSlot:
    """One agent's place: its group, its index in it, its codecs and its mask.

    Attributes:
        agent: the hub agent id.
        group: its group's name.
        index: its position along the group's agent dimension.
        observation: the codec of what it observes (mask taken out when published).
        action: the codec of its action.
        mask_size: the length of its ``action_mask`` (0 when the group publishes none).
        strip: how its observation is read: ``""`` as it is, ``"inner"`` the
            ``"observation"`` entry, ``"rest"`` the Dict without ``"action_mask"``.
    """

    agent: AgentID
    group: str
    index: int
    observation: Codec
    action: Codec
    mask_size: int = 0
    strip: str = ""
    zero: Any = field(default=None, repr=False)
    reward_shape: tuple[int, ...] = (1,)

    def encode_observation(self, value: Any) -> Any:
        """Return the agent's hub observation (None: none yet) as arrays for its spec."""
        if value is None:
            return self.zero
        if self.strip == "inner":
            value = value[INNER]
        elif self.strip == "rest":
            value = {k: v for k, v in value.items() if k != ACTION_MASK_KEY}
        return self.observation.encode(value)


@dataclass
class GroupSlot:
    """One TorchRL group: its agents in order, and how its data is stacked.

    Attributes:
        name: the group's name, a key of the tensordicts.
        agents: the slots of its agents, in group order.
        action_masks: whether the group publishes ``"action_mask"``.
        lazy: whether its agents' specs differ, so its data is a lazy stack.
    """

    name: str
    agents: list[AgentSlot]
    action_masks: bool = False
    lazy: bool = False


class Layout:
    """Every group and agent slot of a hub env, and the TorchRL specs they make.

    Args:
        env: the hub env.
        group_map: None, a ``MarlGroupMapType`` or a dict (see
            :mod:`~marlhub.adapters.torchrl.groups`).
        categorical: Discrete and MultiDiscrete values as indices (True) or one-hot.
        info_masks: whether the env publishes action masks in infos (Discrete
            agents without a mask in their observation space then get an
            ``"action_mask"``).
        binding: whether the env's masks are rules (False: advice, as Taxi's; none
            is published).

    Raises:
        ConfigError: a space no TorchRL spec holds, or a bad group map.
        AgentIdError: a group map that misses, repeats or invents agents.
    """

    def __init__(self, env: Any, group_map: Any, *, categorical: bool, info_masks: bool,
                 binding: bool = True) -> None:
        agents = list(env.possible_agents)
        obs_spaces = {a: env.get_observation_space(a) for a in agents}
        act_spaces = {a: env.get_action_space(a) for a in agents}
        rewards = {a: _reward_shape(env, a) for a in agents}
        self.group_map = resolve_group_map(
            group_map, agents,
            same=lambda a, b: obs_spaces[a] == obs_spaces[b] and act_spaces[a] == act_spaces[b]
            and rewards[a] == rewards[b])
        self.groups: dict[str, GroupSlot] = {}
        self.slots: dict[AgentID, AgentSlot] = {}
        for name, members in self.group_map.items():
            masked = binding and all(isinstance(act_spaces[a], gym.spaces.Discrete)
                                     for a in members) and any(
                info_masks or has_observation_mask(obs_spaces[a]) for a in members)
            slots = [self._slot(a, name, i, obs_spaces[a], act_spaces[a], masked, categorical)
                     for i, a in enumerate(members)]
            for slot in slots:
                slot.reward_shape = rewards[slot.agent]
            if len({s.reward_shape for s in slots}) > 1:
                raise ConfigError(
                    OWNER, f"the agents of group {name!r} are paid rewards of different shapes "
                    f"({', '.join(f'{s.agent!r}: {s.reward_shape}' for s in slots)}), which one "
                    "reward spec cannot hold", fix="Put agents whose rewards differ in shape in "
                    "different groups (group_map=None groups them apart by default).")
            self.groups[name] = GroupSlot(name, slots, action_masks=masked)
            self.slots.update((s.agent, s) for s in slots)

    @staticmethod
    def _slot(agent: AgentID, group: str, index: int, obs_space: gym.Space,
              act_space: gym.Space, masked: bool, categorical: bool) -> AgentSlot:
        strip = ""
        if masked and isinstance(obs_space, gym.spaces.Dict) \
                and ACTION_MASK_KEY in obs_space.spaces:
            rest = {k: s for k, s in obs_space.spaces.items() if k != ACTION_MASK_KEY}
            strip = "inner" if list(rest) == [INNER] else "rest"
            obs_space = rest[INNER] if strip == "inner" else gym.spaces.Dict(rest)
        slot = AgentSlot(
            agent, group, index,
            observation=codec_for(obs_space, agent=agent, role="observation",
                                  categorical=categorical,
                                  path=f"[{INNER!r}]" if strip == "inner" else ""),
            action=codec_for(act_space, agent=agent, role="action", categorical=categorical),
            mask_size=int(act_space.n) if masked and isinstance(act_space, gym.spaces.Discrete)
            else 0, strip=strip)
        slot.zero = encoded_zero(slot.observation)
        return slot

    def specs(self, device: Any) -> tuple[Any, Any, Any, Any]:
        """Return the full observation, action, reward and done specs (imports torchrl).

        Marks the groups whose specs are stacked lazily (:attr:`GroupSlot.lazy`).

        Raises:
            ConfigError: a group whose agents' specs TorchRL cannot stack.
        """
        import torch
        from torchrl.data import Categorical, Composite, Unbounded

        def flag(shape: tuple[int, ...]) -> Any:
            return Categorical(2, shape=shape, dtype=torch.bool, device=device)

        observation, action, reward = Composite(device=device), Composite(device=device), \
            Composite(device=device)
        done = Composite({k: flag((1,)) for k in ("done", "terminated", "truncated")},
                         device=device)
        for name, group in self.groups.items():
            per_agent = []
            for slot in group.agents:
                entries = {"observation": slot.observation.spec(device), "mask": flag(())}
                if slot.mask_size:
                    entries[ACTION_MASK_KEY] = flag((slot.mask_size,))
                per_agent.append(Composite(entries, device=device))
            observation[name] = _stack(group, "observation", per_agent)
            action[name] = _stack(group, "action", [
                Composite({"action": s.action.spec(device)}, device=device) for s in group.agents])
            group.lazy = _is_lazy(observation[name]) or _is_lazy(action[name])
            n = len(group.agents)
            reward[name] = Composite(
                {"reward": Unbounded(shape=(n, *group.agents[0].reward_shape),
                                     dtype=torch.float32, device=device)},
                shape=(n,), device=device)
            done[name] = Composite({k: flag((n, 1)) for k in ("done", "terminated", "truncated")},
                                   shape=(n,), device=device)
        return observation, action, reward, done


def _reward_shape(env: Any, agent: AgentID) -> tuple[int, ...]:
    """``(1,)`` for one number per step, or the shape of the agent's declared reward space."""
    space = reward_space_of(env, agent)
    return (1,) if space is None or space.shape in ((), None) else tuple(space.shape)


def _is_lazy(spec: Any) -> bool:
    return type(spec).__name__.startswith("Stacked")


def _stack(group: GroupSlot, role: str, specs: list[Any]) -> Any:
    """Stack one spec per agent along the agent dimension, or refuse with the reason."""
    import torch

    agents = [s.agent for s in group.agents]
    keys = [set(spec.keys(True, True)) for spec in specs]
    problem: Optional[str] = None
    if any(k != keys[0] for k in keys[1:]):
        problem = "have different entries"
    else:
        try:
            stacked = torch.stack(specs, 0)
            for key in keys[0]:  # a lazy stack stacks its leaves on first access
                stacked[key]
            return stacked
        except (RuntimeError, ValueError) as exc:
            problem = f"cannot be stacked: {exc}"
    kinds: dict[str, list[str]] = {}
    for agent, spec in zip(agents, specs):
        kinds.setdefault(_describe(spec), []).append(repr(agent))
    seen = "; ".join(f"{', '.join(who)}: {what}" for what, who in kinds.items())
    raise ConfigError(
        OWNER, f"the {role} specs of the agents of group {group.name!r} {problem} ({seen})",
        fix="Put agents whose spaces differ in kind in different groups: "
            "group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT, a dict of group name -> agent ids, "
            "or None for the default (agents with equal spaces share a group).")


def _describe(spec: Any) -> str:
    """``"observation MultiCategorical(3,)"``: kind and shape of each leaf of an agent's spec."""
    return ", ".join(f"{k if isinstance(k, str) else '/'.join(k)} {type(v).__name__}"
                     f"{tuple(v.shape)}" for k, v in spec.items(True, True)
                     if k not in ("mask", ACTION_MASK_KEY))
