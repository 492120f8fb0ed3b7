"""TicTacToe: the RLlib docs' code rules (+5/-5), seeded start player, truncation, every error."""

from __future__ import annotations

import numpy as np
import pytest

from marlhub.core import ALL
from marlhub.envs import TicTacToe
from marlhub.errors import ActionError, ConfigError, ResetNeededError

P1, P2 = "player1", "player2"


def start_with(player: str, config: dict | None = None) -> TicTacToe:
    """Return an env reset with the first seed whose start player is ``player``."""
    for seed in range(100):
        env = TicTacToe(config)
        obs, _ = env.reset(seed=seed)
        if list(obs) == [player]:
            return env
    raise AssertionError(f"no seed below 100 lets {player} start")


def play(env: TicTacToe, fields: list[int]) -> list[tuple]:
    """Play ``fields`` alternately, starting with the current player."""
    steps = []
    for field in fields:
        steps.append(env.step({env.current_player: field}))
    return steps


def board(**pieces: list[int]) -> np.ndarray:
    expected = np.zeros(9, np.float32)
    expected[pieces.get("x", [])] = 1.0
    expected[pieces.get("o", [])] = -1.0
    return expected


def test_reset_gives_only_the_start_player_an_empty_board():
    env = TicTacToe()
    obs, infos = env.reset(seed=0)
    (player,) = obs
    assert player in (P1, P2) and infos == {}
    assert obs[player].dtype == np.float32 and not obs[player].any()
    assert env.agents == [P1, P2]


def test_start_player_is_drawn_from_the_seed():
    starts = [next(iter(TicTacToe().reset(seed=s)[0])) for s in range(20)]
    assert set(starts) == {P1, P2}
    assert starts == [next(iter(TicTacToe().reset(seed=s)[0])) for s in range(20)]


def test_unseeded_resets_continue_the_seeded_generator():
    a, b = TicTacToe(), TicTacToe()
    a.reset(seed=7)
    b.reset(seed=7)
    assert [list(a.reset()[0]) for _ in range(10)] == [list(b.reset()[0]) for _ in range(10)]


def test_observation_is_the_raw_board_for_both_players():
    env = start_with(P1)
    (obs, *_), (obs2, *_) = play(env, [0, 3])
    np.testing.assert_array_equal(obs[P2], board(x=[0]))
    np.testing.assert_array_equal(obs2[P1], board(x=[0], o=[3]))


@pytest.mark.parametrize(
    ("starter", "fields", "line"),
    [
        (P1, [0, 3, 1, 4, 2], "row"),
        (P1, [1, 0, 4, 2, 7], "column"),
        (P1, [0, 1, 4, 2, 8], "diagonal 0-4-8 (the docs' code misses it)"),
        (P2, [2, 0, 4, 1, 6], "anti-diagonal 2-4-6"),
    ],
)
def test_a_line_wins_plus_five_for_the_mover_minus_five_for_the_opponent(starter, fields, line):
    env = start_with(starter)
    steps = play(env, fields)
    loser = P2 if starter == P1 else P1
    for obs, rewards, terminateds, truncateds, _ in steps[:-1]:
        assert not terminateds[ALL] and truncateds == {ALL: False}
    obs, rewards, terminateds, truncateds, infos = steps[-1]
    assert rewards == {starter: 5.0, loser: -5.0}, line
    assert terminateds == {ALL: True} and truncateds == {ALL: False}
    # Both get the final board, the winner too (done.final_obs: RLlib's sampler loses the
    # winner's last move and +5 otherwise when a sample ends inside the episode).
    assert list(obs) == [loser, starter] and infos == {}
    np.testing.assert_array_equal(obs[starter], obs[loser])
    assert env.agents == []


def test_occupied_field_costs_five_keeps_the_board_and_passes_the_turn():
    env = start_with(P1)
    play(env, [4])
    obs, rewards, terminateds, truncateds, _ = env.step({P2: 4})
    assert rewards == {P2: -5.0}
    assert list(obs) == [P1] and env.current_player == P1
    np.testing.assert_array_equal(obs[P1], board(x=[4]))
    assert terminateds == {ALL: False} and truncateds == {ALL: False}


