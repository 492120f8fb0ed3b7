"""Actions checked once: the vector env checks every copy's actions before any copy moves, and
the copies step inside ``actions_prechecked`` so their adapters do not check them again."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.episode import (
    ActionChecker,
    actions_are_prechecked,
    actions_prechecked,
    check_action,
    check_action_dict,
    check_keys,
)
from marlhub.errors import ActionError
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv
from tests.vector.envs import RecordsChecks, no_worker_left_behind  # noqa: F401 (autouse)

KINDS = {"sync": SyncVectorMultiAgentEnv,
         "async": lambda fns: AsyncVectorMultiAgentEnv(fns, num_workers=2, timeout=60.0)}
BOTH = {"player1": 0, "player2": 1}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_copies_step_with_their_checks_off_and_a_bad_action_moves_no_copy(kind: str) -> None:
    with KINDS[kind]([RecordsChecks] * 3) as envs:
        envs.reset(seed=0)
        envs.step([BOTH] * 3)
        assert [list(p) for p in envs.call("prechecked")] == [[True]] * 3
        for bad in ({"player1": 0, "player2": 3}, {"player1": 0}, {**BOTH, "ghost": 1}):
            with pytest.raises(ActionError, match="in copy 1") as caught:
                envs.step([BOTH, bad, BOTH])
            assert caught.value.copy_index == 1
            # refused by the vector env alone: no copy's step was entered
            assert [len(p) for p in envs.call("prechecked")] == [1, 1, 1]
        envs.step([BOTH] * 3)
        assert [list(p) for p in envs.call("prechecked")] == [[True, True]] * 3
    assert not actions_are_prechecked()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_actions_the_copies_own_checks_would_convert_reach_them_converted(kind: str) -> None:
    """A 0-d array is a valid Discrete action, which a hub env's own check passes on as an int;
    the vector env passes it on the same way, since the copy does not check it again."""
    with KINDS[kind]([RecordsChecks] * 2) as envs, SyncVectorMultiAgentEnv(
            [RecordsChecks] * 2) as twin:
        envs.reset(seed=0)
        twin.reset(seed=0)
        arrays = {"player1": np.array(2), "player2": np.int64(1)}
        assert why_different(list(envs.step([arrays, BOTH])),
                             list(twin.step([{"player1": 2, "player2": 1}, BOTH]))) is None
        assert [list(r) for r in envs.call("received")] == [[["int", "int64"]], [["int", "int"]]]


def test_a_single_env_can_opt_out_and_then_steps_as_it_would_with_checks() -> None:
    pytest.importorskip("pyspiel")
    checked, unchecked = (marlhub.make("openspiel/kuhn_poker") for _ in range(2))
    a, b = checked.reset(seed=3), unchecked.reset(seed=3)
    rng = np.random.default_rng(0)
    while True:
        obs = a[0]
        actions = {agent: int(rng.choice(np.flatnonzero(ob["action_mask"])))
                   for agent, ob in obs.items()}
        a = checked.step(actions)
        with actions_prechecked():
            b = unchecked.step(dict(actions))
        assert why_different(list(a), list(b)) is None
        if a[2]["__all__"] or a[3]["__all__"]:
            break
    with pytest.raises(ActionError, match="ghost"):  # outside the block, checks are back
        checked.reset(seed=0)
        checked.step({"ghost": 0})


def test_inside_the_block_the_checks_let_anything_through_and_it_ends_with_the_block() -> None:
    space = gym.spaces.Discrete(2)
    checker = ActionChecker(lambda agent: space)
    with pytest.raises(RuntimeError), actions_prechecked():
        assert check_action("a", space, 7) == 7
        check_keys("Env", {"ghost": 1}, actors=["a"], possible_agents=["a"])
        assert check_action_dict("Env", {"a": 9}, actors=["a"], possible_agents=["a"],
                                 space_of=lambda agent: space) == {"a": 9}
        assert checker.check_dict("Env", {"a": 5}, actors=["a"], possible_agents=["a"]) == \
            {"a": 5}
        raise RuntimeError("leaving the block by an exception")
    assert not actions_are_prechecked()
    with pytest.raises(ActionError, match="expected an action in Discrete"):
        check_action("a", space, 7)
    with pytest.raises(ActionError):
        checker.check_dict("Env", {"a": 5}, actors=["a"], possible_agents=["a"])
