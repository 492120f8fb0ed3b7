"""hub -> TorchRL: ``HubTorchRLEnv``, a real ``torchrl.envs.EnvBase`` around a hub env.

The class derives from TorchRL's, so it is built on first use
(:func:`hub_torchrl_env_class`, or the module attribute ``HubTorchRLEnv``):
importing this module imports no torch. Its behaviour lives in
:class:`HubTorchRLEnvMixin`; where each agent's data sits is
:mod:`~marlhub.adapters.torchrl.layout`'s.

Example:
    >>> import marlhub
    >>> env = hub_torchrl_env_class()(marlhub.make("traffic"))
    >>> env.group_map
    {'car': ['car_0', 'car_1', 'car_2', 'car_3'], 'light': ['light']}
    >>> td = env.reset(seed=0)
    >>> td["car", "mask"], td["light", "mask"]
    (tensor([ True, False, False, False]), tensor([True]))
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.torchrl.layout import (
    AgentSlot,
    GroupSlot,
    Layout,
    has_observation_mask,
)
from marlhub.adapters.torchrl.specs import Codec, codec_for
from marlhub.core import ALL, ENV_STATE, AgentID, MultiAgentDict
from marlhub.display import view_html
from marlhub.episode.status import actors_of, done_agents, episode_over, flag
from marlhub.errors import ActionError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask, masks_are_binding
from marlhub.wrappers.base import global_state, global_state_space
from marlhub.wrappers.illegal import IllegalActionWrapper

__all__ = ["DEFAULT_ILLEGAL_ACTION", "HubTorchRLEnvMixin", "hub_torchrl_env_class",
           "mask_action_spec"]

#: What a masked-out action does unless told otherwise: TorchRL's ``rand_step``,
#: ``rollout`` and ``check_env_specs`` sample actions from the spec, so the hub's
#: ActionError would stop them where the spec cannot carry the mask.
DEFAULT_ILLEGAL_ACTION = "terminate"


class HubTorchRLEnvMixin:
    """A hub env as a TorchRL multi-agent env (``HubTorchRLEnv``'s code).

    Follows TorchRL's multi-agent conventions: per-group nested tensordicts
    with an agent dimension (``env.group_map``; see
    :mod:`~marlhub.adapters.torchrl.layout` for every key), ``done`` /
    ``terminated`` / ``truncated`` at the root (the hub's ``"__all__"``) and per
    agent in each group.

    * **Who acts**: ``(group, "mask")`` is True for the agents that act in the
      next step (the hub's observation dict); turn-based envs and agents that
      come and go need no padding. Agents that do not act keep their last
      observation (zeros before their first one) and their actions are ignored.
    * **Masks**: ``(group, "action_mask")`` holds the hub's action masks (from
      observations or infos), and the group's ``Categorical`` / ``OneHot`` action
      spec carries them, so ``rand_action`` and ``rollout()`` without a policy
      play legal actions; rows of agents that do not act (and every row once the
      episode is over) are all True. A masked-out action that still arrives
      follows ``illegal_action`` (:class:`~marlhub.wrappers.illegal.IllegalActionWrapper`).
      Batched envs (``SerialEnv``, ``ParallelEnv``) keep specs of their own, which
      TorchRL does not update from their members: there a policy reads
      ``(group, "action_mask")``, and random actions may be illegal. An env whose
      agents have Discrete actions without a mask in their observation space is
      reset once when the view is built, to see whether its infos carry masks.
    * **Rewards**: exactly what the hub paid in the step, per agent, idle
      agents included (0 for agents the rewards dict leaves out), as float32;
      an agent paid arrays (a declared reward space of shape ``(k,)``, multi-objective
      envs) has ``(k,)`` per agent, so its group's reward spec is ``(n_agents, k)``.
      Infos are not carried, except their action masks.
    * **Global state**: where the hub env has ``state_space``, its ``state()``
      sits at the root under ``"state"``, as TorchRL's ``PettingZooWrapper``
      puts it (for a centralised critic).
    * **Done**: an agent's flags turn True in the step the hub reports it done
      and stay so; at the end of the episode every other agent takes the
      ``"__all__"`` flags.
    * **Seeds**: ``reset(seed=s)`` and ``set_seed(s)`` (which takes effect at the
      next reset) go to the hub env's ``reset(seed=s)``; chance is the hub env's.
      A reset always restarts the whole hub env (the env holds one episode;
      batch size ``()``).
    * **Closing**: ``close()`` closes the hub env; dropping the view does not.

    Args:
        env: the hub env.
        group_map: None (default: see :mod:`~marlhub.adapters.torchrl.groups`), a
            ``torchrl.envs.utils.MarlGroupMapType`` or a dict group name -> agent ids.
        categorical_actions: Discrete and MultiDiscrete values as indices
            (``Categorical``) or one-hot (``OneHot``), actions and observations alike.
        device: the device of the specs and tensordicts.
        illegal_action: what a masked-out action does: ``"terminate"`` (default;
            the offender gets -1 and the episode ends), ``"substitute"`` or ``"raise"``.

    Attributes:
        env: the hub env.
        group_map: group name -> the hub agent ids in it, in order.
    """

    #: Tells :func:`marlhub.adapters.torchrl.from_torchrl` to hand back ``env`` itself.
    _marlhub_view_of_hub = True
    # Provided by torchrl's EnvBase in the built class.
    device: Any
    input_spec: Any
    is_closed: bool
    full_observation_spec: Any
    full_action_spec: Any
    full_reward_spec: Any
    full_done_spec: Any

    def _repr_html_(self) -> str:
        """In a notebook: what the view converts (its groups), and the hub env's agents."""
        groups = "; ".join(f"{name}: {', '.join(map(str, agents))}"
                           for name, agents in self.group_map.items())
        return view_html(f"TorchRL EnvBase (groups {groups})", self.env)

    def __init__(self, env: Any, *, group_map: Any = None, categorical_actions: bool = True,
                 device: Any = "cpu", illegal_action: str = DEFAULT_ILLEGAL_ACTION) -> None:
        driven = IllegalActionWrapper(env, illegal_action)  # refuses unknown policies
        super().__init__(device=device, batch_size=(),  # type: ignore[call-arg]
                         allow_done_after_reset=False)
        self.env = env
        self._driven = driven
        binding = masks_are_binding(env)
        self._layout = Layout(env, group_map, categorical=bool(categorical_actions),
                              info_masks=binding and _publishes_info_masks(env, driven),
                              binding=binding)
        self.group_map: dict[str, list[AgentID]] = {
            name: list(members) for name, members in self._layout.group_map.items()}
        observation, action, reward, done = self._layout.specs(self.device)
        try:
            state_space = global_state_space(env)
        except AttributeError:
            self._state_codec: Optional[Codec] = None
        else:
            self._state_codec = codec_for(state_space, agent="the global state", role="state",
                                          categorical=bool(categorical_actions))
            observation[ENV_STATE] = self._state_codec.spec(self.device)
        self.full_observation_spec = observation
        self.full_action_spec = action
        self.full_reward_spec = reward
        self.full_done_spec = done
        self._next_seed: Optional[int] = None
        self._last_obs: MultiAgentDict = {}
        self._flags: dict[AgentID, tuple[bool, bool]] = {}
        self._actors: list[AgentID] = []

    # -- TorchRL's hooks ------------------------------------------------------------

    def _reset(self, tensordict: Any = None, *, seed: Optional[int] = None,
               options: Optional[dict] = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"reset() got unexpected keyword arguments {sorted(kwargs)}; a hub "
                            "env's reset takes seed and options.")
        if seed is None:
            seed, self._next_seed = self._next_seed, None
        obs, infos = self._driven.reset(seed=seed, options=options)
        self._last_obs, self._flags = {}, {}
        return self._output(obs, infos or {}, None, {}, {})

    def _step(self, tensordict: Any) -> Any:
        result = self._driven.step(self._actions(tensordict))
        obs, rewards, terminateds, truncateds, infos = result
        return self._output(obs, infos or {}, rewards, terminateds, truncateds)

    def _set_seed(self, seed: Optional[int]) -> None:
        self._next_seed = seed

    # -- hub -> tensordict ----------------------------------------------------------

    def _output(self, obs: MultiAgentDict, infos: Mapping[Any, Any],
                rewards: Optional[Mapping[Any, Any]], terminateds: Mapping[Any, Any],
                truncateds: Mapping[Any, Any]) -> Any:
        """The tensordict of a reset (``rewards`` None) or of a step."""
        from tensordict import TensorDict

        self._last_obs.update(obs)
        self._actors = actors_of(obs, terminateds, truncateds)
        for agent in done_agents(terminateds, truncateds):
            self._flags[agent] = (flag(terminateds, agent), flag(truncateds, agent))
        ends = (flag(terminateds, ALL), flag(truncateds, ALL))
        idle = ends if episode_over(terminateds, truncateds) else (False, False)
        acting = set(self._actors)
        out: dict[str, Any] = {}
        for name, group in self._layout.groups.items():
            fields = [self._fields(slot, acting, obs, infos, rewards, idle)
                      for slot in group.agents]
            out[name] = _pack(fields, group.lazy, self.device)
            if group.action_masks and not group.lazy:
                mask_action_spec(self, group, out[name].get(ACTION_MASK_KEY))
        if self._state_codec is not None:
            out[ENV_STATE] = _tree(self._state_codec.encode(global_state(self.env)))
        root = TensorDict(out, batch_size=(), device=self.device)
        for key, value in zip(("terminated", "truncated", "done"), (*ends, any(ends))):
            root.set(key, _tensor(np.array([value])).to(self.device))
        return root

    def _fields(self, slot: AgentSlot, acting: set[AgentID], obs: MultiAgentDict,
                infos: Mapping[Any, Any], rewards: Optional[Mapping[Any, Any]],
                idle: tuple[bool, bool]) -> dict[str, Any]:
        """One agent's entries in its group: observation, masks, reward, done flags."""
        agent = slot.agent
        fields: dict[str, Any] = {
            "observation": slot.encode_observation(self._last_obs.get(agent)),
            "mask": np.asarray(agent in acting),
        }
        if slot.mask_size:
            row = np.ones(slot.mask_size, dtype=bool)
            if agent in acting:
                info = infos.get(agent)
                mask = find_action_mask(obs[agent], info if isinstance(info, Mapping) else None)
                if mask is not None and mask.shape == row.shape and mask.any():
                    row = mask.astype(bool)
            fields[ACTION_MASK_KEY] = row
        if rewards is not None:
            if slot.reward_shape == (1,):
                fields["reward"] = np.asarray([rewards.get(agent, 0.0)], dtype=np.float32)
            else:  # one entry per objective (0.0 for an agent not paid: zeros)
                fields["reward"] = np.broadcast_to(np.asarray(
                    rewards.get(agent, 0.0), dtype=np.float32), slot.reward_shape).copy()
        terminated, truncated = self._flags.get(agent, idle)
        fields["terminated"] = np.asarray([terminated])
        fields["truncated"] = np.asarray([truncated])
        fields["done"] = np.asarray([terminated or truncated])
        return fields

    # -- tensordict -> hub ------------------------------------------------------------

    def _actions(self, tensordict: Any) -> dict[AgentID, Any]:
        """The action of every agent that acts now, read from its group; others are ignored."""
        actions: dict[AgentID, Any] = {}
        read: dict[str, Any] = {}
        for agent in self._actors:
            slot = self._layout.slots[agent]
            group = self._layout.groups[slot.group]
            if slot.group not in read:
                data = tensordict.get((slot.group, "action"), None) if not group.lazy \
                    else tensordict.get(slot.group, None)
                if data is None:
                    raise ActionError(agent, None, expected=f"an action at "
                                      f"({slot.group!r}, 'action') of the tensordict",
                                      fix=f"Write the actions of group {slot.group!r} there, "
                                          "shaped as env.full_action_spec says.")
                read[slot.group] = data.unbind(0) if group.lazy else _numpy(data)
            data = read[slot.group]
            value = _numpy(data[slot.index].get("action")) if group.lazy \
                else _row(data, slot.index)
            actions[agent] = slot.action.decode(value)
        return actions

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Close the hub env."""
        self.is_closed = True
        self.env.close()

    def __repr__(self) -> str:
        return f"HubTorchRLEnv(env={self.env!r}, group_map={self.group_map!r}, " \
               f"device={self.device})"


def mask_action_spec(env: Any, group: GroupSlot, mask: Any) -> None:
    """Let the group's action spec in ``env`` sample only legal actions (TorchRL's masked
    specs): what a view of one env and a view of a vector env both do."""
    spec = env.input_spec["full_action_spec", group.name, "action"]
    if type(spec).__name__ in ("Categorical", "OneHot"):
        spec.update_mask(mask.clone())


def _publishes_info_masks(env: Any, driven: Any) -> bool:
    """Tell whether the env's infos carry action masks, resetting it once to look.

    Only asked when some agent has Discrete actions but no mask in its
    observation space (TorchRL's PettingZooWrapper reads infos the same way).
    """
    needs_look = any(
        isinstance(env.get_action_space(a), gym.spaces.Discrete)
        and not has_observation_mask(env.get_observation_space(a)) for a in env.possible_agents)
    if not needs_look:
        return False
    obs, infos = driven.reset()
    infos = infos or {}
    return any(isinstance(infos.get(a), Mapping) and infos[a].get(ACTION_MASK_KEY) is not None
               for a in obs)


def _tensor(array: Any) -> Any:
    """A copy of ``array`` as a tensor (the hub env may reuse its arrays)."""
    import torch

    return torch.from_numpy(np.array(array, order="C"))


def _tree(fields: Any) -> Any:
    """Nested dicts of arrays as nested dicts of tensors."""
    if isinstance(fields, dict):
        return {k: _tree(v) for k, v in fields.items()}
    return _tensor(fields)


def _stacked(fields: list[Any]) -> Any:
    """One nested dict of arrays per agent as one nested dict of arrays along the agent dim."""
    first = fields[0]
    if isinstance(first, dict):
        return {k: _stacked([f[k] for f in fields]) for k in first}
    return np.stack(fields)


def _pack(fields: list[dict[str, Any]], lazy: bool, device: Any) -> Any:
    """The group's tensordict: dense along the agent dim, or a lazy stack of unlike agents."""
    from tensordict import LazyStackedTensorDict, TensorDict

    if lazy:
        return LazyStackedTensorDict.lazy_stack(
            [TensorDict(_tree(f), batch_size=(), device=device) for f in fields], 0)
    return TensorDict(_tree(_stacked(fields)), batch_size=(len(fields),), device=device)


def _numpy(data: Any) -> Any:
    """A tensor as an array, a tensordict as nested dicts of arrays."""
    if hasattr(data, "detach"):
        return data.detach().cpu().numpy()
    return {k: _numpy(v) for k, v in data.items()}


def _row(data: Any, index: int) -> Any:
    if isinstance(data, dict):
        return {k: _row(v, index) for k, v in data.items()}
    return data[index]


@functools.cache
def hub_torchrl_env_class() -> type:
    """Return ``HubTorchRLEnv``: :class:`HubTorchRLEnvMixin` on TorchRL's ``EnvBase``.

    Imports torch and TorchRL; built once.

    Raises:
        ImportError: TorchRL is not installed.
    """
    from torchrl.envs import EnvBase

    class HubTorchRLEnv(HubTorchRLEnvMixin, EnvBase):
        __doc__ = HubTorchRLEnvMixin.__doc__

    HubTorchRLEnv.__module__ = __name__
    HubTorchRLEnv.__qualname__ = "HubTorchRLEnv"
    return HubTorchRLEnv


def __getattr__(name: str) -> Any:
    if name == "HubTorchRLEnv":
        return hub_torchrl_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