def test_full_board_without_a_line_ends_with_zero():
    env = start_with(P1)
    steps = play(env, [0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert all(not s[2][ALL] for s in steps[:-1])
    obs, rewards, terminateds, truncateds, _ = steps[-1]
    assert rewards == {P1: 0.0} and terminateds == {ALL: True} and truncateds == {ALL: False}
    np.testing.assert_array_equal(obs[P2], board(x=[0, 2, 3, 7, 8], o=[1, 4, 5, 6]))
    np.testing.assert_array_equal(obs[P1], obs[P2])


def test_without_max_steps_occupied_moves_never_end_the_game():
    env = start_with(P1)
    play(env, [0])
    steps = play(env, [0] * 200)
    assert not any(s[2][ALL] or s[3][ALL] for s in steps)
    assert sum(s[1].get(P1, 0.0) + s[1].get(P2, 0.0) for s in steps) == -1000.0


def test_max_steps_truncates_with_the_last_obs_for_both_players():
    env = start_with(P1, {"max_steps": 3})
    steps = play(env, [0, 0, 0])
    obs, rewards, terminateds, truncateds, _ = steps[-1]
    assert truncateds == {ALL: True} and terminateds == {ALL: False}
    assert sorted(obs) == [P1, P2] and rewards == {P1: -5.0}
    np.testing.assert_array_equal(obs[P1], board(x=[0]))
    assert env.agents == []


def test_a_win_on_the_last_allowed_step_terminates_rather_than_truncates():
    env = start_with(P1, {"max_steps": 5})
    obs, rewards, terminateds, truncateds, _ = play(env, [0, 3, 1, 4, 2])[-1]
    assert terminateds == {ALL: True} and truncateds == {ALL: False}
    assert list(obs) == [P2, P1]


def test_step_before_reset_raises():
    with pytest.raises(ResetNeededError, match=r"TicTacToe.step\(\) .* reset\(\) has not been called"):
        TicTacToe().step({P1: 0})


def test_step_after_the_end_raises():
    env = start_with(P1)
    play(env, [0, 3, 1, 4, 2])
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({P2: 5})


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({P2: 5}, r"Bad action for 'player2'.*did not receive an observation in the last step"),
        ({P1: 5, P2: 5}, r"Bad action for 'player2'.*actions only for the actors \['player1'\]"),
        ({}, r"Bad action for 'player1'.*Add an action for 'player1'"),
        ({"player3": 0}, r"'player3' is not an agent of TicTacToe; its agents are \['player1', 'player2'\]"),
        ({P1: 9}, r"for 'player1': got 9, expected an action in Discrete\(9\)"),
        ({P1: np.array([1])}, r"for 'player1'.*expected an action in Discrete\(9\)"),
    ],
)
def test_bad_action_dicts_raise_and_leave_the_env_unchanged(actions, match):
    env = start_with(P1)
    play(env, [4, 0])
    before = (list(env.board), env.current_player, env.num_steps)
    with pytest.raises(ActionError, match=match):
        env.step(actions)
    assert (list(env.board), env.current_player, env.num_steps) == before
    obs, rewards, *_ = env.step({P1: 8})
    np.testing.assert_array_equal(obs[P2], board(x=[4, 8], o=[0]))


def test_unknown_config_key_lists_the_accepted_ones():
    with pytest.raises(ConfigError, match=r"unknown key 'max_step'\. Accepted keys: 'max_steps'"):
        TicTacToe({"max_step": 5})


@pytest.mark.parametrize("bad", [0, -3, 2.0, "9", False])
def test_bad_max_steps_is_a_config_error(bad):
    with pytest.raises(ConfigError, match=r"'max_steps' must be an integer >= 1 or None"):
        TicTacToe({"max_steps": bad})


def test_render_draws_the_board():
    env = start_with(P2)
    assert TicTacToe().render() == "no game yet: call reset()"
    play(env, [4, 0])
    assert env.render() == "X . .\n. O .\n. . .\nplayer2 to move"


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("config", [None, {"max_steps": 6}])
def test_contract_holds_and_seeded_episodes_replay(contract, seed, config):
    first = contract(TicTacToe(config), seed)
    again = contract(TicTacToe(config), seed)
    assert first.trajectory == again.trajectory
    assert set(first.actor_counts) <= {1}


def test_contract_runs_end_both_by_termination_and_truncation(contract):
    ends = {contract(TicTacToe({"max_steps": 12}), seed).ended_by for seed in range(30)}
    assert ends == {"terminated", "truncated"}


def test_the_global_state_is_the_board_and_who_moves_next():
    env = TicTacToe()
    assert env.state().tolist() == [0.0] * 10
    obs, _ = env.reset(seed=3)
    first = next(iter(obs))
    sign = 1.0 if first == "player1" else -1.0
    assert env.state().tolist() == [0.0] * 9 + [sign]
    env.step({first: 4})
    state = env.state()
    assert env.state_space.contains(state)
    assert state[4] == sign and state[9] == -sign
    np.testing.assert_array_equal(state[:9], env._obs())
