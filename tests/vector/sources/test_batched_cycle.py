"""recv/send on a natively batched simulator, both faces: its copies step together.

Each received row is compared with a second batch of the same id and seed, stepped
with ``step`` / ``step_arrays`` by the test with the actions the cycle was sent,
its simulator called in the same order (the cycle steps once every copy is sent).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.errors import ActionError, VectorEnvError
from marlhub.vector import BatchedVectorEnv

vmas = pytest.importorskip("vmas")

BALANCE = {"max_steps": 4, "continuous_actions": False}
N = 4


def _balance(mode: str, batch_size: Any = None) -> BatchedVectorEnv:
    envs = marlhub.make_vec("vmas/balance", N, BALANCE, autoreset_mode=mode,
                            batch_size=batch_size)
    assert isinstance(envs, BatchedVectorEnv)
    return envs


def _rows_equal(got: Any, k: int, want: Any, i: int, where: str) -> None:
    """Field by field, row ``k`` of the received batch is row ``i`` of the reference batch."""
    for field in ("obs", "rewards", "terminated", "truncated", "acting", "alive",
                  "action_mask"):
        for name, value in getattr(want, field).items():
            np.testing.assert_array_equal(np.asarray(getattr(got, field)[name])[k],
                                          np.asarray(value)[i], err_msg=f"{where}: {field}")
    for field in ("episode_terminated", "episode_truncated"):
        assert bool(getattr(got, field)[k]) == bool(getattr(want, field)[i]), where
    if want.final_obs is not None and (want.episode_terminated[i] or want.episode_truncated[i]):
        np.testing.assert_array_equal(got.final_obs["agents"][k], want.final_obs["agents"][i],
                                      err_msg=f"{where}: final_obs")


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("batch_size", [1, 3, N])
def test_recv_arrays_rows_are_the_synchronous_steps(mode: str, batch_size: int) -> None:
    rng = np.random.default_rng(batch_size)
    with _balance(mode, batch_size) as envs, _balance(mode) as reference:
        envs.async_reset_arrays(seed=0)
        latest = {i: (reference.reset_arrays(seed=0), i) for i in range(N)}
        sent: dict[int, np.ndarray] = {}
        parked: set[int] = set()
        for t in range(40):
            batch, copy_ids = envs.recv_arrays()
            ids = copy_ids.tolist()
            assert len(ids) == min(batch_size, len(ids)) and ids == sorted(ids)
            for k, i in enumerate(ids):
                want, row = latest[i]
                _rows_equal(batch, k, want, row, f"recv {t}, copy {i}")
            ended = [i for k, i in enumerate(ids) if mode == "disabled"
                     and (batch.episode_terminated[k] or batch.episode_truncated[k])]
            if ended:  # parked: restart them now, on both
                mask = np.isin(np.arange(N), ended)
                envs.async_reset_arrays(options={"reset_mask": mask})
                restarted = reference.reset_arrays(options={"reset_mask": mask})
                latest.update({i: (restarted, i) for i in ended})
            going = [i for i in ids if i not in ended]
            if not going:
                continue
            actions = rng.integers(0, 3, (len(going), 3))
            envs.send_arrays({"agents": actions}, np.asarray(going))
            sent.update(zip(going, actions))
            if len(sent) + len(parked) == N:  # the cycle stepped: so does the reference
                full = np.zeros((N, 3), np.int64)
                for i, row in sent.items():
                    full[i] = row
                stepped = reference.step_arrays({"agents": full})
                latest.update({i: (stepped, i) for i in sent})
                sent = {}


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_recv_dicts_are_the_synchronous_steps(mode: str) -> None:
    rng = np.random.default_rng(0)
    with _balance(mode, 3) as envs, _balance(mode) as reference:
        envs.async_reset(seed=0)
        obs, infos = reference.reset(seed=0)
        latest = {i: (obs[i], {}, {"__all__": False}, {"__all__": False}, infos[i])
                  for i in range(N)}
        sent: dict[int, dict[Any, Any]] = {}
        for t in range(30):
            got = envs.recv()
            for k, i in enumerate(got.copy_ids.tolist()):
                for column, name in enumerate(("obs", "rewards", "terminateds", "truncateds")):
                    assert got[column][k].keys() == latest[i][column].keys(), (t, i, name)
                    for agent, value in latest[i][column].items():
                        np.testing.assert_array_equal(got[column][k][agent], value,
                                                      err_msg=f"recv {t}, copy {i}, {name}")
            ids = got.copy_ids.tolist()
            if mode == "disabled":
                ended = [i for k, i in enumerate(ids) if got.terminateds[k]["__all__"]
                         or got.truncateds[k]["__all__"]]
                if ended:
                    mask = np.isin(np.arange(N), ended)
                    envs.async_reset(options={"reset_mask": mask})
                    obs, infos = reference.reset(options={"reset_mask": mask})
                    latest.update({i: (obs[i], {}, {"__all__": False}, {"__all__": False},
                                       infos[i]) for i in ended})
                    ids = [i for i in ids if i not in ended]
            actions = [{a: int(rng.integers(0, 3)) for a in envs.actors[i]} for i in ids]
            if ids:
                envs.send(actions, ids)
            sent.update(zip(ids, actions))
            if len(sent) == N:
                results = reference.step([sent[i] for i in range(N)])
                latest.update({i: tuple(column[i] for column in results) for i in range(N)})
                sent = {}


def test_send_after_a_synchronous_reset_as_on_every_source() -> None:
    with _balance("next_step") as envs:
        envs.reset_arrays(seed=0)
        envs.send_arrays({"agents": np.zeros((N, 3), np.int64)}, np.arange(N))
        batch, copy_ids = envs.recv_arrays()
        assert copy_ids.tolist() == list(range(N)) and batch.rewards["agents"].shape == (N, 3)


def test_the_cycle_refuses_what_it_cannot_do_and_keeps_going() -> None:
    with _balance("next_step", 2) as envs:
        with pytest.raises(VectorEnvError, match="array face holds no episode"):
            envs.recv_arrays()
        envs.async_reset_arrays(seed=0)
        batch, copy_ids = envs.recv_arrays()
        with pytest.raises(VectorEnvError, match="one face per episode"):
            envs.recv()
        with pytest.raises(VectorEnvError, match="recv\\(\\) every copy sent"):
            envs.step_arrays({"agents": np.zeros((N, 3), np.int64)})
        with pytest.raises(ActionError, match="copy 1"):
            envs.send_arrays({"agents": np.array([[0, 0, 0], [0, 9, 0]])}, copy_ids)
        with pytest.raises(VectorEnvError, match="copy 2, whose results wait for recv"):
            envs.send_arrays({"agents": np.zeros((2, 3), np.int64)}, np.array([1, 2]))
        envs.send_arrays({"agents": np.zeros((2, 3), np.int64)}, copy_ids)  # nothing was kept
        with pytest.raises(VectorEnvError, match="twice|running"):
            envs.send_arrays({"agents": np.zeros((1, 3), np.int64)}, np.array([0]))
        rest = envs.recv_arrays().copy_ids
        assert rest.tolist() == [2, 3]
        with pytest.raises(VectorEnvError, match=r"no copy ready, and the copies \[2, 3\] are "
                                                 "held"):
            envs.recv_arrays()
        envs.send_arrays({"agents": np.ones((2, 3), np.int64)}, rest)
        assert envs.recv_arrays().copy_ids.tolist() == [0, 1]


def test_torch_rows_stay_on_the_simulators_device() -> None:
    torch = pytest.importorskip("torch")
    with marlhub.make_vec("vmas/balance", N, BALANCE, as_torch=True, batch_size=3) as envs:
        envs.async_reset_arrays(seed=0)
        batch, copy_ids = envs.recv_arrays()
        assert isinstance(batch.obs["agents"], torch.Tensor) and batch.obs["agents"].shape[0] == 3
        envs.send_arrays({"agents": torch.zeros((3, 3), dtype=torch.int64)}, copy_ids)
        batch, copy_ids = envs.recv_arrays()  # the reset's last row
        assert copy_ids.tolist() == [3] and isinstance(batch.rewards["agents"], torch.Tensor)
