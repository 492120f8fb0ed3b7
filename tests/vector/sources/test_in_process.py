"""SyncVectorMultiAgentEnv: copy i is a separate env seeded seed + i; autoreset modes; bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic
from marlhub.episode import actors_of, random_actions
from marlhub.errors import ActionError, ProtocolError, ResetNeededError, VectorEnvError
from marlhub.spaces import ActionSampler
from marlhub.vector import SyncVectorMultiAgentEnv
from tests.vector.envs import RaisesAtStep

ONE_MOVE = {"num_moves": 1}


def _rps_once() -> RockPaperScissors:
    return RockPaperScissors(ONE_MOVE)


def _traffic() -> Traffic:
    return Traffic({"num_cars": 3, "max_steps": 12})


@pytest.mark.parametrize("factory", [TicTacToe, _traffic, _rps_once])
def test_copy_i_is_a_separate_env_seeded_seed_plus_i(factory: Any) -> None:
    n = 3
    venv = SyncVectorMultiAgentEnv([factory] * n)
    twins = [factory() for _ in range(n)]
    obs, infos = venv.reset(seed=10)
    expected = [twin.reset(seed=10 + i) for i, twin in enumerate(twins)]
    assert why_different(obs, [e[0] for e in expected]) is None
    assert why_different(infos, [e[1] for e in expected]) is None
    samplers = [ActionSampler(i) for i in range(n)]
    actors = [list(o) for o in obs]
    over = [False] * n
    for _ in range(40):
        actions = [{} if over[i] else random_actions(actors[i], obs[i], infos[i],
                                                       twins[i].get_action_space, samplers[i])
                   for i in range(n)]
        got = venv.step(actions)
        for i in range(n):
            want = twins[i].reset() if over[i] else twins[i].step(actions[i])
            if over[i]:  # next_step: the call after the end is the reset
                want = (want[0], {}, {"__all__": False}, {"__all__": False}, want[1])
            assert why_different([column[i] for column in got], list(want)) is None
        obs, _, terminateds, truncateds, infos = got
        over = [t["__all__"] or u["__all__"] for t, u in zip(terminateds, truncateds)]
        actors = [actors_of(o, t, u) for o, t, u in zip(obs, terminateds, truncateds)]
    venv.close()


def test_reset_takes_one_seed_per_copy_or_none() -> None:
    venv = SyncVectorMultiAgentEnv([TicTacToe] * 2)
    by_list, _ = venv.reset(seed=[7, 3])
    assert why_different(by_list[1], TicTacToe().reset(seed=3)[0]) is None
    venv.reset()  # unseeded
    with pytest.raises(VectorEnvError, match="got 3 seeds for 2 copies"):
        venv.reset(seed=[1, 2, 3])
    with pytest.raises(VectorEnvError, match="got the seed 'x'"):
        venv.reset(seed="x")


def test_next_step_resets_in_the_call_after_the_end_ignoring_its_actions() -> None:
    venv = SyncVectorMultiAgentEnv([_rps_once] * 2)
    venv.reset(seed=0)
    _, rewards, terminateds, _, _ = venv.step([{"player1": 0, "player2": 1}] * 2)
    assert terminateds == [{"__all__": True}] * 2 and rewards[0] == {"player1": -1.0, "player2": 1.0}
    obs, rewards, terminateds, truncateds, infos = venv.step([{}, {"player1": 99}])
    assert [sorted(o) for o in obs] == [["player1", "player2"]] * 2
    assert rewards == [{}, {}] and terminateds == truncateds == [{"__all__": False}] * 2
    assert venv.metadata["autoreset_mode"] == "next_step"


def test_same_step_resets_at_once_and_keeps_the_final_obs_in_infos() -> None:
    venv = SyncVectorMultiAgentEnv([_rps_once], autoreset_mode="same_step")
    venv.reset(seed=0)
    obs, rewards, terminateds, _, infos = venv.step([{"player1": 0, "player2": 1}])
    assert terminateds == [{"__all__": True}] and rewards[0]["player2"] == 1.0
    final = infos[0]["__common__"]
    assert sorted(final["final_obs"]) == ["player1", "player2"] and "final_info" in final
    assert sorted(obs[0]) == ["player1", "player2"]  # the reset obs: play on
    venv.step([{"player1": 2, "player2": 2}])


def test_disabled_keeps_an_ended_copy_ended_until_reset_mask() -> None:
    venv = SyncVectorMultiAgentEnv([_rps_once, lambda: RockPaperScissors({"num_moves": 3})],
                                   autoreset_mode="DISABLED")
    venv.reset(seed=0)
    venv.step([{"player1": 0, "player2": 0}] * 2)
    obs, rewards, terminateds, _, infos = venv.step([{}, {"player1": 1, "player2": 1}])
    assert (obs[0], rewards[0], terminateds[0], infos[0]) == ({}, {}, {"__all__": True}, {})
    with pytest.raises(ActionError, match="in copy 0.*reset_mask") as caught:
        venv.step([{"player1": 1, "player2": 1}, {"player1": 1, "player2": 1}])
    assert caught.value.copy_index == 0
    obs, infos = venv.reset(options={"reset_mask": np.array([True, False])})
    assert sorted(obs[0]) == sorted(obs[1]) == ["player1", "player2"]  # 1 keeps its actors
    _, _, terminateds, _, _ = venv.step([{"player1": 1, "player2": 1}] * 2)
    assert terminateds == [{"__all__": True}] * 2
    obs, _ = venv.reset(options={"reset_mask": [True, True]})  # a list of bools works too
    assert [sorted(o) for o in obs] == [["player1", "player2"]] * 2


@pytest.mark.parametrize(("mask", "message"), [
    ([1, 0], "must be 2 bools"),
    (np.array([1, 0]), "must be 2 bools"),
    (np.array([True]), "must be 2 bools"),
    (np.array([False, False]), "resets no copy"),
])
def test_a_bad_reset_mask_is_refused(mask: Any, message: str) -> None:
    venv = SyncVectorMultiAgentEnv([_rps_once] * 2, autoreset_mode="disabled")
    venv.reset(seed=0)
    with pytest.raises(VectorEnvError, match=message):
        venv.reset(options={"reset_mask": mask})


def _twin_vectors() -> tuple[SyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv]:
    a, b = (SyncVectorMultiAgentEnv([_traffic] * 3) for _ in range(2))
    a.reset(seed=1)
    b.reset(seed=1)
    return a, b


def _valid(venv: SyncVectorMultiAgentEnv) -> list[dict[Any, Any]]:
    return [{agent: 1 for agent in venv._book.actors[i]} for i in range(venv.num_envs)]


@pytest.mark.parametrize(("spoil", "match", "copy_index", "agent"), [
    (lambda acts: acts[:2], "a list of 3 action dicts", None, None),
    (lambda acts: {"car_0": 1}, r"a list of 3 action dicts.*\(got a dict\)", None, None),
    (lambda acts: "abc", r"a list of 3 action dicts.*\(got a str\)", None, None),
    (lambda acts: [*acts[:2], {**acts[2], "car_0": 7}], "for 'car_0' in copy 2", 2, "car_0"),
    (lambda acts: [acts[0], {**acts[1], "light": 1, "ghost": 0}, acts[2]], "in copy 1", 1,
     "ghost"),
    (lambda acts: [acts[0], {}, acts[2]], "for 'car_0' in copy 1", 1, "car_0"),
])
def test_a_bad_action_list_raises_naming_the_copy_and_steps_no_copy(
        spoil: Any, match: str, copy_index: Any, agent: Any) -> None:
    a, b = _twin_vectors()
    with pytest.raises(ActionError, match=match) as caught:
        a.step(spoil(_valid(a)))
    assert (caught.value.copy_index, caught.value.agent_id) == (copy_index, agent)
    # No copy moved: the same valid step gives what an untouched twin gives.
    assert why_different(list(a.step(_valid(a))), list(b.step(_valid(b)))) is None


def _first_legal(obs: dict[Any, Any]) -> dict[Any, int]:
    return {agent: int(np.flatnonzero(ob["action_mask"])[0]) for agent, ob in obs.items()}


def test_a_masked_out_action_is_refused_before_any_copy_steps() -> None:
    pytest.importorskip("pyspiel")
    venv = marlhub.make_vec("openspiel/tic_tac_toe", 2)
    obs, _ = venv.reset(seed=0)
    first = [_first_legal(o) for o in obs]
    obs, *_ = venv.step(first)
    taken = next(iter(first[1].values()))  # that square is taken now
    bad = [_first_legal(obs[0]), {agent: taken for agent in obs[1]}]
    with pytest.raises(ActionError, match="in copy 1.*masked out") as caught:
        venv.step(bad)
    assert caught.value.copy_index == 1
    venv.step([_first_legal(o) for o in obs])  # nothing moved: the legal step still works


def test_step_before_reset_and_after_a_copy_raised() -> None:
    venv = SyncVectorMultiAgentEnv([_rps_once, lambda: RaisesAtStep(2)])
    with pytest.raises(ResetNeededError, match="reset"):
        venv.step([{}, {}])
    venv.reset(seed=0)
    both = [{"player1": 0, "player2": 0}] * 2
    venv.step(both)
    with pytest.raises(RuntimeError, match="boom in step 2") as caught:
        venv.step([{}, {"player1": 0, "player2": 0}])
    assert any("copy 1" in note for note in caught.value.__notes__)
    with pytest.raises(ResetNeededError, match="copy 1 raised RuntimeError"):
        venv.step([{}, {}])
    venv.reset(seed=1)  # goes on
    venv.step(both)


def test_call_attributes_render_and_close() -> None:
    venv = SyncVectorMultiAgentEnv([TicTacToe] * 2, env_id="tic_tac_toe")
    assert repr(venv) == "SyncVectorMultiAgentEnv(tic_tac_toe, num_envs=2)"
    assert venv.single_action_spaces["player1"] == venv.single_action_space["player1"]
    assert venv.get_attr("possible_agents") == (["player1", "player2"],) * 2
    assert venv.call("get_action_space", "player2") == (venv.single_action_spaces["player2"],) * 2
    venv.set_attr("marker", [1, 2])
    assert venv.get_attr("marker") == (1, 2)
    with pytest.raises(VectorEnvError, match="got 3 values for 2 copies"):
        venv.set_attr("marker", [1, 2, 3])
    assert venv.render() == ("no game yet: call reset()",) * 2
    with venv:
        pass
    assert venv.closed
    with pytest.raises(VectorEnvError, match="it was closed"):
        venv.reset()
    venv.close()  # again: nothing


def test_env_fns_must_make_hub_envs() -> None:
    with pytest.raises(VectorEnvError, match="non-empty list"):
        SyncVectorMultiAgentEnv([])
    with pytest.raises(ProtocolError, match=r"env_fns\[1\]"):
        SyncVectorMultiAgentEnv([TicTacToe, lambda: object()])
    with pytest.raises(VectorEnvError, match="unknown autoreset_mode 'sometimes'"):
        SyncVectorMultiAgentEnv([TicTacToe], autoreset_mode="sometimes")


def test_copy_deep_copies_observations() -> None:
    venv = SyncVectorMultiAgentEnv([TicTacToe], copy=True)
    obs, _ = venv.reset(seed=0)
    agent = next(iter(obs[0]))
    assert obs[0][agent] is not venv._book.obs[0][agent]


def test_masks_can_be_left_to_copies_that_take_masked_out_actions() -> None:
    pytest.importorskip("pyspiel")
    from marlhub.wrappers.illegal import IllegalActionWrapper

    def terminating() -> Any:
        return IllegalActionWrapper(marlhub.make("openspiel/tic_tac_toe"), "terminate")

    strict = SyncVectorMultiAgentEnv([terminating])
    lenient = SyncVectorMultiAgentEnv([terminating], check_masks=False)
    for venv in (strict, lenient):
        obs, _ = venv.reset(seed=0)
        venv.step([_first_legal(obs[0])])
    taken = next(iter(_first_legal(strict.reset(seed=0)[0][0]).values()))
    strict.step([{agent: taken for agent in strict.actors[0]}])
    with pytest.raises(ActionError, match="masked out"):
        strict.step([{agent: taken for agent in strict.actors[0]}])
    _, rewards, terminateds, _, infos = lenient.step([{a: taken for a in lenient.actors[0]}])
    assert terminateds[0]["__all__"] and -1.0 in rewards[0].values()  # the copy's own answer
