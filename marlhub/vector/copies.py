"""One copy of a vector env: its env and what it returns when its episode ends.

:class:`EnvCopy` applies the autoreset mode (:mod:`marlhub.vector.autoreset`), in this
process and inside each worker: ``next_step`` resets the copy (no seed) in the next call
and returns the reset with ``{}`` rewards and ``__all__`` False; ``same_step`` resets it
in the ending step, whose obs and infos go to ``infos["__common__"]``; ``disabled``
returns ``{}`` dicts and the final flags until a reset. :class:`RemoteCopy` is the
parent's view of a copy that lives in a worker.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> copy = EnvCopy(RockPaperScissors({"num_moves": 1}), "next_step")
    >>> obs, infos = copy.reset(seed=0)
    >>> copy.step({"player1": 0, "player2": 1})[2]
    {'__all__': True}
    >>> obs, rewards, terminateds, truncateds, infos = copy.step({})  # reset in this call
    >>> sorted(obs), rewards, terminateds
    (['player1', 'player2'], {}, {'__all__': False})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import gymnasium as gym

from marlhub.core import ALL, AgentID, missing_protocol_members
from marlhub.episode.status import flag
from marlhub.errors import ProtocolError, VectorEnvError
from marlhub.rewards import reward_space_of
from marlhub.spaces import masks_are_binding
from marlhub.vector.autoreset import (
    ENDED,
    ENDED_AND_RESET,
    FINAL_INFO,
    FINAL_OBS,
    IDLE,
    NEXT_STEP,
    RESTARTED,
    SAME_STEP,
    STEPPED,
    same_step_infos,
)

__all__ = ["FINAL_INFO", "FINAL_OBS", "EnvCopy", "RemoteCopy", "build_copy", "check_env_fns",
           "describe_env", "describe_first", "same_step_infos"]


class EnvCopy:
    """A hub ``env`` and its autoreset state: the one place that applies the rule.

    Attributes:
        ended: the episode ended and the copy was not reset yet.
        outcome: what the last :meth:`step` did (:data:`~marlhub.vector.autoreset.STEPPED`,
            ``ENDED``, ...), which the book and the faces read.
    """

    __slots__ = ("env", "mode", "ended", "outcome", "final_flags")

    def __init__(self, env: Any, autoreset_mode: str) -> None:
        self.env = env
        self.mode = autoreset_mode
        self.ended = False
        self.outcome = STEPPED
        self.final_flags = (False, False)

    def reset(self, seed: Optional[int] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[Any, Any]:
        """Reset the env; return ``(obs, infos)`` as it does."""
        obs, infos = self.env.reset(seed=seed, options=options)
        self.ended = False
        return obs, infos

    def step(self, action_dict: Any) -> tuple[Any, Any, Any, Any, Any]:
        """Step the env, or reset it or stay ended as the mode says; return the 5-tuple."""
        if self.ended:
            if self.mode == NEXT_STEP:
                obs, infos = self.env.reset()
                self.ended, self.outcome = False, RESTARTED
                return obs, {}, {ALL: False}, {ALL: False}, infos
            self.outcome = IDLE
            terminated, truncated = self.final_flags
            return {}, {}, {ALL: terminated}, {ALL: truncated}, {}
        obs, rewards, terminateds, truncateds, infos = self.env.step(action_dict)
        all_t, all_u = terminateds.get(ALL), truncateds.get(ALL)
        if type(all_t) is not bool or type(all_u) is not bool:  # else decided here
            all_t, all_u = flag(terminateds, ALL), flag(truncateds, ALL)
        if not (all_t or all_u):
            self.outcome = STEPPED
            return obs, rewards, terminateds, truncateds, infos
        if self.mode == SAME_STEP:
            self.outcome = ENDED_AND_RESET
            reset_obs, reset_infos = self.env.reset()
            return reset_obs, rewards, terminateds, truncateds, same_step_infos(
                obs, infos, reset_infos)
        self.ended, self.outcome = True, ENDED
        self.final_flags = (all_t, all_u)
        return obs, rewards, terminateds, truncateds, infos

    def __repr__(self) -> str:
        state = "ended" if self.ended else "running"
        return f"EnvCopy({self.env!r}, {self.mode}, {state})"


def describe_env(env: Any) -> dict[str, Any]:
    """What the parent needs of a copy: agents, spaces, metadata, render mode, and whether
    its masks are rules (:func:`~marlhub.spaces.masks_are_binding`)."""
    agents: list[AgentID] = list(env.possible_agents)
    obs_of = getattr(env, "get_observation_space", None)
    act_of = getattr(env, "get_action_space", None)
    return {
        "possible_agents": agents,
        "observation_spaces": {a: obs_of(a) if callable(obs_of) else env.observation_spaces[a]
                               for a in agents},
        "action_spaces": {a: act_of(a) if callable(act_of) else env.action_spaces[a]
                          for a in agents},
        "metadata": dict(getattr(env, "metadata", None) or {}),
        "render_mode": getattr(env, "render_mode", None),
        "masks_binding": masks_are_binding(env),
        "reward_spaces": {a: reward_space_of(env, a) for a in agents},  # None: scalar
    }


def check_env_fns(env_fns: Any, cls_name: str) -> list[Callable[[], Any]]:
    """Return ``env_fns`` as a list of callables, or raise :class:`VectorEnvError`."""
    fns = list(env_fns) if not callable(env_fns) else None
    if not fns or not all(callable(fn) for fn in fns):
        raise VectorEnvError(
            cls_name, f"env_fns must be a non-empty list of functions that make an env, got "
            f"{env_fns!r:.100}",
            "Pass e.g. [lambda: marlhub.make('tic_tac_toe')] * 4, or use marlhub.make_vec(id, 4).")
    return fns


def build_copy(env_fn: Callable[[], Any], index: int) -> Any:
    """Call ``env_fn`` and check that it made a hub env; raise ProtocolError naming the copy."""
    env = env_fn()
    missing = missing_protocol_members(env)
    if missing:
        raise ProtocolError(env, missing, expected=f"env_fns[{index}] to return a MultiAgentEnv",
                            fix="Make it return a hub env, e.g. marlhub.convert(env, to='marlhub').")
    return env


def describe_first(env_fns: Any) -> dict[str, Any]:
    """The first copy's description, from a copy made here once (the async env's shared layouts)."""
    probe = build_copy(env_fns[0], 0)
    try:
        return describe_env(probe)
    finally:
        probe.close()


class RemoteCopy:
    """Copy ``index`` in ``worker``, as ``AsyncVectorMultiAgentEnv.envs`` shows it: its
    agents and spaces (RLlib's runner reads ``envs[i].unwrapped.get_observation_space``)."""

    def __init__(self, index: int, worker: int, description: dict[str, Any]) -> None:
        self.index = index
        self.worker = worker
        self.possible_agents: list[AgentID] = description["possible_agents"]
        self.observation_spaces: dict[AgentID, gym.Space] = description["observation_spaces"]
        self.action_spaces: dict[AgentID, gym.Space] = description["action_spaces"]
        self.metadata: dict[str, Any] = description["metadata"]
        self.render_mode: Optional[str] = description["render_mode"]
        self.masks_binding: bool = description["masks_binding"]

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """Return the observation space of ``agent_id`` in this copy."""
        return self.observation_spaces[agent_id]

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """Return the action space of ``agent_id`` in this copy."""
        return self.action_spaces[agent_id]

    @property
    def unwrapped(self) -> "RemoteCopy":
        """The copy itself (RLlib reads ``envs[i].unwrapped``)."""
        return self

    def __repr__(self) -> str:
        return f"<RemoteCopy {self.index} in worker {self.worker} agents={self.possible_agents!r}>"
