"""One validator: every family and view accepts and refuses the same action forms alike."""

from __future__ import annotations

import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.episode.actions import (
    ActionChecker,
    BoxCheck,
    DiscreteCheck,
    check_action,
    check_action_dict,
    fast_check,
)
from marlhub.errors import ActionError
from marlhub.spaces import find_action_mask

DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

ACCEPTED = [1, np.int64(1), np.int8(1), np.uint32(1), np.array(1)]
REFUSED = [True, np.bool_(True), 1.0, "1", np.array([1]), np.array(1.0), 3, -1, None]


@pytest.mark.parametrize("action", ACCEPTED, ids=repr)
def test_the_forms_discrete_contains_accepts_are_actions(action: Any) -> None:
    assert check_action("a", DISCRETE, action) == 1
    assert type(check_action("a", DISCRETE, action)) is int


@pytest.mark.parametrize("action", REFUSED, ids=repr)
def test_other_forms_are_refused_with_the_reason(action: Any) -> None:
    with pytest.raises(ActionError, match=r"Bad action for 'a'.*Discrete\(3\) \("):
        check_action("a", DISCRETE, action)


@pytest.mark.parametrize("action", [np.array([0.5, np.nan], np.float32), [0.0, 0.0],
                                    np.zeros(3, np.float32), np.array([2.0, 0.0], np.float32)],
                         ids=["nan", "list", "shape", "bound"])
def test_box_actions_are_refused_for_nan_lists_shapes_and_bounds(action: Any) -> None:
    with pytest.raises(ActionError):
        check_action("a", BOX, action)


def test_the_mask_is_honoured_and_named() -> None:
    with pytest.raises(ActionError, match=r"action 1 is masked out; legal actions are \[0, 2\]"):
        check_action("a", DISCRETE, 1, [1, 0, 1])
    assert check_action("a", DISCRETE, 2, np.array([True, False, True])) == 2


@pytest.mark.parametrize("action", ACCEPTED + REFUSED, ids=repr)
def test_the_fast_path_agrees_with_the_full_check(action: Any) -> None:
    checker = ActionChecker({"a": DISCRETE}.__getitem__)
    try:
        check_action("a", DISCRETE, action)
        full = True
    except ActionError:
        full = False
    try:
        checker.check("a", action)
        fast = True
    except ActionError:
        fast = False
    assert fast == full
    quick = fast_check(DISCRETE)
    assert quick is not None and (not quick(action, None) or full)


@pytest.mark.parametrize("space", [
    gym.spaces.Box(-1.0, 1.0, (1,), np.float32),
    gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, np.inf]), (2,), np.float64),
    gym.spaces.Box(0, 9, (2, 3), np.int64),
    gym.spaces.Box(-2.0, 2.0, (), np.float32),
    gym.spaces.Box(-1.0, 1.0, (40,), np.float32),  # past the small-box path: numpy's
], ids=["one", "half-open", "2-d ints", "0-d", "large"])
def test_the_quick_box_check_agrees_with_gymnasiums_contains(space: gym.Space) -> None:
    check = BoxCheck(space.low, space.high, space.shape, space.dtype).check
    rng = np.random.default_rng(0)
    candidates = [space.sample() for _ in range(20)]
    for _ in range(60):  # values near and past the bounds, NaN and infinities among them
        values = rng.choice([-3.0, -2.0, -1.0, -1e-7, 0.0, 0.5, 1.0, 1.0 + 1e-6, 9.0, 10.0,
                             np.nan, np.inf, -np.inf], size=space.shape)
        with np.errstate(invalid="ignore"):
            candidates.append(np.asarray(values).astype(space.dtype))
    for action in candidates:
        assert check(action, None) == bool(space.contains(action)), action


@pytest.mark.parametrize("space", [DISCRETE, gym.spaces.Discrete(3, start=-1), BOX],
                         ids=["discrete", "discrete from -1", "box"])
def test_the_quick_checks_pickle_and_check_alike_after(space: gym.Space) -> None:
    quick = fast_check(space)
    assert quick is not None and isinstance(quick.__self__, (DiscreteCheck, BoxCheck))  # type: ignore[attr-defined]
    copied = pickle.loads(pickle.dumps(quick))
    actions = ACCEPTED + REFUSED + [0, 2, np.zeros(2, np.float32), np.ones(2, np.float32) * 2]
    for action in actions:
        for mask in (None, np.array([1, 0, 1]), [0, 1, 1]):
            assert copied(action, mask) == quick(action, mask), (action, mask)
    assert repr(copied.__self__) == repr(quick.__self__)  # type: ignore[attr-defined]


def test_an_action_checker_pickles_with_its_quick_checks() -> None:
    spaces = {"a": DISCRETE, "b": BOX, "c": gym.spaces.MultiBinary(2)}
    checker = ActionChecker(spaces.__getitem__)
    for agent, action in [("a", 1), ("b", np.zeros(2, np.float32)), ("c", np.array([0, 1], np.int8))]:
        checker.check(agent, action)
    copied = pickle.loads(pickle.dumps(checker))
    copied.check("a", 2, [0, 0, 1])
    with pytest.raises(ActionError, match="masked out"):
        copied.check("a", 1, [0, 0, 1])
    with pytest.raises(ActionError, match="Box"):
        copied.check("b", np.full(2, 3.0, np.float32))
    with pytest.raises(ActionError, match="MultiBinary"):
        copied.check("c", np.array([0, 2], np.int8))


