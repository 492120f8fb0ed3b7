"""VMAS -> hub: :class:`VmasHubEnv`, one VMAS scenario (``num_envs=1``) as a hub env.

VMAS (``vmas.make_env``) simulates a batch of copies of a scenario in torch;
the hub env holds one copy and talks to VMAS directly (``reset(seed=)``,
``step(list of actions)``), without TorchRL's tensordicts in between, so it runs
at VMAS's own speed. TorchRL's ``VmasEnv`` with one copy comes here too,
through :func:`marlhub.adapters.torchrl.from_torchrl`.

Example:
    >>> import vmas
    >>> env = VmasHubEnv(vmas.make_env("balance", num_envs=1, max_steps=3))
    >>> env.possible_agents, env.action_spaces["agent_0"]
    (['agent_0', 'agent_1', 'agent_2'], Box(-1.0, 1.0, (2,), float32))
    >>> obs, infos = env.reset(seed=0)
    >>> obs["agent_0"].shape, sorted(infos["agent_0"])
    ((16,), ['ground_rew', 'pos_rew'])
    >>> still = {a: np.zeros(2, np.float32) for a in obs}
    >>> for _ in range(3):
    ...     obs, rewards, terminateds, truncateds, infos = env.step(still)
    >>> terminateds["__all__"], truncateds["__all__"], env.agents   # max_steps is a time limit
    (False, True, [])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.adapters.vmas.random_stream import RandomStream
from marlhub.core import (
    ALL,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import ActionChecker, check_keys
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import ConfigError

__all__ = ["VmasHubEnv", "gymnasium_space"]


def gymnasium_space(space: Any) -> gym.Space:
    """Return VMAS's (``gym``) space as the gymnasium space of the same kind.

    Example:
        >>> import gym
        >>> gymnasium_space(gym.spaces.Discrete(9))
        Discrete(9)
    """
    kind = type(space).__name__
    if kind == "Box":
        return gym.spaces.Box(np.asarray(space.low), np.asarray(space.high), space.shape,
                              np.dtype(space.dtype))
    if kind == "Discrete":
        return gym.spaces.Discrete(int(space.n))
    if kind == "MultiDiscrete":
        return gym.spaces.MultiDiscrete(np.asarray(space.nvec))
    if kind == "Dict":
        return gym.spaces.Dict({k: gymnasium_space(s) for k, s in space.spaces.items()})
    raise ConfigError("from_vmas", f"VMAS gave a {kind} space ({space!r}), which the hub does "
                      "not map", fix="Use a scenario with Box, Discrete, MultiDiscrete or Dict "
                      "spaces.")


class VmasHubEnv(MultiAgentEnv):
    """A VMAS ``Environment`` of one copy as a hub env; every agent acts in every step.

    * **Agents**: VMAS's agent names, in its order.
    * **Spaces**: VMAS's own, as gymnasium spaces (``Box`` observations;
      ``Box`` actions, or ``Discrete`` / ``MultiDiscrete`` with
      ``continuous_actions=False``).
    * **Values**: observations as float32 arrays, rewards as floats, infos as
      VMAS's per-agent metrics (arrays without the copy dimension).
    * **Done**: VMAS's scenario ``done`` ends the episode as terminated; its
      ``max_steps`` as truncated (VMAS and TorchRL's ``VmasEnv`` call both "done"
      or "terminated"; ``vmas.make_env(terminated_truncated=True)`` tells them
      apart, as this env does in every case). Every agent ends together.
    * **Seeds**: ``reset(seed=s)`` is VMAS's ``reset(seed=s)``, which keeps VMAS's
      random state apart from the process's.

    Args:
        env: a ``vmas.simulator.environment.Environment`` with ``num_envs=1``.

    Raises:
        ConfigError: ``num_envs`` is not 1 (batch hub envs with ``marlhub.make_vec``).
    """

    def __init__(self, env: Any) -> None:
        super().__init__()
        if int(env.num_envs) != 1:
            raise ConfigError(
                "from_vmas", f"the VMAS env simulates num_envs={env.num_envs} copies, and a hub "
                "env is one", fix="Make it with vmas.make_env(..., num_envs=1) (the vmas/ "
                "registry family does) and batch hub envs with marlhub.make_vec.")
        self.vmas_env = env
        self._stream = RandomStream(env)  # VMAS's random state is one per process
        self.possible_agents = [agent.name for agent in env.agents]
        self.agents = []
        self.observation_spaces = {a: gymnasium_space(s) for a, s in
                                   zip(self.possible_agents, _per_agent(env.observation_space))}
        self.action_spaces = {a: gymnasium_space(s) for a, s in
                              zip(self.possible_agents, _per_agent(env.action_space))}
        self._encoders = [_encoder(self.action_spaces[a]) for a in self.possible_agents]
        self._checker = ActionChecker(self.action_spaces.__getitem__)
        self._cannot_step: Optional[str] = NOT_RESET
        self._name = type(self).__name__

    @property
    def max_steps(self) -> Optional[int]:
        """VMAS's own time limit (``max_steps`` of ``make_env``), or None for none."""
        limit = self.vmas_env.max_steps
        return int(limit) if limit is not None else None

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the scenario with VMAS's ``reset(seed=seed)``; every agent observes."""
        super().reset(seed=seed)
        with self._stream:
            obs, infos = self.vmas_env.reset(seed=seed, return_observations=True,
                                             return_info=True)
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return self._observations(obs), self._infos(infos)

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply every agent's action in one VMAS step.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: a missing or extra agent, or an action outside its space;
                nothing was applied.
        """
        require_running(self._name, self._cannot_step)
        agents = self.possible_agents
        if type(action_dict) is not dict or len(action_dict) != len(agents) or any(
                a not in action_dict for a in agents):
            check_keys(self._name, action_dict, actors=agents, possible_agents=agents)
        actions = [encode(self._checker.check(a, action_dict[a]))
                   for a, encode in zip(agents, self._encoders)]
        with self._stream:
            result = self.vmas_env.step(actions)
        obs, rewards, infos = result[0], result[1], result[-1]
        terminated, truncated = self._done(result)
        paid = {a: float(r[0]) for a, r in zip(agents, _listed(rewards, agents))}
        over = terminated or truncated
        terminateds = dict.fromkeys(agents, terminated)
        truncateds = dict.fromkeys(agents, truncated and not terminated)
        terminateds[ALL], truncateds[ALL] = terminated, truncated and not terminated
        if over:
            self.agents = []
            self._cannot_step = EPISODE_OVER
        return self._observations(obs), paid, terminateds, truncateds, self._infos(infos)

    def render(self) -> Any:
        """VMAS's ``render(mode="rgb_array")`` of the copy (needs pyglet and a display)."""
        return self.vmas_env.render(mode="rgb_array")

    def close(self) -> None:
        """Close VMAS's viewer, if it opened one."""
        viewer = getattr(self.vmas_env, "viewer", None)
        if viewer is not None:
            viewer.close()
            self.vmas_env.viewer = None

    # -- VMAS values ---------------------------------------------------------------

    def _done(self, result: Any) -> tuple[bool, bool]:
        """(terminated, truncated) of the last step, whether VMAS split them or not."""
        env = self.vmas_env
        if env.terminated_truncated:
            return bool(result[2][0]), bool(result[3][0])
        if not bool(result[2][0]):
            return False, False
        limit = env.max_steps
        truncated = limit is not None and bool(env.steps[0] >= limit)
        terminated = not truncated or bool(env.scenario.done()[0])
        return terminated, truncated

    def _observations(self, obs: Any) -> dict[AgentID, Any]:
        return {a: _value(o) for a, o in zip(self.possible_agents,
                                             _listed(obs, self.possible_agents))}

    def _infos(self, infos: Any) -> dict[AgentID, Any]:
        return {a: {k: v[0].numpy() for k, v in info.items()}
                for a, info in zip(self.possible_agents, _listed(infos, self.possible_agents))}


def _per_agent(space: Any) -> list[Any]:
    """VMAS's joint space (a Tuple, or a Dict with ``dict_spaces=True``) as a list."""
    return list(space.spaces.values()) if hasattr(space.spaces, "values") else list(space.spaces)


def _listed(values: Any, agents: list[AgentID]) -> list[Any]:
    """VMAS's per-agent values (a list, or a dict with ``dict_spaces=True``) in agent order."""
    return [values[a] for a in agents] if isinstance(values, Mapping) else values


def _value(tensor: Any) -> Any:
    """One copy's value out of VMAS's batched tensor (a dict of them for Dict observations)."""
    if isinstance(tensor, Mapping):
        return {k: _value(v) for k, v in tensor.items()}
    return tensor[0].numpy()


def _encoder(space: gym.Space) -> Any:
    """hub action -> the ``(1, size)`` tensor VMAS takes for it."""
    import torch

    if isinstance(space, gym.spaces.Discrete):
        return lambda action: torch.tensor([[int(action)]])
    dtype = torch.float32 if isinstance(space, gym.spaces.Box) else torch.int64
    return lambda action: torch.as_tensor(np.asarray(action)).to(dtype).reshape(1, -1)
