"""Action masks the way RLlib reads them: in infos, or in the observation its masking module wants.

RLlib's action-masking example RLModule takes observations
``{"observations": ..., "action_mask": ...}``; :class:`MaskLayout` turns a hub
env's observations into that shape (``mask_observation=True`` of
:func:`~marlhub.adapters.rllib.to_rllib`), taking the mask from wherever the
hub env keeps it (inside a Dict observation or in infos) and giving agents
without one an all-ones mask. Without it, masks are copied into
``infos[agent]["action_mask"]``, which is where RLlib-side callbacks look.

Example:
    >>> import gymnasium as gym, numpy as np
    >>> space = gym.spaces.Dict({"observation": gym.spaces.Box(0, 1, (2,)),
    ...                          "action_mask": gym.spaces.Box(0, 1, (3,), np.int8)})
    >>> layout = MaskLayout(space, gym.spaces.Discrete(3))
    >>> sorted(layout.space.spaces)
    ['action_mask', 'observations']
    >>> obs = {"observation": np.zeros(2, np.float32), "action_mask": np.array([1, 0, 1], np.int8)}
    >>> layout.observation(obs, {})["action_mask"]
    array([1., 0., 1.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub.errors import ConfigError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask

__all__ = ["MASKED_OBSERVATIONS", "MaskLayout", "mask_into_infos"]

#: The observation key of RLlib's action-masking RLModule.
MASKED_OBSERVATIONS = "observations"


class MaskLayout:
    """One agent's observation as ``{"observations": ..., "action_mask": float32 0/1}``.

    Args:
        obs_space: the agent's hub observation space.
        action_space: its action space (Discrete: the mask has ``n`` entries).

    Raises:
        ConfigError: the action space is not Discrete.
    """

    def __init__(self, obs_space: gym.Space, action_space: gym.Space) -> None:
        if not isinstance(action_space, gym.spaces.Discrete):
            raise ConfigError(
                "to_rllib", f"mask_observation=True needs Discrete actions, got {action_space}",
                fix="Use mask_observation=False; the masks are in infos[agent]['action_mask'].",
            )
        self.size = int(action_space.n)
        self.inner_key = None
        inner = obs_space
        if isinstance(obs_space, gym.spaces.Dict) and ACTION_MASK_KEY in obs_space.spaces:
            rest = {k: v for k, v in obs_space.spaces.items() if k != ACTION_MASK_KEY}
            self.inner_key = next(iter(rest)) if len(rest) == 1 else None
            inner = rest[self.inner_key] if self.inner_key else gym.spaces.Dict(rest)
        self.space = gym.spaces.Dict({
            MASKED_OBSERVATIONS: inner,
            ACTION_MASK_KEY: gym.spaces.Box(0.0, 1.0, (self.size,), np.float32),
        })

    def observation(self, obs: Any, info: Any) -> dict[str, Any]:
        """Return ``obs`` in the masked layout (an all-ones mask when there is none)."""
        mask = find_action_mask(obs, info if isinstance(info, Mapping) else None)
        if isinstance(obs, Mapping) and ACTION_MASK_KEY in obs:
            inner = (obs[self.inner_key] if self.inner_key
                     else {k: v for k, v in obs.items() if k != ACTION_MASK_KEY})
        else:
            inner = obs
        full = np.ones(self.size, np.float32) if mask is None else mask.astype(np.float32)
        return {MASKED_OBSERVATIONS: inner, ACTION_MASK_KEY: full}


def mask_into_infos(obs: Mapping[Any, Any], infos: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """Return ``infos`` with each observed agent's mask (from its obs) under ``"action_mask"``.

    Example:
        >>> mask_into_infos({"a": {"action_mask": [0, 1]}}, {})
        {'a': {'action_mask': array([0, 1], dtype=int8)}}
    """
    out = None
    for agent, value in obs.items():
        info = infos.get(agent)
        if isinstance(info, Mapping) and ACTION_MASK_KEY in info:
            continue
        mask = find_action_mask(value)
        if mask is not None:
            out = dict(infos) if out is None else out
            out[agent] = {**(info if isinstance(info, Mapping) else {}), ACTION_MASK_KEY: mask}
    return infos if out is None else out