@pytest.mark.parametrize("actions, legal", [
    ([0, 1, 2], True), ([np.int64(0), np.int64(2)], True), ([0, np.int64(2), np.int8(1)], True),
    ([np.int64(2), 0], True), ([0, True], False), ([True, 0], False), ([0, 1.0], False),
    ([np.int64(1), 1.0], False), ([0, 3], False), ([np.int64(3), 0], False), ([], False)])
def test_check_all_agrees_with_one_check_per_action(actions: list[Any], legal: bool) -> None:
    check = DiscreteCheck(0, 3)
    assert check.check_all(actions) is legal
    assert all(check.check(a, None) for a in actions) is legal or not actions


def test_check_dict_checks_each_new_actors_list_against_its_own_spaces() -> None:
    spaces = {"a": DISCRETE, "c": gym.spaces.Discrete(5), "d": gym.spaces.Discrete(5)}
    checker = ActionChecker(spaces.__getitem__)
    wide = ["c", "d"]
    actions = {"c": 4, "d": 0}
    assert checker.check_dict("E", actions, actors=wide, possible_agents="acd") == actions
    # Once the checks are learnt, the dict comes back itself.
    assert checker.check_dict("E", actions, actors=wide, possible_agents="acd") is actions
    with pytest.raises(ActionError, match="'a'.*Discrete\\(3\\)"):  # not Discrete(5)'s check
        checker.check_dict("E", {"a": 4, "d": 0}, actors=["a", "d"], possible_agents="acd")
    assert checker.check_dict("E", {"a": 2, "d": 4}, actors=["a", "d"], possible_agents="acd") \
        == {"a": 2, "d": 4}


def test_a_whole_dict_is_checked_before_anything_and_hints_differ() -> None:
    spaces = {"a": DISCRETE, "b": DISCRETE}
    kwargs: dict[str, Any] = dict(actors=["a"], possible_agents=["a", "b"],
                                  space_of=spaces.__getitem__)
    # Without the finished agents, the hint names both reasons an agent may not act.
    with pytest.raises(ActionError, match="'b' either did not receive an observation in the last "
                                          r"step, or is done .*marlhub\.actors\(obs, "):
        check_action_dict("E", {"a": 0, "b": 0}, **kwargs)
    with pytest.raises(ActionError, match="'b' did not receive an observation in the last step; "):
        check_action_dict("E", {"a": 0, "b": 0}, **kwargs, finished=())
    with pytest.raises(ActionError, match=r"'b' is done: it got its final observation with "
                                          r"terminateds\['b'\] or truncateds\['b'\] True"):
        check_action_dict("E", {"a": 0, "b": 0}, **kwargs, finished={"b"})
    checker = ActionChecker(spaces.__getitem__)
    with pytest.raises(ActionError, match="'b' is done: "):
        checker.check_dict("E", {"a": 0, "b": 0}, actors=["a"], possible_agents=["a", "b"],
                           finished=["b"])
    with pytest.raises(ActionError, match="'z' is not an agent of E; its agents are"):
        check_action_dict("E", {"a": 0, "z": 0}, **kwargs)
    with pytest.raises(ActionError, match="Add an action for 'a'"):
        check_action_dict("E", {}, **kwargs)
    with pytest.raises(ActionError, match="expected a dict mapping each actor"):
        check_action_dict("E", [0], **kwargs)
    with pytest.raises(ActionError, match="'b': it is busy"):
        check_action_dict("E", {"a": 0, "b": 0}, **kwargs, why_not_actor=lambda a: "it is busy")


# Every family: the same bad forms are refused, and the env is left exactly as its twin.
FAMILIES: list[tuple[str, Callable[[], Any]]] = [
    ("builtin", lambda: marlhub.make("tic_tac_toe")),
    ("groups", lambda: marlhub.make("rock_paper_scissors").with_agent_groups(
        {"team": ["player1", "player2"]})),
]
for _id in ("openspiel/tic_tac_toe", "pettingzoo/classic/tictactoe-v3", "gymnasium/FrozenLake-v1"):
    FAMILIES.append((_id, lambda _id=_id: marlhub.make(_id)))


def _bad_dicts(env: Any, obs: Any) -> list[Any]:
    actor = next(iter(obs))
    space = env.get_action_space(actor)
    if isinstance(space, gym.spaces.Tuple):
        return [{actor: (True, 0)}, {actor: (np.array([1]), 0)}, {actor: (0,)}]
    return [{actor: True}, {actor: np.array([1])}, {actor: 1.5}, {actor: space.n + space.start},
            {}, {actor: 0, "nobody": 0}]


@pytest.mark.parametrize(("name", "make"), FAMILIES, ids=[n for n, _ in FAMILIES])
def test_every_family_refuses_the_same_bad_forms_and_stays_as_its_twin(
        name: str, make: Callable[[], Any]) -> None:
    pytest.importorskip({"openspiel": "pyspiel", "pettingzoo": "pettingzoo"}.get(
        name.split("/")[0], "gymnasium"))
    env, twin = make(), make()
    obs, _ = env.reset(seed=3)
    twin.reset(seed=3)
    for bad in _bad_dicts(env, obs):
        with pytest.raises(ActionError):
            env.step(bad)
    actions = {a: np.int64(0) if not isinstance(env.get_action_space(a), gym.spaces.Tuple)
               else (0, 0) for a in obs}
    mask_actions = {}
    for agent, action in actions.items():
        mask = find_action_mask(obs[agent])
        mask_actions[agent] = (np.int64(int(np.flatnonzero(mask)[0])) if mask is not None
                               else action)

    assert why_different(env.step(mask_actions)[:4], twin.step(mask_actions)[:4]) is None
