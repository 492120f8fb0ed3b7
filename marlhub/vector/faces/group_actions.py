"""Actions of the array face: one array per group, ``(num_envs, n, ...)``, checked in one pass.

:class:`GroupActions` checks the groups, each array's shape, dtype and device, then every
acting slot against its space and mask, before any copy moves; the first bad slot is
named by group, copy and agent.

Example:
    >>> import gymnasium as gym
    >>> check = GroupActions("Vec", 2, {"agents": ["a", "b"]},
    ...                      {"a": gym.spaces.Discrete(3), "b": gym.spaces.Discrete(3)})
    >>> acting = {"agents": np.ones((2, 2), bool)}
    >>> check.check({"agents": np.array([[0, 1], [2, 2]])}, acting, {})["agents"].tolist()
    [[0, 1], [2, 2]]
    >>> check.check({"agents": np.array([[0, 1], [2, 3]])}, acting, {})
    Traceback (most recent call last):
    ...
    marlhub.errors.ActionError: Bad action for 'b' in copy 1: got 3, expected an action in Discrete(3) (group 'agents', actions of shape (2, 2)). Pass one action per copy and slot of each group, inside the slot's action space and mask (step_arrays' arrays; infos['acting'] says which slots act).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.core import AgentID
from marlhub.errors import ActionError, VectorEnvError
from marlhub.spaces import zero_like

__all__ = ["GroupActions"]

_FIX = ("Pass one action per copy and slot of each group, inside the slot's action space and "
        "mask (step_arrays' arrays; infos['acting'] says which slots act).")


class GroupActions:
    """The checks of one array per group of ``num_envs`` copies (``device``: where torch
    actions must be; None: any)."""

    def __init__(self, env_name: str, num_envs: int, groups: Mapping[str, Sequence[AgentID]],
                 action_spaces: Mapping[AgentID, gym.Space], device: Any = None) -> None:
        self.env_name = env_name
        self.num_envs = num_envs
        self.groups = {name: list(agents) for name, agents in groups.items()}
        self.spaces = {name: action_spaces[agents[0]] for name, agents in self.groups.items()}
        self.shapes = {name: (num_envs, len(agents), *(self.spaces[name].shape or ()))
                       for name, agents in self.groups.items()}
        self.device = device

    def blank(self, name: str) -> np.ndarray:
        """An action array of group ``name`` that holds the space's zero in every slot."""
        space = self.spaces[name]
        return np.broadcast_to(np.asarray(zero_like(space), dtype=space.dtype),
                               self.shapes[name]).copy()

    def check(self, actions: Any, acting: Mapping[str, np.ndarray],
              masks: Mapping[str, np.ndarray], copy_ids: Any = None) -> dict[str, Any]:
        """Return the actions per group, as given, or raise for the first bad one.

        ``acting`` and ``masks`` (group -> arrays) say whose actions count and what they
        may be; ``copy_ids``: the copies of the rows, when not every copy.

        Raises:
            VectorEnvError: not a dict of the groups, or a wrong shape, dtype or device.
            ActionError: an acting slot's action outside its space or mask.
        """
        if not isinstance(actions, Mapping) or set(actions) != set(self.groups):
            got = sorted(map(str, actions)) if isinstance(actions, Mapping) else \
                type(actions).__name__
            raise VectorEnvError(
                self.env_name, f"step_arrays() got {got}, not one action array per group",
                f"Pass a dict with the keys {sorted(self.groups)}: "
                + ", ".join(f"{name!r}: shape {self.shapes[name]}" for name in self.groups) + ".")
        for name in self.groups:
            self._check_group(name, actions[name], acting[name], masks.get(name), copy_ids)
        return dict(actions)

    def _check_group(self, name: str, value: Any, acting: np.ndarray, mask: Any,
                     copy_ids: Any = None) -> None:
        space, shape = self.spaces[name], self.shapes[name]
        if copy_ids is not None:
            shape = (len(copy_ids), *shape[1:])
        values = self.host(name, value)
        if tuple(values.shape) != shape:
            raise VectorEnvError(
                self.env_name, f"the actions of group {name!r} have shape "
                f"{tuple(values.shape)}, not {shape} "
                f"({'num_envs' if copy_ids is None else 'copy_ids'}, agents of the group"
                f"{', the action shape' if space.shape else ''})",
                f"Pass an array of shape {shape} for group {name!r}, e.g. "
                "action_space.sample() of the array face.")
        kind = values.dtype.kind
        if isinstance(space, gym.spaces.Box):
            good = kind in "fiu" if np.dtype(space.dtype).kind == "f" else kind in "iu"
        else:
            good = kind in "iu"
        if not good:
            raise VectorEnvError(
                self.env_name, f"the actions of group {name!r} have dtype {values.dtype}, "
                f"which {space} does not take", f"Pass {np.dtype(space.dtype)} values (shape "
                f"{shape}).")
        bad = ~_legal(space, values, mask) & acting
        if bad.any():
            i, j = (int(k) for k in np.argwhere(bad)[0])
            raise ActionError(
                self.groups[name][j], _item(values[i, j]),
                copy_index=i if copy_ids is None else int(copy_ids[i]),
                expected=f"an action in {space}"
                f"{' allowed by its action mask' if mask is not None else ''} "
                f"(group {name!r}, actions of shape {shape})", fix=_FIX)

    def host(self, name: str, value: Any) -> np.ndarray:
        """The actions as a numpy array (a torch tensor on the right device is read)."""
        if hasattr(value, "detach") and hasattr(value, "device"):
            if self.device is not None and not _on_device(value.device, self.device):
                raise VectorEnvError(
                    self.env_name, f"the actions of group {name!r} are on {value.device}, "
                    f"and the simulator runs on {self.device}",
                    f"Move them with .to({str(self.device)!r}), or pass numpy arrays.")
            return value.detach().cpu().numpy()
        return np.asarray(value)


