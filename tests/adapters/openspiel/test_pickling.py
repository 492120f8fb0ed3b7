"""OpenSpiel envs pickle before reset, mid-episode and after the end, and play on as the original.

pyspiel's observers do not pickle; the env pickles its game (as its string), its
states (as game and history), its ``np_random`` (which draws chance outcomes)
and rebuilds the observer when loaded.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any, Callable

import pytest

pytest.importorskip("pyspiel")

import marlhub  # noqa: E402
from marlhub.adapters.openspiel import OpenSpielEnv, from_openspiel  # noqa: E402
from marlhub.contract.compare import why_different  # noqa: E402
from tests.adapters.pickling import (  # noqa: E402
    STAGES,
    pickled_at,
    play_on,
    play_on_in_fresh_interpreter,
)


def _start_state() -> Any:
    import pyspiel

    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    state.apply_action(4)
    return state


#: (id, make, steps to play before pickling mid-episode)
ENVS: list[tuple[str, Callable[[], Any], int]] = [
    ("kuhn_poker", lambda: marlhub.make("openspiel/kuhn_poker"), 1),
    ("leduc_poker", lambda: marlhub.make("openspiel/leduc_poker"), 1),
    ("matrix_rps", lambda: marlhub.make("openspiel/matrix_rps"), 0),
    ("goofspiel", lambda: marlhub.make("openspiel/goofspiel", {"num_cards": 4}), 2),
    ("python_kuhn_poker", lambda: marlhub.make("openspiel/python_kuhn_poker"), 1),
    ("rllib layout, strings", lambda: OpenSpielEnv("leduc_poker", observation="string"), 1),
    ("start state", lambda: from_openspiel(_start_state()), 2),
    ("substitute", lambda: from_openspiel("kuhn_poker", illegal_action="substitute"), 1),
]


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize(("name", "make", "steps"), ENVS, ids=[e[0] for e in ENVS])
def test_an_unpickled_env_plays_on_as_the_original(
        name: str, make: Callable[[], Any], steps: int, stage: str) -> None:
    env = make()
    data = pickled_at(env, stage, seed=3, steps=steps)
    twin, step = pickle.loads(data)
    assert type(twin) is type(env) and twin.observer is not env.observer
    reset_seed = 5 if stage == "before reset" else None
    # The second new episode resets unseeded: chance comes from the np_random carried over.
    expected = play_on(env, step, reset_seed=reset_seed)
    assert why_different(play_on(twin, step, reset_seed=reset_seed), expected) is None


def test_an_env_pickled_twice_is_two_independent_envs() -> None:
    env = marlhub.make("openspiel/leduc_poker")
    env.reset(seed=1)
    a, b = pickle.loads(pickle.dumps([env, env]))
    assert a is b and a.state is not env.state
    twin = pickle.loads(pickle.dumps(env))
    twin.step({twin.actors[0]: 1})
    assert twin.state.history() != env.state.history()


def test_a_deep_copy_still_plays_on_as_the_original() -> None:
    env = marlhub.make("openspiel/kuhn_poker")
    data = pickled_at(env, "mid-episode", seed=2)
    _, step = pickle.loads(data)
    twin = copy.deepcopy(env)
    assert twin.game is env.game and twin.observer is not env.observer
    assert why_different(play_on(twin, step), play_on(env, step)) is None


@pytest.mark.parametrize("game", ["kuhn_poker", "python_kuhn_poker", "goofspiel"])
def test_a_pickle_loads_and_plays_on_in_a_fresh_interpreter(game: str) -> None:
    env = marlhub.make(f"openspiel/{game}")
    data = pickled_at(env, "mid-episode", seed=4)
    _, step = pickle.loads(data)
    assert why_different(play_on_in_fresh_interpreter(data), play_on(env, step)) is None
