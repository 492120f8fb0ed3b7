"""to_torchrl of a vector env: an EnvBase with batch_size=[num_envs], for sync, async and batched."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.errors import ConfigError, MarlhubWarning

torch = pytest.importorskip("torch")
pytest.importorskip("torchrl")

from torchrl.envs.utils import check_env_specs  # noqa: E402

from marlhub.adapters.torchrl import from_torchrl, to_torchrl  # noqa: E402
from tests.vector.envs import no_worker_left_behind  # noqa: E402,F401 (autouse)

SOURCES = [
    pytest.param("vmas/balance", {"max_steps": 3}, {}, id="batched-vmas"),
    pytest.param("vmas/balance", {"max_steps": 3}, {"as_torch": True}, id="batched-vmas-torch"),
    pytest.param("traffic", {"max_steps": 6}, {}, id="sync-two-groups"),
    pytest.param("tic_tac_toe", None, {"vectorization_mode": "async", "num_workers": 2,
                                       "timeout": 60}, id="async-masks"),
]


class PaidRewards:
    """Sums, per group and copy, the rewards the vector env's array face pays."""

    def __init__(self, vector_env: Any) -> None:
        self.sums: dict[str, np.ndarray] = {}
        step = vector_env.step_arrays

        def counted(actions: Any) -> Any:
            batch = step(actions)
            for name, rewards in batch.rewards.items():
                self.sums[name] = self.sums.get(name, 0) + np.asarray(rewards, np.float64)
            return batch

        vector_env.step_arrays = counted


@pytest.mark.parametrize(("env_id", "config", "kwargs"), SOURCES)
def test_specs_check_and_rollouts_with_partial_resets_pay_what_the_hub_pays(
        env_id: str, config: Any, kwargs: dict[str, Any]) -> None:
    vector = marlhub.make_vec(env_id, 4, config, **kwargs)
    paid = PaidRewards(vector)
    env = to_torchrl(vector)
    try:
        assert tuple(env.batch_size) == (4,) and from_torchrl(env) is vector
        check_env_specs(env)
        paid.sums.clear()
        torch.manual_seed(0)
        env.set_seed(0)
        td = env.rollout(15, break_when_any_done=False)  # copies end and are reset by TorchRL
        assert td["next", "done"].any() and td.shape == (4, 15)
        for name, members in env.group_map.items():
            assert td["next", name, "observation"].shape[:3] == (4, 15, len(members))
            rolled = td["next", name, "reward"][..., 0].sum(1).double().numpy()
            assert np.allclose(rolled, paid.sums[name], atol=1e-4)
    finally:
        env.close()


@pytest.mark.filterwarnings("ignore:Creating .* which inherits from WeightUpdaterBase"
                            ":DeprecationWarning")  # TorchRL's collectors warn about themselves
def test_torchrls_collectors_take_make_vec_directly() -> None:
    from torchrl import collectors

    # TorchRL 0.14 named its single-process collector Collector; 0.13 SyncDataCollector.
    collector_class = getattr(collectors, "Collector", None) or collectors.SyncDataCollector
    env = to_torchrl(marlhub.make_vec("vmas/navigation", 8, {"max_steps": 5}))
    collector = collector_class(env, policy=None, frames_per_batch=64, total_frames=128)
    batches = [batch for batch in collector]
    collector.shutdown()
    assert len(batches) == 2 and batches[0].shape == (8, 8)
    assert batches[1]["next", "done"].any()


def test_a_batched_vmas_source_is_laid_out_as_torchrls_own_vmas_env() -> None:
    from torchrl.envs.libs.vmas import VmasEnv

    ours = to_torchrl(marlhub.make_vec("vmas/balance", 5, {"max_steps": 10}))
    theirs = VmasEnv("balance", num_envs=5, max_steps=10)
    ours_td, theirs_td = ours.reset(), theirs.reset()
    for key in [("agents", "observation"), "done", "terminated"]:
        assert ours_td[key].shape == theirs_td[key].shape, key
    assert ours.full_action_spec["agents", "action"].shape == \
        theirs.full_action_spec["agents", "action"].shape
    ours.close()
    theirs.close()


def test_a_group_map_other_than_the_vector_envs_groups_is_refused() -> None:
    vector = marlhub.make_vec("traffic", 2)
    with pytest.raises(ConfigError, match="groups are those of its array face"):
        to_torchrl(vector, group_map={"all": ["car_0", "car_1", "car_2", "car_3", "light"]})
    vector.close()


def _vmas_through_torchrl(as_torch: bool) -> Any:
    """VMAS's balance read through TorchRL's VmasEnv: a source that gives numpy arrays."""
    from torchrl.envs.libs.vmas import VmasEnv

    from marlhub.vector import BatchedVectorEnv

    source = from_torchrl(VmasEnv("balance", num_envs=3, max_steps=4), through_vmas=False).source
    return BatchedVectorEnv(source, as_torch=as_torch)


@pytest.mark.parametrize("make", [
    pytest.param(lambda as_torch: marlhub.make_vec("vmas/balance", 3, {"max_steps": 4},
                                                   as_torch=as_torch), id="torch-arrays"),
    pytest.param(_vmas_through_torchrl, id="numpy-arrays-kept"),
])
def test_a_torch_faced_batched_source_rolls_out_as_the_numpy_faced_one(make: Any) -> None:
    """``as_torch=True`` keeps the simulator's tensors (or a source's numpy arrays, which
    then go through numpy); the rollout is the numpy face's."""
    from tensordict import assert_close

    views = [to_torchrl(make(as_torch)) for as_torch in (False, True)]
    rollouts = []
    for view in views:
        view.set_seed(0)
        torch.manual_seed(0)
        rollouts.append(view.rollout(10, break_when_any_done=False))  # copies end and restart
        view.close()
    assert rollouts[0]["next", "done"].any()
    assert_close(rollouts[0], rollouts[1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_a_gpu_the_torch_face_never_goes_through_the_host() -> None:
    vector = marlhub.make_vec("vmas/balance", 4, {"max_steps": 4, "device": "cuda"},
                              as_torch=True)
    env = to_torchrl(vector, device="cuda")
    td = env.reset(seed=0)
    simulators = vector._last.obs["agents"]
    assert td["agents", "observation"].data_ptr() == simulators.data_ptr()  # the same tensor
    td = env.step(env.rand_action(td))
    assert td["next", "agents", "reward"].is_cuda
    env.close()


def test_a_numpy_face_on_an_accelerator_is_warned_of() -> None:
    from types import SimpleNamespace

    from marlhub.adapters.torchrl.vector_view import _warn_of_the_host

    gpu_source = SimpleNamespace(source=SimpleNamespace(device="cuda:0"))
    with pytest.warns(MarlhubWarning, match="runs on cuda:0 and its array face gives numpy "
                      "arrays.*as_torch=True"):
        _warn_of_the_host(gpu_source, as_torch=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_of_the_host(gpu_source, as_torch=True)
        _warn_of_the_host(SimpleNamespace(source=SimpleNamespace(device="cpu")), as_torch=False)
        _warn_of_the_host(SimpleNamespace(), as_torch=False)  # not batched
        to_torchrl(marlhub.make_vec("vmas/balance", 2, {"max_steps": 2})).close()
