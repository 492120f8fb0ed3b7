"""make_vec: ids to vector envs, picklable env_fns that resolve in the worker."""

from __future__ import annotations

import pickle

import cloudpickle
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors
from marlhub.errors import UnknownEnvError, VectorEnvError
from marlhub.registry import default_registry
from marlhub.registry.vector import RegistryEnvFn, env_fns_for, make_vec
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv


def test_make_vec_is_exported_and_makes_copies_of_an_id_with_its_config() -> None:
    assert marlhub.make_vec is make_vec
    with make_vec("traffic", 2, {"num_cars": 2}) as venv:
        assert isinstance(venv, SyncVectorMultiAgentEnv)
        assert venv.single_observation_spaces.keys() == {"car_0", "car_1", "light"}
        obs, _ = venv.reset(seed=4)
        twin = marlhub.make("traffic", {"num_cars": 2})
        assert why_different(obs[1], twin.reset(seed=5)[0]) is None


def test_each_copy_knows_its_vector_index() -> None:
    fns = env_fns_for("traffic", 3, marlhub.EnvContext({"num_cars": 1}, worker_index=2))
    contexts = [fn.context() for fn in fns]
    assert [c.vector_index for c in contexts] == [0, 1, 2]
    assert {c.worker_index for c in contexts} == {2} and dict(contexts[0]) == {"num_cars": 1}


def test_async_and_the_modes_by_name() -> None:
    with make_vec("tic_tac_toe", 2, vectorization_mode="async", autoreset_mode="same_step",
                  num_workers=1, timeout=60) as venv:
        assert isinstance(venv, AsyncVectorMultiAgentEnv)
        assert venv.metadata["autoreset_mode"] == "same_step"
        assert repr(venv) == "AsyncVectorMultiAgentEnv(tic_tac_toe, num_envs=2)"


def test_an_id_registered_here_reaches_spawned_workers_with_its_creator() -> None:
    marlhub.register_env("short_rps_for_vector", lambda config: RockPaperScissors({"num_moves": 2}))
    try:
        fn = cloudpickle.loads(cloudpickle.dumps(env_fns_for("short_rps_for_vector", 1)[0]))
        assert fn.creator is not None and fn().possible_agents == ["player1", "player2"]
        with make_vec("short_rps_for_vector", 2, vectorization_mode="async", num_workers=1,
                      context="spawn", timeout=120) as venv:
            obs, _ = venv.reset(seed=0)
            venv.step([{"player1": 0, "player2": 1}] * 2)
            _, _, terminateds, _, _ = venv.step([{"player1": 0, "player2": 1}] * 2)
            assert terminateds == [{"__all__": True}] * 2
    finally:
        default_registry().unregister("short_rps_for_vector")


def test_family_ids_resolve_in_the_process_that_calls_the_env_fn() -> None:
    fn = env_fns_for("gymnasium/CartPole-v1", 1)[0]
    assert fn.creator is None
    assert pickle.loads(pickle.dumps(fn))().possible_agents == [0]
    assert repr(fn) == "RegistryEnvFn('gymnasium/CartPole-v1', vector_index=0)"


def test_simultaneous_config_makes_vector_envs_of_a_natively_parallel_env() -> None:
    pytest.importorskip("mpe2")
    config = marlhub.registry.simultaneous_config("mpe2/simple_spread-v3", {"N": 2})
    with make_vec("mpe2/simple_spread-v3", 2, config) as venv:
        obs, _ = venv.reset(seed=0)
        assert [sorted(o) for o in obs] == [["agent_0", "agent_1"]] * 2  # every agent acts
        obs, *_ = venv.step([dict.fromkeys(o, 0) for o in obs])
        assert [sorted(o) for o in obs] == [["agent_0", "agent_1"]] * 2
    with make_vec("mpe2/simple_spread-v3", 1, {"N": 2}) as aec:  # the default stays AEC
        assert list(aec.reset(seed=0)[0][0]) == ["agent_0"]


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: make_vec("tic_tac_to", 2), UnknownEnvError, "Did you mean 'tic_tac_toe'"),
    (lambda: make_vec("tic_tac_toe", 0), VectorEnvError, "num_envs must be an integer >= 1"),
    (lambda: make_vec("tic_tac_toe", 2, vectorization_mode="threads"), VectorEnvError,
     "unknown vectorization_mode 'threads'"),
    (lambda: make_vec("tic_tac_toe", 2, num_workers=2), VectorEnvError,
     "unknown option 'num_workers' for vectorization_mode='sync'. It takes 'copy'"),
    (lambda: make_vec("tic_tac_toe", 2, autoreset_mode="never"), VectorEnvError,
     "unknown autoreset_mode 'never'"),
])
def test_bad_arguments_say_what_to_pass(call: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


def test_gymnasiums_vectorize_mode_is_taken() -> None:
    from gymnasium.envs.registration import VectorizeMode

    with make_vec("tic_tac_toe", 1, vectorization_mode=VectorizeMode.SYNC) as venv:
        assert isinstance(venv, SyncVectorMultiAgentEnv)


def test_registry_env_fn_pickles() -> None:
    fn = RegistryEnvFn("traffic", {"num_cars": 2}, vector_index=1)
    assert pickle.loads(pickle.dumps(fn))().possible_agents == ["car_0", "car_1", "light"]
