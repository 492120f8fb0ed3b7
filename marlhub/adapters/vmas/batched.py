"""VMAS as a batched source: one ``vmas.make_env(num_envs=N)`` stepped in one call, per group.

:class:`VmasBatch` is what ``marlhub.make_vec("vmas/<scenario>", N)`` and
``from_torchrl(VmasEnv(..., num_envs=N))`` hold: ONE VMAS ``Environment`` of
``N`` copies (a :class:`~marlhub.adapters.batched.BatchedSource`). Agents with
the same spaces form a group (one group ``"agents"`` in most scenarios) and
travel as ``(num_envs, n_agents, ...)`` tensors; actions go to VMAS as one
``(num_envs, size)`` view per agent of the group's tensor. Values match
:class:`~marlhub.adapters.vmas.adapter.VmasHubEnv` copy for copy: float32
observations, VMAS's rewards and per-agent info metrics, its scenario ``done``
as terminated and ``max_steps`` as truncated.

* **Partial resets** are VMAS's own: ``reset_at(i)`` per copy, then one
  ``get_from_scenario`` for the observations and infos, and one ``reset()`` when
  every copy is reset, as TorchRL's ``VmasEnv`` does.
* **Seeds**: VMAS draws the whole batch from one generator: ``reset(seed=s)``
  reproduces the whole batch (every copy, given the same actions), and copy 0 of
  a batch of one is the hub env ``vmas/<scenario>`` seeded ``s``; copy ``i`` of a
  batch of ``N`` is not the hub env seeded ``s + i``.
* VMAS's random state is one per process; the batch keeps a stream of its own
  (:class:`~marlhub.adapters.vmas.random_stream.RandomStream`).

Example:
    >>> import vmas, torch
    >>> source = VmasBatch(vmas.make_env("balance", num_envs=4, max_steps=5))
    >>> source.groups
    {'agents': ['agent_0', 'agent_1', 'agent_2']}
    >>> batch = source.reset(seed=0)
    >>> tuple(batch.obs["agents"].shape)
    (4, 3, 16)
    >>> batch = source.step({"agents": torch.zeros(4, 3, 2)})
    >>> tuple(batch.rewards["agents"].shape), batch.terminated.tolist()
    ((4, 3), [False, False, False, False])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.batched import SourceBatch, group_agents
from marlhub.adapters.vmas.adapter import gymnasium_space
from marlhub.adapters.vmas.random_stream import RandomStream
from marlhub.core import AgentID
from marlhub.errors import ConfigError

__all__ = ["VmasBatch"]

SEEDING = ("VMAS draws every copy from one generator: reset(seed=s) reproduces the whole batch "
           "(the same actions give the same values in every copy), and a batch of one seeded s "
           "is the hub env seeded s; copy i of a batch of N is not the hub env seeded s + i.")


class VmasBatch:
    """A VMAS ``Environment`` of ``num_envs`` copies as a batched source (see the module).

    Args:
        env: a ``vmas.simulator.environment.Environment`` (``vmas.make_env`` without
            a ``wrapper``), any ``num_envs``.

    Raises:
        ConfigError: a space the hub does not map.
    """

    seeding = SEEDING

    def __init__(self, env: Any) -> None:
        self.vmas_env = env
        self.num_envs = int(env.num_envs)
        self.device = env.device
        self._stream = RandomStream(env)
        self.possible_agents: list[AgentID] = [agent.name for agent in env.agents]
        self.observation_spaces = {a: gymnasium_space(s) for a, s in
                                   zip(self.possible_agents, _per_agent(env.observation_space))}
        self.action_spaces = {a: gymnasium_space(s) for a, s in
                              zip(self.possible_agents, _per_agent(env.action_space))}
        self.groups = group_agents(self.possible_agents, self.observation_spaces.__getitem__,
                                   self.action_spaces.__getitem__)
        index = {agent: i for i, agent in enumerate(self.possible_agents)}
        self._rows = {name: [index[a] for a in agents] for name, agents in self.groups.items()}
        self._discrete = {name: isinstance(self.action_spaces[agents[0]], gym.spaces.Discrete)
                          for name, agents in self.groups.items()}
        self._action_dtype = {name: _torch_dtype(self.action_spaces[agents[0]])
                              for name, agents in self.groups.items()}
        self.metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}
        self.render_mode: Optional[str] = None

    @property
    def max_steps(self) -> Optional[int]:
        """VMAS's own time limit (``max_steps`` of ``make_env``), or None for none."""
        limit = self.vmas_env.max_steps
        return int(limit) if limit is not None else None

    def reset(self, seed: Optional[int]) -> SourceBatch:
        """VMAS's ``reset(seed=seed)`` of every copy."""
        with self._stream:
            obs, infos = self.vmas_env.reset(seed=seed, return_observations=True,
                                             return_info=True)
        return self._batch(obs, infos)

    def reset_rows(self, rows: Sequence[int]) -> SourceBatch:
        """VMAS's ``reset_at`` of each copy in ``rows``, then the observations of all; one
        ``reset()`` when ``rows`` are all the copies (as TorchRL's ``VmasEnv``: a ``reset_at``
        costs milliseconds)."""
        env = self.vmas_env
        if len(rows) == self.num_envs:
            return self.reset(None)
        with self._stream:
            for row in rows:
                env.reset_at(int(row), return_observations=False)
            obs, infos = env.get_from_scenario(get_observations=True, get_infos=True,
                                               get_rewards=False, get_dones=False)
        return self._batch(obs, infos)

    def step(self, actions: Mapping[str, Any]) -> SourceBatch:
        """One VMAS ``step`` of every copy; ``actions`` per group, ``(num_envs, n, ...)``."""
        import torch

        per_agent: list[Any] = [None] * len(self.possible_agents)
        for name, rows in self._rows.items():
            tensor = torch.as_tensor(actions[name], dtype=self._action_dtype[name],
                                     device=self.device)
            for j, row in enumerate(rows):
                per_agent[row] = tensor[:, j:j + 1] if self._discrete[name] else tensor[:, j]
        with self._stream:
            result = self.vmas_env.step(per_agent)
        obs, rewards, infos = result[0], result[1], result[-1]
        terminated, truncated = self._done(result)
        batch = self._batch(obs, infos)
        batch.rewards = {name: torch.stack([_listed(rewards, self.possible_agents)[r]
                                            for r in rows], 1)
                         for name, rows in self._rows.items()}
        batch.terminated, batch.truncated = terminated, truncated
        return batch

    def render(self, index: int = 0) -> Any:
        """VMAS's ``render(mode="rgb_array")`` of copy ``index`` (needs pyglet and a display)."""
        return self.vmas_env.render(mode="rgb_array", env_index=index)

    def close(self) -> None:
        """Close VMAS's viewer, if it opened one."""
        viewer = getattr(self.vmas_env, "viewer", None)
        if viewer is not None:
            viewer.close()
            self.vmas_env.viewer = None

    # -- VMAS values ---------------------------------------------------------------

    def _done(self, result: Any) -> tuple[Any, Any]:
        """(terminated, truncated) per copy, as :class:`VmasHubEnv` tells them apart."""
        env = self.vmas_env
        if env.terminated_truncated:
            terminated, truncated = result[2], result[3]
            return terminated, truncated & ~terminated
        done = result[2]
        limit = env.max_steps
        if limit is None:
            return done, done & False
        truncated = done & (env.steps >= limit)
        terminated = done & ~truncated
        if bool(truncated.any()):
            terminated = terminated | (truncated & env.scenario.done())
        return terminated, truncated & ~terminated

    def _batch(self, obs: Any, infos: Any) -> SourceBatch:
        import torch

        agents = self.possible_agents
        obs, infos = _listed(obs, agents), _listed(infos, agents)
        flags = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        return SourceBatch(
            obs={name: _stack([obs[r] for r in rows]) for name, rows in self._rows.items()},
            terminated=flags, truncated=flags,
            infos={name: _stack_infos([infos[r] for r in rows])
                   for name, rows in self._rows.items()})


