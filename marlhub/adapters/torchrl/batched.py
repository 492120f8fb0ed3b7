"""A batched TorchRL multi-agent env (``batch_size=[N]``) as a batched source.

:class:`TorchRLBatch` reads any TorchRL ``EnvBase`` of ``N`` copies with a
``group_map`` (a ``SerialEnv`` / ``ParallelEnv`` of multi-agent envs, your
own batched env, a ``VmasEnv`` read through TorchRL) for
:class:`~marlhub.vector.BatchedVectorEnv`: each group's entries as
``(num_envs, n_agents, ...)`` arrays, decoded by the same codecs as one copy
(:class:`~marlhub.adapters.torchrl.agents.TorchRLAgents`), in one pass per
group. ``from_torchrl(env)`` builds it for a batched env that is not VMAS's.

* **Groups** are TorchRL's own; a group's agents must share their spaces
  (a lazily stacked, heterogeneous group is refused: the array face needs one
  array per group).
* **Who acts**: every agent that is not done; a group's per-agent
  ``"terminated"`` / ``"truncated"`` flags end agents early, the root's
  ``"done"`` ends the copy.
* **Partial resets** are TorchRL's own: ``reset`` with a ``"_reset"`` entry. A
  copy that is done is reset before the next ``step`` (TorchRL steps no copy
  that is done, as its ``step_and_maybe_reset``); the vector env resets it once
  more after that step, and returns only what that reset gives.
* **Seeds**: ``reset(seed=s)`` is ``env.set_seed(s)`` and a reset of every copy
  (TorchRL seeds a batched env's copies ``s``, ``s + 1``, ... where it has
  copies of its own, as ``SerialEnv`` does).

Example:
    >>> import marlhub
    >>> from torchrl.envs import SerialEnv
    >>> from marlhub.adapters.torchrl import to_torchrl
    >>> batched = SerialEnv(2, lambda: to_torchrl(marlhub.make("vmas/balance")))
    >>> source = TorchRLBatch(batched, {"agents": ["agent_0", "agent_1", "agent_2"]})
    >>> source.groups, source.num_envs
    ({'agents': ['agent_0', 'agent_1', 'agent_2']}, 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from marlhub.adapters.batched import SourceBatch
from marlhub.adapters.torchrl.agents import GroupLayout, TorchRLAgents
from marlhub.adapters.torchrl.rows import decode_rows, encode_rows
from marlhub.errors import ConfigError

__all__ = ["TorchRLBatch"]

SEEDING = ("reset(seed=s) calls the TorchRL env's set_seed(s) and resets every copy, so it "
           "reproduces the whole batch as far as the env's own seeding does.")


class TorchRLBatch:
    """A TorchRL ``EnvBase`` of ``batch_size=[N]`` with a ``group_map`` (see the module).

    Args:
        env: the batched TorchRL env.
        group_map: its group map, when ``env.group_map`` is not one (a ``SerialEnv``'s
            copies share theirs).

    Raises:
        ConfigError: more than one batch dimension, a group whose agents' spaces differ,
            or an observation layout the batch cannot read as arrays.
        ProtocolError: no ``group_map``.
    """

    seeding = SEEDING

    def __init__(self, env: Any, group_map: Any = None) -> None:
        if len(env.batch_size) != 1:
            raise ConfigError("from_torchrl", f"the env has batch_size={list(env.batch_size)}; "
                              "a vector env has one batch dimension",
                              fix="Give the env batch_size=[N].")
        self.torchrl_env = env
        self.num_envs = int(env.batch_size[0])
        self.device = env.device
        self._layout = TorchRLAgents(env, group_map)
        self.possible_agents = list(self._layout.agents)
        self.observation_spaces = dict(self._layout.observation_spaces)
        self.action_spaces = dict(self._layout.action_spaces)
        self.groups = {name: list(group.agents) for name, group in self._layout.groups.items()}
        for name, group in self._layout.groups.items():
            _check_group(name, group, self.observation_spaces, self.action_spaces)
        self.metadata: dict[str, Any] = {}
        self.render_mode: Optional[str] = None
        self._td: Any = None

    def reset(self, seed: Optional[int]) -> SourceBatch:
        """``set_seed(seed)`` (when given) and a reset of every copy."""
        if seed is not None:
            self.torchrl_env.set_seed(seed)
        self._td = self.torchrl_env.reset()
        return self._read(self._td, rewards=False)

    def reset_rows(self, rows: Sequence[int]) -> SourceBatch:
        """A reset of the copies ``rows`` through TorchRL's ``"_reset"`` entry."""
        import torch
        from tensordict import TensorDict

        mask = torch.zeros(self.num_envs, 1, dtype=torch.bool, device=self.device)
        mask[torch.as_tensor(np.asarray(rows), dtype=torch.long)] = True
        td = self._td.clone() if self._td is not None else TensorDict(
            {}, batch_size=(self.num_envs,), device=self.device)
        td.set("_reset", mask)
        self._td = self.torchrl_env.reset(td)
        return self._read(self._td, rewards=False)

    def step(self, actions: Mapping[str, Any]) -> SourceBatch:
        """One TorchRL ``step`` of every copy, the actions encoded group by group."""
        import torch
        from torchrl.envs.utils import step_mdp

        td = self._td
        done = td.get("done", None)
        if done is not None and bool(done.any()):  # TorchRL steps no copy that is done
            td = self.torchrl_env.reset(td.clone().set("_reset", done.reshape(
                self.num_envs, 1).clone()))
        for name, group in self._layout.groups.items():
            encoded = encode_rows(group.codecs[0][1], actions[name])  # torch stays on its device
            td.set(self._layout.action_keys[name], torch.as_tensor(encoded, device=self.device))
        out = self.torchrl_env.step(td)
        self._td = step_mdp(out)
        return self._read(out.get("next"), rewards=True)

    def render(self) -> Any:
        """TorchRL envs render through their own transforms; nothing here."""
        return None

    def close(self) -> None:
        """Close the TorchRL env."""
        if not getattr(self.torchrl_env, "is_closed", True):
            self.torchrl_env.close()

    # -- tensordicts -----------------------------------------------------------------

    def _read(self, td: Any, *, rewards: bool) -> SourceBatch:
        layout, num_envs = self._layout, self.num_envs
        root = {k: _flat(td.get(k), num_envs) for k in layout.root_done_keys}
        terminated, truncated = _split(root, (num_envs,))
        paid: dict[str, Any] = {}
        agent_t: dict[str, Any] = {}
        agent_u: dict[str, Any] = {}
        masks: dict[str, Any] = {}
        batch = SourceBatch(obs={}, terminated=terminated, truncated=truncated,
                            rewards=paid if rewards else None, agent_terminated=agent_t,
                            agent_truncated=agent_u, action_mask=masks)
        root_reward = _flat(td.get("reward"), num_envs) if rewards and layout.root_reward \
            else None
        for name, group in layout.groups.items():
            data = td.get(name)
            n = len(group.agents)
            batch.obs[name] = _observation(group, data)
            if rewards:
                paid[name] = (data.get("reward").reshape(num_envs, n) if group.has_reward
                              else _expand(root_reward, num_envs, n))
            if group.done_keys:
                own = {k: data.get(k).reshape(num_envs, n).cpu().numpy()
                       for k in group.done_keys}
                agent_t[name], agent_u[name] = _split(own, (num_envs, n))
            if "action_mask" in data.keys():
                masks[name] = data.get("action_mask")
        return batch


