"""Vector envs: many copies of a hub env in one call, in this process or in worker processes.

* :class:`SyncVectorMultiAgentEnv` steps the copies one after another here;
  :class:`AsyncVectorMultiAgentEnv` in worker processes, observations through
  shared memory. Both are call-compatible with RLlib's ``VectorMultiAgentEnv``
  (and subclasses of it once Ray has loaded it; ``import marlhub`` loads no Ray,
  see :mod:`marlhub.vector.base`): lists of per-copy dicts in and out,
  copy ``i`` seeded ``seed + i``, identical copy by copy to separately made envs.
* :class:`BatchedVectorEnv`: ONE natively batched simulator (VMAS, a batched
  TorchRL env) as a vector env, its arrays read per group with no per-copy
  Python (``reset_arrays`` / ``step_arrays``), lists of dicts built from them.
* :data:`AUTORESET_MODES`: what a copy does when its episode ends
  (:mod:`marlhub.vector.copies`).
* :class:`AgentSlotVectorEnv`: a ``gymnasium.vector.VectorEnv`` face over fixed
  agent slots, arrays of shape ``(num_envs, num_agents, ...)`` with ``acting`` and
  ``alive`` masks, for array learners.
* ``VectorEnvRunner`` (:mod:`marlhub.vector.rllib`, imports Ray): RLlib's
  multi-agent env runner sampling from an async vector env.

``marlhub.make_vec(env_id, num_envs)`` builds one from a registry id.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> with SyncVectorMultiAgentEnv([TicTacToe] * 3) as envs:
    ...     obs, infos = envs.reset(seed=0)  # copy i seeded 0 + i: who starts varies
    ...     [list(o) for o in obs]
    [['player2'], ['player1'], ['player2']]
"""

from __future__ import annotations

from typing import Any

from marlhub.vector.base import AUTORESET_MODES, VectorMultiAgentEnv
from marlhub.vector.faces.agent_slots import AgentSlotVectorEnv
from marlhub.vector.sources.batched import BatchedVectorEnv
from marlhub.vector.sources.in_process import SyncVectorMultiAgentEnv
from marlhub.vector.sources.workers import AsyncVectorMultiAgentEnv, RemoteCopy

__all__ = [
    "AUTORESET_MODES",
    "AgentSlotVectorEnv",
    "AsyncVectorMultiAgentEnv",
    "BatchedVectorEnv",
    "RemoteCopy",
    "SyncVectorMultiAgentEnv",
    "VectorEnvRunner",
    "VectorMultiAgentEnv",
]


def __getattr__(name: str) -> Any:
    """``VectorEnvRunner`` is imported on first use: its module imports Ray."""
    if name == "VectorEnvRunner":
        from marlhub.vector.rllib import VectorEnvRunner

        return VectorEnvRunner
    raise AttributeError(f"module 'marlhub.vector' has no attribute {name!r}")
