"""RockPaperScissors: the RLlib docs' rules, the contract deviations, every error."""

from __future__ import annotations

import numpy as np
import pytest

from marlhub.context import EnvContext
from marlhub.core import ALL
from marlhub.envs import RockPaperScissors
from marlhub.errors import ActionError, ConfigError, ResetNeededError

ROCK, PAPER, SCISSORS = RockPaperScissors.ROCK, RockPaperScissors.PAPER, RockPaperScissors.SCISSORS


def play(env: RockPaperScissors, moves: list[tuple[int, int]]) -> list[tuple]:
    steps = []
    for m1, m2 in moves:
        steps.append(env.step({"player1": m1, "player2": m2}))
    return steps


def test_reset_gives_both_players_obs_zero_and_empty_infos():
    env = RockPaperScissors()
    assert env.reset(seed=0) == ({"player1": 0, "player2": 0}, {})
    assert env.agents == ["player1", "player2"]
    assert env.get_observation_space("player1") == env.get_action_space("player2")


@pytest.mark.parametrize(
    ("move1", "move2", "expected"),
    [
        (ROCK, ROCK, (0.0, 0.0)),
        (ROCK, PAPER, (-1.0, 1.0)),
        (ROCK, SCISSORS, (1.0, -1.0)),
        (PAPER, ROCK, (1.0, -1.0)),
        (PAPER, PAPER, (0.0, 0.0)),
        (PAPER, SCISSORS, (-1.0, 1.0)),
        (SCISSORS, ROCK, (-1.0, 1.0)),
        (SCISSORS, PAPER, (1.0, -1.0)),
        (SCISSORS, SCISSORS, (0.0, 0.0)),
    ],
)
def test_each_move_pays_the_win_matrix_and_shows_the_opponents_move(move1, move2, expected):
    env = RockPaperScissors()
    env.reset(seed=0)
    obs, rewards, terminateds, truncateds, infos = env.step({"player1": move1, "player2": move2})
    assert obs == {"player1": move2, "player2": move1}
    assert (rewards["player1"], rewards["player2"]) == expected
    assert terminateds == {ALL: False} and truncateds == {ALL: False} and infos == {}


def test_all_rock_game_returns_zero_and_ends_after_exactly_ten_moves():
    env = RockPaperScissors()
    env.reset(seed=0)
    steps = play(env, [(ROCK, ROCK)] * 10)
    assert [s[2][ALL] for s in steps] == [False] * 9 + [True]
    assert all(s[3] == {ALL: False} for s in steps)
    assert sum(s[1]["player1"] for s in steps) == 0.0 == sum(s[1]["player2"] for s in steps)
    assert env.agents == []


def test_paper_against_rock_wins_ten_points_over_a_game():
    env = RockPaperScissors()
    env.reset(seed=0)
    steps = play(env, [(PAPER, ROCK)] * 10)
    assert sum(s[1]["player1"] for s in steps) == 10.0
    assert sum(s[1]["player2"] for s in steps) == -10.0


def test_numpy_integer_actions_give_plain_int_observations_and_float_rewards():
    env = RockPaperScissors()
    env.reset(seed=0)
    obs, rewards, *_ = env.step({"player1": np.int64(PAPER), "player2": np.array(SCISSORS)})
    assert obs == {"player1": SCISSORS, "player2": PAPER}
    assert all(type(o) is int for o in obs.values())
    assert all(type(r) is float for r in rewards.values())


def test_num_moves_config_sets_the_episode_length_and_accepts_an_env_context():
    env = RockPaperScissors(EnvContext({"num_moves": 3}, worker_index=1))
    env.reset(seed=0)
    steps = play(env, [(ROCK, PAPER)] * 3)
    assert [s[2][ALL] for s in steps] == [False, False, True]


def test_reset_after_the_end_starts_a_new_game():
    env = RockPaperScissors({"num_moves": 1})
    env.reset(seed=0)
    play(env, [(ROCK, ROCK)])
    assert env.reset() == ({"player1": 0, "player2": 0}, {})
    assert env.agents == ["player1", "player2"]
    assert play(env, [(PAPER, ROCK)])[0][1] == {"player1": 1.0, "player2": -1.0}


def test_step_before_reset_raises():
    with pytest.raises(ResetNeededError, match=r"RockPaperScissors.step\(\) .* reset\(\) has not been called"):
        RockPaperScissors().step({"player1": 0, "player2": 0})


def test_step_after_the_end_raises():
    env = RockPaperScissors({"num_moves": 2})
    env.reset(seed=0)
    play(env, [(ROCK, ROCK)] * 2)
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({"player1": 0, "player2": 0})


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"player1": ROCK}, r"Bad action for 'player2'.*Add an action for 'player2'"),
        ({}, r"Bad action for 'player1'.*Add an action for 'player1', 'player2'"),
        ({"player1": 0, "player2": 0, "player3": 0}, r"'player3' is not an agent of RockPaperScissors"),
        ({"player1": 3, "player2": 0}, r"for 'player1': got 3, expected an action in Discrete\(3\)"),
        ({"player1": 0, "player2": -1}, r"for 'player2': got -1.*not an integer in \[0, 2\]"),
        ({"player1": 1.0, "player2": 0}, r"for 'player1': got 1.0.*\(float\)"),
        ({"player1": "rock", "player2": 0}, r"for 'player1': got 'rock'"),
        ([0, 0], r"in the action dict: got \[0, 0\], expected a dict"),
    ],
)
def test_bad_action_dicts_raise_and_leave_the_env_unchanged(actions, match):
    env = RockPaperScissors({"num_moves": 2})
    env.reset(seed=0)
    play(env, [(ROCK, PAPER)])
    with pytest.raises(ActionError, match=match):
        env.step(actions)
    assert env.num_moves == 1 and env.last_move == (ROCK, PAPER)
    assert env.agents == ["player1", "player2"]
    # The rejected step did not count: one more move still ends the game, with its own result.
    obs, rewards, terminateds, _, _ = env.step({"player1": SCISSORS, "player2": PAPER})
    assert obs == {"player1": PAPER, "player2": SCISSORS}
    assert rewards == {"player1": 1.0, "player2": -1.0} and terminateds[ALL]


def test_unknown_config_key_lists_the_accepted_ones():
    with pytest.raises(ConfigError, match=r"unknown key 'moves'\. Accepted keys: 'num_moves'"):
        RockPaperScissors({"moves": 5})


@pytest.mark.parametrize("bad", [0, -1, "10", 2.5, True, None])
def test_bad_num_moves_is_a_config_error(bad):
    with pytest.raises(ConfigError, match=r"'num_moves' must be an integer >= 1"):
        RockPaperScissors({"num_moves": bad})


def test_non_dict_config_is_a_config_error():
    with pytest.raises(ConfigError, match="config must be a dict, got list"):
        RockPaperScissors([("num_moves", 3)])  # type: ignore[arg-type]


def test_render_describes_the_last_move():
    env = RockPaperScissors()
    env.reset(seed=0)
    assert env.render() == "move 0/10: nobody has moved yet"
    play(env, [(SCISSORS, ROCK)])
    assert env.render() == "move 1/10: player1 SCISSORS vs player2 ROCK -> player2 wins"


@pytest.mark.parametrize("seed", range(5))
def test_contract_holds_and_seeded_episodes_replay(contract, seed):
    first = contract(RockPaperScissors(), seed)
    again = contract(RockPaperScissors(), seed)
    assert first.trajectory == again.trajectory
    assert first.ended_by == "terminated" and len(first.trajectory) == 11
    assert set(first.actor_counts) == {2}