def _per_agent(space: Any) -> list[Any]:
    """VMAS's joint space (a Tuple, or a Dict with ``dict_spaces=True``) as a list."""
    return list(space.spaces.values()) if hasattr(space.spaces, "values") else list(space.spaces)


def _listed(values: Any, agents: list[AgentID]) -> list[Any]:
    """VMAS's per-agent values (a list, or a dict with ``dict_spaces=True``) in agent order."""
    return [values[a] for a in agents] if isinstance(values, Mapping) else list(values)


def _stack(values: list[Any]) -> Any:
    """Per-agent ``(num_envs, ...)`` tensors as one ``(num_envs, n, ...)`` (dicts key by key)."""
    import torch

    if isinstance(values[0], Mapping):
        return {key: _stack([v[key] for v in values]) for key in values[0]}
    return torch.stack(values, 1)


def _stack_infos(infos: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The metrics every agent of the group reports, stacked along the agent dimension."""
    keys = [k for k in infos[0] if all(k in info and info[k].shape == infos[0][k].shape
                                       for info in infos)]
    return {key: _stack([info[key] for info in infos]) for key in keys}


def _torch_dtype(space: gym.Space) -> Any:
    import torch

    if isinstance(space, gym.spaces.Box):
        return torch.float32
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        return torch.int64
    raise ConfigError("vmas", f"VMAS gave the action space {space}, which the batch does not map",
                      fix="Use Box, Discrete or MultiDiscrete actions.")
