"""Every array face against a plain replay of ``marlhub.make(id)`` (``tests/vector/oracle.py``).

The faces are the sync env's (built from the copies' dicts in this process), the
workers' (``array_face=True``, written in shared memory), the one the async env
builds from the workers' dicts, ``recv_arrays``/``send_arrays`` with
``batch_size < num_envs`` on both sources, and ``AgentSlotVectorEnv``. None of them
is compared with another: each row is compared with what the plain envs did.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.vector import AgentSlotVectorEnv
from tests.vector.envs import no_worker_left_behind  # noqa: F401 (autouse)
from tests.vector.oracle import PlainReplay

TIMEOUT = 60.0
N = 3
MODES = ["next_step", "same_step", "disabled"]
#: agents that leave early and are paid while idle; turns; OpenSpiel's Dict obs and masks;
#: simultaneous moves
IDS = ["traffic", "tic_tac_toe", "openspiel/kuhn_poker", "rock_paper_scissors"]


def _blank(envs: Any) -> dict[str, np.ndarray]:
    """One zero action per slot of each group (for the slots nobody acts in)."""
    blank = {}
    for name, members in envs.groups.items():
        space = envs.get_action_space(members[0])
        blank[name] = np.zeros((len(members), *(space.shape or ())), space.dtype)
    return blank


def _make(env_id: str, mode: str, face: str, **kwargs: Any) -> Any:
    if face == "sync":
        return marlhub.make_vec(env_id, N, autoreset_mode=mode, vectorization_mode="sync",
                                **kwargs)
    return marlhub.make_vec(env_id, N, autoreset_mode=mode, vectorization_mode="async",
                            num_workers=2, timeout=TIMEOUT, array_face=face == "workers",
                            **kwargs)


def _ended(replay: PlainReplay) -> list[int]:
    return [i for i, ended in enumerate(replay.ended) if ended]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("face", ["sync", "workers", "async dicts"])
@pytest.mark.parametrize("env_id", IDS)
def test_step_arrays_rows_are_the_plain_envs(env_id: str, face: str, mode: str) -> None:
    with _make(env_id, mode, face) as envs:
        replay = PlainReplay(env_id, N, mode, envs.groups)
        blank = _blank(envs)
        batch = envs.reset_arrays(seed=0)
        replay.reset()
        replay.assert_rows(batch, range(N), "reset")
        for t in range(40):
            ended = _ended(replay)
            if mode == "disabled" and ended:  # restart the ended copies, the others go on
                mask = np.zeros(N, bool)
                mask[ended] = True
                batch = envs.reset_arrays(options={"reset_mask": mask})
                replay.masked_reset(ended)
                replay.assert_rows(batch, range(N), f"reset_mask before step {t}")
            actions = replay.choose(range(N))
            batch = envs.step_arrays(replay.action_arrays(range(N), actions, blank))
            replay.step(range(N), actions)
            replay.assert_rows(batch, range(N), f"step {t}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("face", ["sync", "workers"])
@pytest.mark.parametrize("env_id", ["traffic", "openspiel/kuhn_poker"])
def test_recv_arrays_rows_are_the_plain_envs(env_id: str, face: str, mode: str) -> None:
    with _make(env_id, mode, face, batch_size=2) as envs:
        replay = PlainReplay(env_id, N, mode, envs.groups)
        blank = _blank(envs)
        envs.async_reset_arrays(seed=0)
        replay.reset()
        for t in range(60):
            batch, copy_ids = envs.recv_arrays()
            ids = copy_ids.tolist()
            replay.assert_rows(batch, ids, f"recv {t}")
            parked = [i for i in ids if replay.ended[i]] if mode == "disabled" else []
            if parked:  # disabled: the copies that ended stay out until reset
                mask = np.zeros(N, bool)
                mask[parked] = True
                envs.async_reset_arrays(options={"reset_mask": mask})
                replay.reset(parked, seeded=False)
            going = [i for i in ids if i not in parked]
            if going:
                actions = replay.choose(going)
                envs.send_arrays(replay.action_arrays(going, actions, blank),
                                 np.asarray(going))
                replay.step(going, actions)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("env_id", ["tic_tac_toe", "openspiel/kuhn_poker",
                                    "rock_paper_scissors"])
def test_agent_slots_are_the_plain_envs(env_id: str, mode: str) -> None:
    vector_env = marlhub.make_vec(env_id, N, autoreset_mode=mode, vectorization_mode="sync")
    with AgentSlotVectorEnv(vector_env) as envs:
        (name, agents), = vector_env.groups.items()
        replay = PlainReplay(env_id, N, mode, vector_env.groups)
        blank = _blank(vector_env)

        def as_batch(obs: Any, rewards: Any, terminated: Any, truncated: Any,
                     infos: Any) -> Any:
            return SimpleNamespace(
                obs={name: obs}, rewards={name: rewards}, terminated={name: terminated},
                truncated={name: truncated}, acting={name: infos["acting"]},
                alive={name: infos["alive"]}, episode_terminated=None,
                action_mask={name: infos["action_mask"]} if "action_mask" in infos else {})

        obs, infos = envs.reset(seed=0)
        replay.reset()
        replay.assert_rows(as_batch(obs, None, None, None, infos), range(N), "reset",
                           flags=False)
        for t in range(30):
            ended = _ended(replay)
            if mode == "disabled" and ended:
                mask = np.zeros(N, bool)
                mask[ended] = True
                obs, infos = envs.reset(options={"reset_mask": mask})
                replay.masked_reset(ended)
                replay.assert_rows(as_batch(obs, None, None, None, infos), range(N),
                                   f"reset_mask before step {t}", flags=False)
            actions = replay.choose(range(N))
            result = envs.step(replay.action_arrays(range(N), actions, blank)[name])
            replay.step(range(N), actions)
            replay.assert_rows(as_batch(*result), range(N), f"step {t}")


@pytest.mark.parametrize("face", ["sync", "workers", "async dicts"])
def test_vector_rewards_reach_the_rows_unchanged(face: str) -> None:
    """MOMAland's catch pays each agent an array of two objectives: every face keeps it."""
    pytest.importorskip("momaland")
    env_id = "momaland/catch-v0"
    with _make(env_id, "same_step", face) as envs:
        (name, agents), = envs.groups.items()
        assert envs.reward_spaces[agents[0]].shape == (2,)
        replay = PlainReplay(env_id, N, "same_step", envs.groups)
        blank = _blank(envs)
        batch = envs.reset_arrays(seed=0)
        replay.reset()
        assert batch.rewards[name].shape == (N, len(agents), 2)
        paid = np.zeros(2)
        for t in range(30):
            actions = replay.choose(range(N))
            batch = envs.step_arrays(replay.action_arrays(range(N), actions, blank))
            replay.step(range(N), actions)
            replay.assert_rows(batch, range(N), f"step {t}")
            paid += np.abs(batch.rewards[name]).sum(axis=(0, 1))
        assert (paid > 0).all()  # both objectives were paid, and compared, along the way
