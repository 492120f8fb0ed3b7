"""The OpenSpiel adapter's masks and action checks (actions.py), at both kinds of node."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from marlhub.adapters.openspiel import from_openspiel  # noqa: E402
from marlhub.core import ALL  # noqa: E402
from marlhub.errors import ActionError  # noqa: E402


@pytest.mark.parametrize("game", ["tic_tac_toe", "leduc_poker", "goofspiel(num_cards=4)"])
def test_masks_are_fresh_writable_int8_arrays_of_the_legal_actions(game: str) -> None:
    env = from_openspiel(game)
    obs, _ = env.reset(seed=0)
    seen: list[np.ndarray] = []
    while True:
        for agent, ob in obs.items():
            mask = ob["action_mask"]
            assert mask.dtype == np.int8 and mask.shape == (env.num_actions,)
            assert mask.flags.writeable and not any(np.shares_memory(mask, m) for m in seen)
            assert list(np.flatnonzero(mask)) == env.state.legal_actions(env.player(agent))
            seen.append(mask)
        if not env.actors:
            break
        actions = {a: int(np.flatnonzero(o["action_mask"])[-1]) for a, o in obs.items()}
        obs, _, terminateds, _, _ = env.step(actions)
        assert terminateds[ALL] == (not env.actors)


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"player_0": 0, "player_1": True}, r"got True, .*\(True is a bool"),
        ({"player_0": 0, "player_1": 4}, r"got 4, .*\(4 \(int\) is not an integer in \[0, 3\]\)"),
        ({"player_0": -1, "player_1": 0}, r"got -1, expected an action in Discrete\(4\)"),
        ({"player_0": 0, "player_1": 1.0}, r"1.0 \(float\) is not an integer"),
        ({"player_0": np.array([0]), "player_1": 1}, r"\(ndarray\) is not an integer"),
        ({"player_0": 0, "player_1": 1, "player_2": 0}, r"'player_2' is not an agent"),
        ({"player_0": 0, "dealer": 1}, r"'dealer' is not an agent"),
    ],
)
def test_malformed_actions_in_a_simultaneous_step_raise_and_apply_nothing(
    actions: Any, match: str
) -> None:
    env = from_openspiel("goofspiel(num_cards=4)")
    env.reset(seed=0)
    history = env.state.history()
    with pytest.raises(ActionError, match=match):
        env.step(actions)
    assert env.state.history() == history
    env.step({"player_0": np.int64(0), "player_1": np.int32(1)})  # numpy integers are fine
    assert env.state.history()[len(history):len(history) + 2] == [0, 1]
