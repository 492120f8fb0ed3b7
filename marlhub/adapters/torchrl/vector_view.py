"""vector env -> TorchRL: ``VectorTorchRLEnv``, an ``EnvBase`` with ``batch_size=[num_envs]``.

``to_torchrl(make_vec(...))`` reads the vector env's array face
(``reset_arrays`` / ``step_arrays``: per group, ``(num_envs, n, ...)``) and
writes TorchRL's multi-agent layout: one nested tensordict per group with dims
``[num_envs, n_agents]``, ``done`` / ``terminated`` / ``truncated`` at the root
(``[num_envs, 1]``) and per agent, ``(group, "mask")`` for who acts and
``(group, "action_mask")`` for groups with masks. Sync, async and batched
vector envs alike; for a batched VMAS source this is TorchRL's own ``VmasEnv``
layout, read straight from VMAS's tensors. Where each entry sits and how a
space becomes a spec is :class:`~marlhub.adapters.torchrl.layout.Layout`'s, as
for one hub env.

* **Partial resets**: TorchRL's ``"_reset"`` entries reset only those copies
  (the vector env's ``reset_mask``); a reset without them resets every copy.
* **Seeds**: ``set_seed(s)`` and ``reset(seed=s)`` go to the vector env's
  ``reset(seed=s)`` (copy ``i`` seeded ``s + i``, or the batched simulator's own).
* **Done**: an agent's flags turn True when it is done and stay so until its
  copy is reset; TorchRL resets done copies itself (``step_and_maybe_reset``).
* **On a GPU**: a batched simulator made with ``as_torch=True`` keeps its
  observations, rewards and actions on its device, as TorchRL's ``VmasEnv``
  does (only the done flags and masks, which the vector env keeps in numpy,
  cross). Made without it, every step goes through the host, which is slow on
  a GPU; the view warns of that.

Example:
    >>> import marlhub
    >>> env = vector_torchrl_env_class()(marlhub.make_vec("vmas/balance", 4, {"max_steps": 3}))
    >>> env.batch_size, env.group_map
    (torch.Size([4]), {'agents': ['agent_0', 'agent_1', 'agent_2']})
    >>> td = env.rollout(3)
    >>> td["next", "agents", "observation"].shape, td["next", "done"][:, -1].all().item()
    (torch.Size([4, 3, 3, 16]), True)
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Optional

import numpy as np

from marlhub.adapters.batched import to_numpy
from marlhub.adapters.torchrl.layout import GroupSlot, Layout
from marlhub.adapters.torchrl.rows import decode_rows, encode_rows, is_tensor
from marlhub.adapters.torchrl.view import mask_action_spec
from marlhub.core import AgentID
from marlhub.errors import MarlhubWarning
from marlhub.spaces import ACTION_MASK_KEY

__all__ = ["VectorTorchRLEnvMixin", "is_vector_env", "vector_torchrl_env_class"]


def is_vector_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a marlhub vector env (it has the array face).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_vector_env(TicTacToe())
        False
    """
    return all(hasattr(obj, name) for name in ("num_envs", "groups", "reset_arrays",
                                                "step_arrays"))


