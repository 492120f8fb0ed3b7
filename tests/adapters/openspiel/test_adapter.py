"""OpenSpiel -> hub: from_openspiel / OpenSpielEnv on real pyspiel games."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from marlhub.adapters import to_hub  # noqa: E402
from marlhub.adapters.openspiel import (  # noqa: E402
    OpenSpielEnv,
    OpenSpielText,
    compare_with_native,
    from_openspiel,
    is_openspiel_object,
)
from marlhub.conformance import check  # noqa: E402
from marlhub.core import ALL, COMMON  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ActionError,
    ConfigError,
    EnvContractError,
    ResetNeededError,
    UnknownEnvError,
)
from marlhub.spaces import ActionSampler, find_action_mask  # noqa: E402


def play(env: Any, seed: int, sampler: ActionSampler) -> dict[str, Any]:
    """One episode of random legal actions; returns the trace and the summed rewards."""
    obs, infos = env.reset(seed=seed)
    trace: list[Any] = [sorted(obs, key=str)]
    sums = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while True:
        actions = {
            a: sampler.sample(a, env.get_action_space(a), find_action_mask(o, infos.get(a)))
            for a, o in obs.items()
        }
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        steps += 1
        for agent, reward in rewards.items():
            sums[agent] += reward
        trace.append((actions, rewards, terminateds[ALL], truncateds[ALL]))
        if terminateds[ALL] or truncateds[ALL]:
            return {"sums": sums, "trace": trace, "steps": steps, "last": (obs, rewards,
                    terminateds, truncateds, infos)}


# Table of games: the list, a chance-heavy one, and the eight where summing
# state.rewards() differs from returns() (only the change in returns() is right).
GAMES = [
    "kuhn_poker", "leduc_poker", "tic_tac_toe", "connect_four", "goofspiel",
    "first_sealed_auction", "2048", "hanabi", "backgammon", "pig",
    "coop_box_pushing", "cribbage", "laser_tag", "solitaire", "stones_and_gems",
    "python_iterated_prisoners_dilemma", "kuhn_poker(players=3)",
]


@pytest.mark.parametrize("game", GAMES)
def test_summed_rewards_equal_the_games_returns_exactly(game: str) -> None:
    env = from_openspiel(game, max_steps=3000)
    sampler = ActionSampler(0)
    for seed in range(3):
        result = play(env, seed, sampler)
        returns = env.state.returns()
        assert [result["sums"][a] for a in env.possible_agents] == list(returns), game
        obs, rewards, terminateds, truncateds, _ = result["last"]
        # The end reaches every player: final obs, rewards and done flags.
        assert set(obs) == set(rewards) == set(env.possible_agents)
        assert all(terminateds[a] for a in env.possible_agents) == env.state.is_terminal()
        assert env.agents == []


@pytest.mark.parametrize("game", GAMES[:10])
def test_conforms_to_the_contract(game: str) -> None:
    report = check(lambda: from_openspiel(game, max_steps=500), episodes=4, name=game)
    assert report.ok, str(report)


def test_rllib_layout_conforms_too() -> None:
    report = check(lambda: OpenSpielEnv("leduc_poker"), episodes=4, name="rllib layout")
    assert report.ok, str(report)


@pytest.mark.parametrize("game", ["leduc_poker", "backgammon", "goofspiel", "negotiation", "tarok"])
def test_same_seed_same_episode_other_seed_other_episode(game: str) -> None:
    env = from_openspiel(game)
    first = play(env, 7, ActionSampler(1))
    history = env.state.history()
    again = play(env, 7, ActionSampler(1))
    assert again["trace"] == first["trace"] or _same(again["trace"], first["trace"])
    assert env.state.history() == history
    histories = set()
    for seed in range(6):
        play(env, seed, ActionSampler(1))
        histories.add(tuple(env.state.history()))
    assert len(histories) > 1, "the seed does not reach the chance nodes"


def _same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b)


def test_sampled_stochastic_games_keep_their_parameters_when_reseeded() -> None:
    env = from_openspiel("negotiation(num_items=4)")
    env.reset(seed=3)
    assert env.game.get_parameters()["num_items"] == 4
    assert env.source_game.get_parameters()["rng_seed"] == -1


def test_a_game_with_its_own_generator_starts_from_the_os_when_never_seeded() -> None:
    # bridge_uncontested_bidding deals from the game's own generator (rng_seed): unseeded,
    # every run dealt the same hands; reset(seed=None) draws the seed from the OS now.
    deals = {str(from_openspiel("bridge_uncontested_bidding").reset()[0]["player_0"]
                 ["observation"].tolist()) for _ in range(3)}
    assert len(deals) == 3
    seeded = [from_openspiel("bridge_uncontested_bidding") for _ in range(2)]
    first = [str(env.reset(seed=5)[0]["player_0"]["observation"].tolist()) for env in seeded]
    then = [str(env.reset()[0]["player_0"]["observation"].tolist()) for env in seeded]
    assert first[0] == first[1] and then[0] == then[1]  # after a seed, the generator goes on


def test_sequential_node_one_actor_whose_obs_is_its_tensor_and_mask() -> None:
    env = from_openspiel("leduc_poker")
    obs, infos = env.reset(seed=0)
    while True:
        state = env.state
        (agent,) = obs
        player = state.current_player()
        assert agent == f"player_{player}" and env.actors == [agent]
        np.testing.assert_array_equal(obs[agent]["observation"],
                                      np.asarray(state.observation_tensor(player), np.float32))
        assert obs[agent]["observation"].dtype == np.float32
        assert obs[agent]["action_mask"].dtype == np.int8
        assert list(np.flatnonzero(obs[agent]["action_mask"])) == state.legal_actions(player)
        assert infos == {}
        action = state.legal_actions(player)[-1]
        obs, rewards, terminateds, _, infos = env.step({agent: action})
        assert set(rewards) == {"player_0", "player_1"}
        if terminateds[ALL]:
            break


def test_simultaneous_node_every_player_acts_with_apply_actions() -> None:
    env = from_openspiel("goofspiel(num_cards=4)")
    obs, _ = env.reset(seed=0)
    assert sorted(obs) == ["player_0", "player_1"]
    turns = 0
    while True:
        actions = {a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in obs.items()}
        obs, rewards, terminateds, _, _ = env.step(actions)
        turns += 1
        if terminateds[ALL]:
            break
        assert sorted(obs) == ["player_0", "player_1"]
    # Every bid but the last, which is forced: the game's end, not a step counter's.
    assert turns == 3 and env.state.is_terminal()


def test_first_sealed_auction_is_played_to_its_end() -> None:
    env = from_openspiel("first_sealed_auction")
    result = play(env, 0, ActionSampler(0))
    assert env.state.is_terminal() and result["steps"] == 2


def test_observation_kinds_are_selectable() -> None:
    leduc = pyspiel.load_game("leduc_poker")
    info = from_openspiel(leduc, observation="information_state_tensor")
    obs, _ = info.reset(seed=0)
    (agent,) = obs
    expected = info.state.information_state_tensor(info.player(agent))
    np.testing.assert_array_equal(obs[agent]["observation"], np.asarray(expected, np.float32))
    text = from_openspiel(leduc, observation="string")
    obs, _ = text.reset(seed=0)
    (agent,) = obs
    assert obs[agent]["observation"] == text.state.observation_string(0)
    assert isinstance(text.get_observation_space(agent)["observation"], OpenSpielText)
    assert text.observation_kind == "observation_string"
    assert from_openspiel("liars_dice_ir").observation_kind == "information_state_string"
    assert from_openspiel("battleship").observation_kind == "information_state_tensor"


def test_python_games_are_read_through_their_own_observers() -> None:
    env = from_openspiel("python_liars_poker")
    obs, _ = env.reset(seed=1)
    (agent,) = obs
    player = env.player(agent)
    expected = np.asarray(env.state.observation_tensor(player), np.float32)
    np.testing.assert_array_equal(obs[agent]["observation"], expected)
    assert from_openspiel("python_iterated_prisoners_dilemma").observation_kind == (
        "observation_string"
    )


def test_agent_ids_names_int_or_given() -> None:
    assert from_openspiel("kuhn_poker").possible_agents == ["player_0", "player_1"]
    assert from_openspiel("kuhn_poker", agent_ids="int").possible_agents == [0, 1]
    env = from_openspiel("kuhn_poker", agent_ids=["alice", "bob"])
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["alice"] and env.player("bob") == 1 and env.agent_id(0) == "alice"
    with pytest.raises(ConfigError, match="agent_ids has 3 ids .* for 2 players"):
        from_openspiel("kuhn_poker", agent_ids=["a", "b", "c"])
    with pytest.raises(ConfigError, match="agent_ids='nums' is not 'int', 'names'"):
        from_openspiel("kuhn_poker", agent_ids="nums")


def test_openspielenv_is_rllibs_layout() -> None:
    env = OpenSpielEnv(pyspiel.load_game("connect_four"))
    obs, infos = env.reset(seed=0)
    assert list(obs) == [0] and obs[0].shape == (126,) and obs[0].dtype == np.float32
    assert infos[0]["action_mask"].tolist() == [1] * 7
    obs, rewards, terminateds, truncateds, infos = env.step({0: 3})
    assert list(obs) == [1] and rewards == {0: 0.0, 1: 0.0}
    assert terminateds == {ALL: False} and truncateds == {ALL: False}


def test_game_parameters_survive_reset() -> None:
    env = from_openspiel("kuhn_poker", params={"players": 3})
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        assert env.state.get_game().num_players() == 3
        assert str(env.state.get_game()) == "kuhn_poker(players=3)"
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert str(from_openspiel("goofspiel(num_cards=4)", params={"num_cards": 5}).game) == (
        "goofspiel(num_cards=5)"
    )


def test_max_steps_counts_every_step_not_chance_nodes() -> None:
    env = from_openspiel("backgammon", max_steps=3)
    obs, _ = env.reset(seed=0)
    for step in range(3):
        actions = {a: int(np.flatnonzero(o["action_mask"])[0]) for a, o in obs.items()}
        obs, rewards, terminateds, truncateds, _ = env.step(actions)
    assert truncateds == {"player_0": True, "player_1": True, ALL: True}
    assert terminateds[ALL] is False and set(obs) == {"player_0", "player_1"}
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step(actions)


def test_env_state_is_the_live_pyspiel_state() -> None:
    env = from_openspiel("tic_tac_toe")
    assert env.state is None
    env.reset(seed=0)
    env.step({"player_0": 4})
    assert isinstance(env.state, pyspiel.State) and env.state.history() == [4]
    assert env.render() == str(env.state)


def test_start_state_starts_every_episode() -> None:
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    state.apply_action(4)
    env = from_openspiel(state)
    for seed in range(2):
        obs, _ = env.reset(seed=seed)
        assert list(obs) == ["player_1"] and env.state.history() == [4]
        env.step({"player_1": 0})
    assert state.history() == [4]  # the given state is never touched


def test_deepcopy_continues_identically() -> None:
    env = from_openspiel("leduc_poker")
    obs, _ = env.reset(seed=3)
    twin = copy.deepcopy(env)
    (agent,) = obs
    a = env.step({agent: 1})
    b = twin.step({agent: 1})
    assert repr(a) == repr(b) and twin.state is not env.state


# -- illegal actions -------------------------------------------------------------


def test_illegal_action_raises_listing_legal_ones_and_keeps_the_state() -> None:
    env = from_openspiel("tic_tac_toe")
    env.reset(seed=0)
    env.step({"player_0": 4})
    with pytest.raises(ActionError, match=r"got 4, expected a legal action; the legal ones are "
                       r"\[0 \(o\(0,0\)\), 1 \(o\(0,1\)\).*state was not changed") as info:
        env.step({"player_1": 4})
    assert info.value.agent_id == "player_1"
    assert env.state.history() == [4] and env.actors == ["player_1"]
    env.step({"player_1": 0})  # still playable
    assert env.state.history() == [4, 0]


def test_illegal_action_in_a_simultaneous_step_applies_nothing() -> None:
    env = from_openspiel("goofspiel(num_cards=4)")
    obs, _ = env.reset(seed=0)
    env.step({"player_0": 0, "player_1": 1})
    history = env.state.history()
    with pytest.raises(ActionError, match="legal ones are"):
        env.step({"player_0": 2, "player_1": 1})  # player_1 already bid card 1
    assert env.state.history() == history


def test_illegal_action_substitute_penalizes_like_rllib() -> None:
    env = from_openspiel("tic_tac_toe", illegal_action="substitute")
    env.reset(seed=0)
    env.step({"player_0": 4})
    obs, rewards, terminateds, _, infos = env.step({"player_1": 4})
    assert rewards["player_1"] == pytest.approx(-0.1) and rewards["player_0"] == 0.0
    assert infos[COMMON] == {"illegal_actions": {"player_1": 4}}
    assert len(env.state.history()) == 2 and env.state.history()[1] != 4
    assert list(obs) == ["player_0"] and not terminateds[ALL]


def test_illegal_action_terminate_like_pettingzoo() -> None:
    env = from_openspiel("tic_tac_toe", illegal_action="terminate", illegal_reward=-5)
    env.reset(seed=0)
    env.step({"player_0": 4})
    obs, rewards, terminateds, _, infos = env.step({"player_1": 4})
    assert rewards == {"player_0": 0.0, "player_1": -5.0}
    assert terminateds[ALL] and set(obs) == {"player_0", "player_1"}
    assert env.state.history() == [4]


# -- malformed action dicts: always ActionError, state unchanged ---------------------


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({}, r"Bad action for 'player_0': got \{\}, expected an action for every actor"),
        ({"player_1": 0}, r"'player_1' did not receive an observation in the last step"),
        ({"player_0": 0, "player_1": 0}, r"'player_1' did not receive an observation"),
        ({"dealer": 0}, r"'dealer' is not an agent of tic_tac_toe\(\)"),
        ({"player_0": 9}, r"got 9, expected an action in Discrete\(9\) \(9 \(int\) is not an "
                          r"integer in \[0, 8\]\)"),
        ({"player_0": -1}, r"got -1, expected an action in Discrete\(9\)"),
        ({"player_0": True}, r"got True, expected an action in Discrete\(9\) \(True is a bool"),
        ({"player_0": 1.0}, r"1.0 \(float\) is not an integer"),
        ({"player_0": "4"}, r"'4' \(str\) is not an integer"),
        ({"player_0": np.array([4])}, r"array\(\[4\]\) \(ndarray\) is not an integer"),
        ([4], r"Bad action in the action dict: got \[4\], expected a dict mapping each actor"),
    ],
)
def test_malformed_actions_raise_and_leave_the_state(actions: Any, match: str) -> None:
    env = from_openspiel("tic_tac_toe")
    env.reset(seed=0)
    with pytest.raises(ActionError, match=match):
        env.step(actions)
    assert env.state.history() == []
    env.step({"player_0": np.int64(4)})  # numpy integers are fine
    assert env.state.history() == [4]


def test_missing_actor_in_a_simultaneous_step() -> None:
    env = from_openspiel("matrix_rps")
    env.reset(seed=0)
    with pytest.raises(ActionError, match=r"'player_1'.*an action for every actor"):
        env.step({"player_0": 0})


def test_step_before_reset_and_after_the_end() -> None:
    env = from_openspiel("matrix_rps")
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called yet"):
        env.step({"player_0": 0, "player_1": 0})
    env.reset(seed=0)
    _, rewards, terminateds, _, _ = env.step({"player_0": 0, "player_1": 1})
    assert terminateds[ALL] and rewards == {"player_0": -1.0, "player_1": 1.0}
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({"player_0": 0, "player_1": 0})


# -- games and options that cannot be adapted -----------------------------------------


def test_unknown_game_suggests_close_names() -> None:
    with pytest.raises(UnknownEnvError, match=r"'kuhn_pokr'.*Did you mean 'kuhn_poker'"):
        from_openspiel("kuhn_pokr")


def test_unknown_parameter_lists_the_accepted_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown parameter 'player' for OpenSpiel game "
                       r"'kuhn_poker'\. kuhn_poker accepts: players=2 \(int\)") as info:
        from_openspiel("kuhn_poker(player=3)")
    assert info.value.unknown == ["player"] and info.value.accepted == ["players"]


def test_mistyped_parameter_and_missing_parameter() -> None:
    with pytest.raises(ConfigError, match=r"parameter 'players' must be int, got 'three'"):
        from_openspiel("kuhn_poker", params={"players": "three"})
    assert from_openspiel("kuhn_poker", params={"players": "3"}).num_players == 3
    with pytest.raises(ConfigError, match=r"OpenSpiel cannot build this game: .*Missing "
                       r"parameter game"):
        from_openspiel("turn_based_simultaneous_game")
    with pytest.raises(ConfigError, match="not a valid OpenSpiel game string"):
        from_openspiel("kuhn_poker(players=3")


def test_mean_field_games_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"mean-field games .* cannot be played as a "
                       r"multi-agent env\. Use open_spiel.python.mfg"):
        from_openspiel("mfg_crowd_modelling")


def test_games_without_integer_actions_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"num_distinct_actions\(\)=0: .*action structs"):
        from_openspiel("crossword")


def test_a_game_whose_legal_actions_exceed_its_action_space_raises_not_crashes() -> None:
    env = from_openspiel("chat_game")
    with pytest.raises(EnvContractError, match=r"legal actions \[0, 1, 2.*"
                       r"num_distinct_actions\(\)=2"):
        env.reset(seed=0)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"observation": "pixels"}, r"observation='pixels' is not a kind"),
        ({"observation": "information_state_tensor"},
         r"observation='information_state_tensor' is not available .*"
         r"provides_information_state_tensor=False"),
        ({"max_steps": 0}, r"max_steps=0 is not a positive integer"),
        ({"illegal_action": "ignore"}, r"illegal_action='ignore' is not a known mode"),
        ({"action_mask": "both"}, r"action_mask='both' is not 'obs' or 'info'"),
    ],
)
def test_bad_options(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        from_openspiel("tic_tac_toe", **options)


def test_terminal_start_state_is_refused() -> None:
    state = pyspiel.load_game("matrix_rps").new_initial_state()
    state.apply_actions([0, 0])
    with pytest.raises(ConfigError, match="the start state is terminal"):
        from_openspiel(state)


def test_spaces_are_the_same_objects_for_every_call() -> None:
    env = from_openspiel("leduc_poker")
    assert env.get_observation_space("player_0") is env.get_observation_space("player_1")
    assert env.get_action_space("player_0").n == 3
    with pytest.raises(KeyError):
        env.get_action_space("player_9")


# -- detection -------------------------------------------------------------------------


def test_is_openspiel_object_and_to_hub() -> None:
    game = pyspiel.load_game("kuhn_poker")
    assert is_openspiel_object(game) and is_openspiel_object(game.new_initial_state())
    assert is_openspiel_object(pyspiel.load_game("python_tic_tac_toe"))
    assert not is_openspiel_object("kuhn_poker")
    assert not is_openspiel_object(from_openspiel(game))
    env = to_hub(game)
    assert isinstance(env, OpenSpielEnv) and env.possible_agents == ["player_0", "player_1"]


# -- games that observe only in text: UTF-8 bytes by default, the text on request ------


@pytest.mark.parametrize("name", ["coin_game", "liars_dice_ir", "phantom_ttt_ir",
                                  "python_iterated_prisoners_dilemma"])
def test_text_only_games_observe_utf8_bytes_that_decode_to_the_text(name: str) -> None:
    env = from_openspiel(name)
    space = env.get_observation_space("player_0")["observation"]
    assert space.dtype == np.uint8 and space.shape[0] >= 64
    obs, _ = env.reset(seed=0)
    for agent, value in obs.items():
        text = env.observer.native(env.state, env.player(agent))
        assert space.contains(value["observation"]) and (value["observation"] == text).all()
        kind = env.observation_kind
        raw = getattr(env.state, kind)(env.player(agent)).encode("utf-8")
        assert bytes(value["observation"][: len(raw)]) == raw[: space.shape[0]]
    assert compare_with_native(name, episodes=2) == []


def test_the_text_itself_on_request() -> None:
    env = from_openspiel("coin_game", observation="string")
    obs, _ = env.reset(seed=0)
    assert all(isinstance(v["observation"], str) for v in obs.values())


def test_text_games_pass_pettingzoos_api_test_through_the_hub() -> None:
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import api_test

    from marlhub.adapters.pettingzoo import to_pettingzoo

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on Dict observation spaces
        api_test(to_pettingzoo(from_openspiel("coin_game")), num_cycles=20,
                 verbose_progress=False)