def _on_device(device: Any, wanted: Any) -> bool:
    """Whether a tensor on ``device`` is on ``wanted`` (``"cuda"``: the current CUDA device)."""
    import torch  # only torch tensors come here

    wanted = torch.device(wanted)
    if device.type != wanted.type:
        return False
    if wanted.type == "cpu":
        return True
    if wanted.index is None:
        return wanted.type != "cuda" or device.index == torch.cuda.current_device()
    return device.index == wanted.index


def _legal(space: gym.Space, values: np.ndarray, mask: Any) -> np.ndarray:
    """``(num_envs, n)`` bools: each slot's action lies in ``space`` (and its mask)."""
    lead = values.shape[:2]
    if isinstance(space, gym.spaces.Discrete):
        start, size = int(space.start), int(space.n)
        index = values - start if start else values
        ok = _below(index, size)
        if mask is not None:  # each slot's mask entry at its action (its first where out of range)
            mask = np.ascontiguousarray(mask)
            width = mask.shape[-1]
            picked = mask.reshape(-1)[_starts(ok.size, width).reshape(lead) + index * ok]
            ok &= picked != 0
        return ok
    if isinstance(space, gym.spaces.MultiDiscrete):
        index = values.astype(np.int64) - np.asarray(space.start)
        ok = (index >= 0) & (index < np.asarray(space.nvec))
        return ok.reshape(*lead, -1).all(-1)
    if isinstance(space, gym.spaces.MultiBinary):
        return ((values == 0) | (values == 1)).reshape(*lead, -1).all(-1)
    if isinstance(space, gym.spaces.Box):
        with np.errstate(invalid="ignore"):
            ok = (values >= space.low) & (values <= space.high)
        return np.asarray(ok.reshape(*lead, -1).all(-1))
    return np.ones(lead, bool)


def _below(index: np.ndarray, size: int) -> np.ndarray:
    """``0 <= index < size``: one unsigned comparison for native ints of 4 or 8 bytes."""
    dtype = index.dtype
    if dtype.kind == "i" and dtype.isnative and dtype.itemsize >= 4 \
            and size <= 2 ** (8 * dtype.itemsize - 1):
        width = dtype.itemsize
        return index.view(f"u{width}") < size
    return (index >= 0) & (index < size)


@functools.lru_cache(maxsize=64)
def _starts(slots: int, width: int) -> np.ndarray:
    """Where each of ``slots`` masks of ``width`` entries starts in their flat array."""
    starts = np.arange(0, slots * width, width)
    starts.flags.writeable = False
    return starts


def _item(value: Any) -> Any:
    return value.item() if np.ndim(value) == 0 else value