class VectorTorchRLEnvMixin:
    """A vector env as a batched TorchRL multi-agent env (``VectorTorchRLEnv``'s code).

    Args:
        vector_env: a marlhub vector env (sync, async or batched).
        categorical_actions: Discrete values as indices (``Categorical``) or one-hot.
        device: the device of the specs and tensordicts.

    Attributes:
        vector_env: the vector env.
        group_map: group name -> agents: the vector env's groups.
    """

    #: Tells :func:`marlhub.adapters.torchrl.from_torchrl` to hand back ``vector_env``.
    _marlhub_view_of_vector = True
    device: Any
    batch_size: Any
    input_spec: Any
    is_closed: bool
    full_observation_spec: Any
    full_action_spec: Any
    full_reward_spec: Any
    full_done_spec: Any

    def __init__(self, vector_env: Any, *, categorical_actions: bool = True,
                 device: Any = "cpu") -> None:
        num_envs = int(vector_env.num_envs)
        super().__init__(device=device, batch_size=(num_envs,),  # type: ignore[call-arg]
                         allow_done_after_reset=False)
        self.vector_env = vector_env
        self._layout = Layout(vector_env, dict(vector_env.groups),
                              categorical=bool(categorical_actions), info_masks=False)
        self.group_map: dict[str, list[AgentID]] = {
            name: [slot.agent for slot in group.agents]
            for name, group in self._layout.groups.items()}
        specs = self._layout.specs(self.device)
        self.full_observation_spec, self.full_action_spec, self.full_reward_spec, \
            self.full_done_spec = (spec.expand(num_envs, *spec.shape) for spec in specs)
        self._next_seed: Optional[int] = None
        self._flags = {name: np.zeros((2, num_envs, len(members), 1), bool)  # terminated,
                       for name, members in self.group_map.items()}  # truncated: contiguous
        self._as_torch = bool(getattr(vector_env, "as_torch", False))
        self._array_device: Any = None  # where the array face's tensors are, if torch's
        _warn_of_the_host(vector_env, self._as_torch)

    # -- TorchRL's hooks ------------------------------------------------------------

    def _reset(self, tensordict: Any = None, **kwargs: Any) -> Any:
        seed = kwargs.pop("seed", None)
        if seed is None:
            seed, self._next_seed = self._next_seed, None
        mask = self._reset_mask(tensordict)
        if mask is None or mask.all():
            batch = self.vector_env.reset_arrays(seed=seed)
            rows = np.ones(self.vector_env.num_envs, bool)
        else:
            batch = self.vector_env.reset_arrays(options={"reset_mask": mask})
            rows = mask
        for flags in self._flags.values():
            flags[:, rows] = False
        return self._output(batch, rewards=False)

    def _step(self, tensordict: Any) -> Any:
        actions, device = {}, self._array_device
        for name, group in self._layout.groups.items():
            action = decode_rows(group.agents[0].action, tensordict.get((name, "action")),
                                 as_torch=device is not None)
            actions[name] = action if device is None else _to_device(action, device)
        return self._output(self.vector_env.step_arrays(actions), rewards=True)

    def _set_seed(self, seed: Optional[int]) -> None:
        self._next_seed = seed

    # -- arrays -> tensordict ---------------------------------------------------------

    def _reset_mask(self, tensordict: Any) -> Optional[np.ndarray]:
        """Which copies TorchRL's ``"_reset"`` entries reset (None: no entry, reset all)."""
        if tensordict is None:
            return None
        keys = ["_reset", *((name, "_reset") for name in self.group_map)]
        found = None
        for key in keys:
            value = tensordict.get(key, None)
            if value is not None:
                rows = value.reshape(self.vector_env.num_envs, -1).any(-1).cpu().numpy()
                found = rows if found is None else found | rows
        return found

    def _output(self, batch: Any, *, rewards: bool) -> Any:
        import torch
        from tensordict import TensorDict

        num_envs = self.vector_env.num_envs
        if self._as_torch and self._array_device is None:
            leaf = _first_leaf(batch.obs)  # torch's, or a source's own arrays kept as they are
            self._array_device = leaf.device if is_tensor(leaf) else None
        as_torch = self._array_device is not None
        out: dict[str, Any] = {}
        for name, group in self._layout.groups.items():
            n = len(group.agents)
            terminated, truncated = self._flags[name]
            terminated[..., 0] |= np.asarray(batch.terminated[name], bool)
            truncated[..., 0] |= np.asarray(batch.truncated[name], bool)
            fields: dict[str, Any] = {
                "observation": _tree(_observations(group, batch.obs[name], as_torch)),
                "mask": _tensor(np.asarray(batch.acting[name], bool)),
                "terminated": _tensor(terminated.copy()), "truncated": _tensor(truncated.copy()),
                "done": _tensor(terminated | truncated),
            }
            if group.agents[0].mask_size:
                mask = batch.action_mask.get(name)
                fields[ACTION_MASK_KEY] = _tensor(np.ones((num_envs, n, group.agents[0]
                                                           .mask_size), bool) if mask is None
                                                  else np.asarray(mask).astype(bool))
            if rewards:
                fields["reward"] = _rewards(batch.rewards[name],
                                            (num_envs, n, *group.agents[0].reward_shape))
            out[name] = TensorDict(fields, batch_size=(num_envs, n), device=self.device)
            if group.action_masks:
                mask_action_spec(self, group, out[name].get(ACTION_MASK_KEY))
        root = TensorDict(out, batch_size=(num_envs,), device=self.device)
        terminated = np.asarray(batch.episode_terminated, bool).reshape(num_envs, 1)
        truncated = np.asarray(batch.episode_truncated, bool).reshape(num_envs, 1)
        root.set("terminated", torch.from_numpy(terminated.copy()).to(self.device))
        root.set("truncated", torch.from_numpy(truncated.copy()).to(self.device))
        root.set("done", torch.from_numpy(terminated | truncated).to(self.device))
        return root

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Close the vector env."""
        self.is_closed = True
        self.vector_env.close()

    def __repr__(self) -> str:
        return f"VectorTorchRLEnv(vector_env={self.vector_env!r}, group_map={self.group_map!r}, " \
               f"device={self.device})"


def _observations(group: GroupSlot, obs: Any, as_torch: bool) -> Any:
    """The group's observation arrays, as its slots' spec holds them (masks taken out)."""
    slot = group.agents[0]
    if slot.strip == "inner":
        obs = obs["observation"]
    elif slot.strip == "rest":
        obs = {k: v for k, v in obs.items() if k != ACTION_MASK_KEY}
    return encode_rows(slot.observation, obs if as_torch else to_numpy(obs))


def _rewards(rewards: Any, shape: tuple[int, ...]) -> Any:
    """A group's rewards as float32 ``(num_envs, n, 1)``: a tensor stays on its device."""
    import torch

    if is_tensor(rewards):
        return rewards.detach().to(torch.float32).reshape(shape)
    return _tensor(np.asarray(to_numpy(rewards), np.float32).reshape(shape))