def _expand(root_reward: Any, num_envs: int, n: int) -> Any:
    """The root's reward, one per copy, paid to every agent of a group."""
    assert root_reward is not None
    return root_reward[:, None].expand(num_envs, n)


def _flat(value: Any, num_envs: int) -> Any:
    return value.reshape(num_envs, -1)[:, 0]


def _split(flags: Mapping[str, Any], shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(terminated, truncated) from whichever of terminated / truncated / done there are."""
    def read(key: str) -> np.ndarray:
        value = flags.get(key)
        if value is None:
            return np.zeros(shape, bool)
        return np.asarray(value.cpu().numpy() if hasattr(value, "cpu") else value,
                          bool).reshape(shape)

    truncated = read("truncated")
    terminated = read("terminated") | (read("done") & ~truncated)
    return terminated, truncated & ~terminated


def _observation(group: GroupLayout, data: Any) -> Any:
    codec = group.codecs[0][0]
    if group.observed == ["observation"]:
        return decode_rows(codec, data.get("observation"))
    if group.merged:
        raise ConfigError("from_torchrl", f"group {group.name!r} keeps a Composite 'observation' "
                          "beside other entries, which the batch does not read as arrays",
                          fix="Read the env one copy at a time (batch_size=[]) with "
                              "marlhub.make_vec, or move the entries into one observation.")
    return decode_rows(codec, {key: data.get(key) for key in group.observed})


def _check_group(name: str, group: GroupLayout, observation: Mapping[Any, Any],
                 action: Mapping[Any, Any]) -> None:
    first = group.agents[0]
    for agent in group.agents[1:]:
        if observation[agent] != observation[first] or action[agent] != action[first]:
            raise ConfigError(
                "from_torchrl", f"the agents of group {name!r} have different spaces "
                f"({first!r}: {observation[first]}, {action[first]}; {agent!r}: "
                f"{observation[agent]}, {action[agent]})",
                fix="Give the batched env groups of agents with equal spaces (the array face "
                    "holds one array per group), or read it one copy at a time.")
