"""Vector envs: many copies of a hub env in one call, in this process, in workers or batched.

Sources (:mod:`marlhub.vector.sources`): :class:`SyncVectorMultiAgentEnv` steps the copies
here, :class:`AsyncVectorMultiAgentEnv` in worker processes, :class:`BatchedVectorEnv`
is one natively batched simulator. Each has every face of :class:`VectorMultiAgentEnv`
(lists of per-copy dicts, call-compatible with RLlib's; arrays per group; ``recv``/``send``)
and :class:`AgentSlotVectorEnv` over its arrays. ``marlhub.make_vec(env_id, num_envs)``
builds one from a registry id; :data:`AUTORESET_MODES` says what an ended copy does.

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

__all__ = ["AUTORESET_MODES", "AgentSlotVectorEnv", "AsyncVectorMultiAgentEnv", "BatchedVectorEnv",
           "RemoteCopy", "SyncVectorMultiAgentEnv", "VectorMultiAgentEnv"]


def __getattr__(name: str) -> Any:
    if name == "VectorEnvRunner":  # a learner bridge now, which this layer does not import
        raise AttributeError("marlhub.vector.VectorEnvRunner moved: import it from "
                             "marlhub.learners.rllib_runner (marlhub.vector.rllib still works)")
    raise AttributeError(f"module 'marlhub.vector' has no attribute {name!r}")