def _tensor(array: Any) -> Any:
    """A tensor of ``array``: numpy is shared, not copied; a tensor is kept as it is."""
    import torch

    if is_tensor(array):
        return array
    return torch.from_numpy(np.ascontiguousarray(array))


def _first_leaf(value: Any) -> Any:
    while isinstance(value, dict):
        value = next(iter(value.values()))
    return value


def _to_device(value: Any, device: Any) -> Any:
    """Decoded actions (a tensor, or a dict or tuple of them) moved to ``device``."""
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    return value.to(device)


def _warn_of_the_host(vector_env: Any, as_torch: bool) -> None:
    """Warn where a batched simulator on an accelerator gives its arrays as numpy."""
    device = getattr(getattr(vector_env, "source", None), "device", None)
    if as_torch or device is None or str(device).split(":")[0] == "cpu":
        return
    warnings.warn(
        f"to_torchrl: {vector_env} runs on {device} and its array face gives numpy "
        "arrays, so every step copies the batch to the host and back. Make it with "
        f"marlhub.make_vec(..., as_torch=True) to keep the tensors on {device}.",
        MarlhubWarning, stacklevel=4)


def _tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _tree(v) for k, v in value.items()}
    return _tensor(value)


@functools.cache
def vector_torchrl_env_class() -> type:
    """Return ``VectorTorchRLEnv``: :class:`VectorTorchRLEnvMixin` on TorchRL's ``EnvBase``.

    Raises:
        ImportError: TorchRL is not installed.
    """
    from torchrl.envs import EnvBase

    class VectorTorchRLEnv(VectorTorchRLEnvMixin, EnvBase):
        __doc__ = VectorTorchRLEnvMixin.__doc__

    VectorTorchRLEnv.__module__ = __name__
    VectorTorchRLEnv.__qualname__ = "VectorTorchRLEnv"
    return VectorTorchRLEnv
