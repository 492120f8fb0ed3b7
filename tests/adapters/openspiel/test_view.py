"""hub -> OpenSpiel: to_openspiel registers hub envs as pyspiel Python games; round trips;
OpenSpiel's own checkers and algorithms (random_sim_test, MCTS, get_all_states, CFR) on hub envs
of every family."""

from __future__ import annotations

import copy
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from open_spiel.python.algorithms import cfr, exploitability, get_all_states, mcts  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.openspiel import (  # noqa: E402
    compare_with_native,
    from_openspiel,
    to_openspiel,
)
from marlhub.conformance import check  # noqa: E402
from marlhub.core import ALL, MultiAgentEnv  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic  # noqa: E402
from marlhub.errors import ConfigError, EnvContractError, EnvRegistrationError  # noqa: E402
from marlhub.spaces import ActionSampler, find_action_mask  # noqa: E402
from tests.versions import gymnasium_id  # noqa: E402


class Nim(MultiAgentEnv):
    """Take 1 to 3 from a pile; whoever takes the last wins. The mask forbids taking too many."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.possible_agents = ["first", "second"]
        self.agents = list(self.possible_agents)
        self.observation_spaces = {a: gym.spaces.Dict({
            "observation": gym.spaces.Box(0, 10, (1,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (3,), np.int8),
        }) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(3, start=1) for a in self.possible_agents}

    def _obs(self) -> dict[str, Any]:
        mask = np.array([self.pile >= k for k in (1, 2, 3)], np.int8)
        return {"observation": np.array([self.pile], np.float32), "action_mask": mask}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.pile = int(self.np_random.integers(5, 11))
        self.turn = 0
        self.agents = list(self.possible_agents)
        return {"first": self._obs()}, {}

    def step(self, action_dict: dict) -> Any:
        mover = self.possible_agents[self.turn]
        self.pile -= int(action_dict[mover])
        self.turn = 1 - self.turn
        other = self.possible_agents[self.turn]
        if self.pile <= 0:
            self.agents = []
            return ({mover: self._obs(), other: self._obs()}, {mover: 1.0, other: -1.0},
                    {ALL: True}, {ALL: False}, {})
        return {other: self._obs()}, {mover: 0.0}, {ALL: False}, {ALL: False}, {}


class BoxActions(RockPaperScissors):
    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__(config)
        self.action_spaces = {a: gym.spaces.Box(-1, 1, (2,)) for a in self.possible_agents}


class Relay(MultiAgentEnv):
    """Another hub env's episodes, passed through: a hub env that is not an OpenSpielEnv."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self.possible_agents = list(inner.possible_agents)
        self.agents = []
        self.observation_spaces = {a: inner.get_observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: inner.get_action_space(a) for a in self.possible_agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        obs, infos = self.inner.reset(seed=seed, options=options)
        self.agents = list(self.inner.agents)
        return obs, infos

    def step(self, action_dict: dict) -> Any:
        result = self.inner.step(action_dict)
        self.agents = list(self.inner.agents)
        return result


def flat(env: Any, agent: Any, obs: Any) -> np.ndarray:
    space = env.get_observation_space(agent)
    if isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces:
        space, obs = space["observation"], obs["observation"]
    return np.asarray(gym.spaces.flatten(space, obs), np.float32)


@pytest.mark.parametrize(("cls", "name"), [(TicTacToe, "t_ttt"), (RockPaperScissors, "t_rps"),
                                           (Nim, "t_nim")])
def test_round_trip_matches_the_env_step_for_step(cls: type, name: str) -> None:
    to_openspiel(cls, short_name=name)
    adapted = from_openspiel(name)
    original = cls()
    sampler = ActionSampler(0)
    for episode in range(4):
        obs, _ = adapted.reset(seed=episode)
        assert adapted.state.seed == episode  # the seed passes through
        o_obs, o_infos = original.reset(seed=episode)
        while True:
            assert list(obs) == list(o_obs)
            for agent in obs:
                np.testing.assert_array_equal(obs[agent]["observation"],
                                              flat(original, agent, o_obs[agent]))
            actions = {a: sampler.sample(a, original.get_action_space(a),
                                         find_action_mask(o_obs[a], o_infos.get(a)))
                       for a in o_obs}
            start = {a: original.get_action_space(a).start for a in actions}
            obs, rewards, terms, truncs, _ = adapted.step(
                {a: int(v - start[a]) for a, v in actions.items()})
            o_obs, o_rewards, o_terms, o_truncs, o_infos = original.step(actions)
            assert rewards == {a: float(o_rewards.get(a, 0.0)) for a in original.possible_agents}
            assert terms[ALL] == o_terms[ALL] and truncs[ALL] == o_truncs[ALL]
            if terms[ALL] or truncs[ALL]:
                break


def test_agents_that_come_and_go_keep_their_rewards() -> None:
    to_openspiel(Traffic, short_name="t_traffic")
    env = from_openspiel("t_traffic")
    report = check(lambda: from_openspiel("t_traffic"), episodes=4, name="traffic round trip")
    assert report.ok, str(report)
    assert compare_with_native(env, episodes=3) == []
    assert env.possible_agents == Traffic().possible_agents  # the original ids come back


def test_probe_episodes_that_pay_nobody_do_not_make_a_game_zero_sum() -> None:
    # Sparse rewards (Jumanji's LBF, a scalarized item gathering) often pay nobody in a few
    # random episodes; a sum of 0 there is no evidence, and a zero-sum claim a later
    # episode breaks fails OpenSpiel's own checks.
    class PaysNobodyYet(RockPaperScissors):
        def step(self, action_dict: Any) -> Any:
            obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
            return obs, dict.fromkeys(rewards, 0.0), terminateds, truncateds, infos

    game = to_openspiel(PaysNobodyYet, short_name="t_pays_nobody")
    assert game.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    paid = to_openspiel(RockPaperScissors, short_name="t_rps_paid")
    assert paid.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM


def test_round_trip_the_other_way_hands_back_the_game() -> None:
    game = pyspiel.load_game("leduc_poker")
    assert to_openspiel(from_openspiel(game)) is game
    env = from_openspiel("kuhn_poker(players=3)", observation="string")
    assert to_openspiel(env).num_players() == 3


def test_the_game_type_is_probed_or_declared() -> None:
    rps = to_openspiel(RockPaperScissors, short_name="t_rps_type")
    t = rps.get_type()
    assert t.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS
    assert t.reward_model == pyspiel.GameType.RewardModel.REWARDS
    assert t.utility == pyspiel.GameType.Utility.ZERO_SUM
    assert rps.num_distinct_actions() == 3 and rps.observation_tensor_shape() == [3]
    nim = to_openspiel(Nim, short_name="t_nim_type")
    assert nim.get_type().dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    assert nim.get_type().reward_model == pyspiel.GameType.RewardModel.TERMINAL
    declared = to_openspiel(TicTacToe(), short_name="t_ttt_declared", dynamics="sequential",
                            reward_model="terminal", zero_sum=False, probe_episodes=0,
                            max_game_length=50, utility_range=(-20.0, 5.0))
    assert declared.max_game_length() == 50 and declared.max_utility() == 5.0


def test_states_legal_actions_from_the_mask_and_clones_are_independent() -> None:
    game = to_openspiel(Nim, short_name="t_nim_states")
    state = game.new_initial_state()
    pile = int(state.env.pile)
    assert state.current_player() == 0
    assert state.legal_actions() == [0, 1, 2]  # takes 1, 2, 3 (the space starts at 1)
    np.testing.assert_array_equal(state.observation_tensor(0), [pile])
    clone = state.clone()
    clone.apply_action(2)
    assert state.env.pile == pile and clone.env.pile == pile - 3
    assert clone.history() == [2] and state.history() == []
    assert clone.env.action_spaces["first"] is state.env.action_spaces["first"]
    while not clone.is_terminal():
        clone.apply_action(clone.legal_actions()[-1])
    assert sorted(clone.returns()) == [-1.0, 1.0] and clone.current_player() == -4


def test_seeds_of_new_states_come_from_the_game_parameter() -> None:
    to_openspiel(TicTacToe, short_name="t_ttt_seed")
    game = pyspiel.load_game("t_ttt_seed(seed=5)")
    assert [game.new_initial_state().seed for _ in range(3)] == [5, 6, 7]
    assert pyspiel.load_game("t_ttt_seed").new_initial_state().seed == 0
    env = from_openspiel("t_ttt_seed")
    env.reset(seed=42)
    assert env.state.seed == 42
    env.reset()
    assert env.state.seed == 43


def test_openspiels_own_tests_and_rl_environment_run_on_hub_games() -> None:
    from open_spiel.python import rl_environment

    for cls, name in [(TicTacToe, "t_sim_ttt"), (RockPaperScissors, "t_sim_rps"),
                      (Traffic, "t_sim_traffic")]:
        game = to_openspiel(cls, short_name=name)
        pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)
    env = rl_environment.Environment(pyspiel.load_game("t_sim_rps"))
    time_step = env.reset()
    steps = 0
    while not time_step.last():
        time_step = env.step([0, 1])
        steps += 1
    assert steps == 10 and time_step.rewards == [-1.0, 1.0]


def test_a_deep_copied_env_is_a_fine_template() -> None:
    template = TicTacToe({"max_steps": 4})
    game = to_openspiel(template, short_name="t_ttt_template")
    state = game.new_initial_state()
    assert state.env is not template and state.env.max_steps == 4
    assert game.max_game_length() == 4
    copy.deepcopy(state.env)  # the state's env stays copyable (clone() needs it)


# -- errors -------------------------------------------------------------------------


def test_non_discrete_action_spaces_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"agent 'player1' has the action space Box\(-1.0, 1.0, "
                       r"\(2,\), float32\), but OpenSpiel games have integer actions"):
        to_openspiel(BoxActions, short_name="t_box")


def test_names_of_openspiel_games_and_malformed_names_are_refused() -> None:
    with pytest.raises(EnvRegistrationError, match=r"'tic_tac_toe': OpenSpiel already has a game "
                       r"of that name"):
        to_openspiel(TicTacToe, short_name="tic_tac_toe")
    with pytest.raises(EnvRegistrationError, match=r"'my game': an OpenSpiel short name"):
        to_openspiel(TicTacToe, short_name="my game")
    to_openspiel(TicTacToe, short_name="t_ttt_again")
    to_openspiel(TicTacToe, short_name="t_ttt_again")  # our own names may be registered again


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"dynamics": "turns"}, r"dynamics='turns' is not one of"),
        ({"reward_model": "sparse"}, r"reward_model='sparse' is not one of"),
        ({"probe_episodes": 0}, r"dynamics='auto' needs probe_episodes > 0"),
    ],
)
def test_bad_options(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        to_openspiel(TicTacToe, short_name="t_bad_options", **options)


def test_a_simultaneous_env_declared_sequential_fails_clearly() -> None:
    game = to_openspiel(RockPaperScissors, short_name="t_rps_seq", dynamics="sequential",
                        reward_model="rewards", zero_sum=True, probe_episodes=0)
    with pytest.raises(EnvContractError, match=r"2 agents act in one step, but the OpenSpiel "
                       r"game was registered as sequential"):
        game.new_initial_state().current_player()


# -- OpenSpiel's own checkers and algorithms on hub envs of every family ------------

TAXI = max(k for k in gym.envs.registry if k.startswith("Taxi-"))  # Taxi-v3, or v4 in gymnasium 1.4


@pytest.mark.parametrize(
    ("name", "creator"),
    [
        ("t_rst_ttt", "tic_tac_toe"),
        ("t_rst_rps", "rock_paper_scissors"),
        ("t_rst_traffic", "traffic"),
        ("t_rst_pz_ttt", "pettingzoo/classic/tictactoe-v3"),
        ("t_rst_pz_c4", "pettingzoo/classic/connect_four-v3"),
        ("t_rst_pz_leduc", "pettingzoo/classic/leduc_holdem-v4"),
        ("t_rst_pz_rps", lambda: marlhub.make("pettingzoo/classic/rps-v2", {"api": "parallel"})),
        ("t_rst_lake", lambda: marlhub.make("gymnasium/FrozenLake-v1", {"num_agents": 2})),
        ("t_rst_taxi", lambda: marlhub.make(f"gymnasium/{TAXI}",
                                            {"num_agents": 2, "max_episode_steps": 25})),
        ("t_rst_kuhn", lambda: Relay(marlhub.make("openspiel/kuhn_poker"))),
        ("t_rst_liars", lambda: Relay(marlhub.make("openspiel/liars_dice_ir",
                                                   {"observation": "string"}))),
        ("t_rst_coin", lambda: Relay(marlhub.make("openspiel/coin_game",
                                                  {"observation": "string"}))),
        ("t_rst_coin_bytes", lambda: Relay(marlhub.make("openspiel/coin_game"))),
    ],
)
def test_openspiels_random_sim_test_passes(name: str, creator: Any) -> None:
    # Each step clones the state three times and compares the clones' strings and
    # histories with the original's: clones of PettingZoo (EzPickle) envs must be live.
    game = to_openspiel(creator, short_name=name)
    pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)


def test_text_observations_are_strings_not_tensors() -> None:
    game = to_openspiel(lambda: Relay(marlhub.make("openspiel/liars_dice_ir",
                                                   {"observation": "string"})),
                        short_name="t_liars_text")
    assert game.get_type().provides_observation_string
    assert not game.get_type().provides_observation_tensor
    state = game.new_initial_state()
    inner = state.env.inner
    assert state.observation_string(0) == inner.observer.native(inner.state, 0)
    assert state.observation_string(1) == ""  # player 1 has not observed anything yet


def test_states_of_one_history_are_one_state_as_in_openspiel() -> None:
    options = {"depth_limit": 3, "include_terminals": True, "include_chance_states": False}
    native = get_all_states.get_all_states(pyspiel.load_game("tic_tac_toe"), **options)
    game = to_openspiel("pettingzoo/classic/tictactoe-v3", short_name="t_pz_ttt_states")
    ours = get_all_states.get_all_states(game, **options)
    assert len(ours) == len(native) == 586
    assert set(ours) == set(native)  # the same histories ("0, 4, 8")
    assert len({str(state) for state in ours.values()}) == len(ours)  # and strings tell them apart


@pytest.mark.parametrize(("env_id", "name"), [
    ("pettingzoo/classic/tictactoe-v3", "t_mcts_pz_ttt"),
    ("pettingzoo/classic/connect_four-v3", "t_mcts_pz_c4"),
])
def test_openspiels_mcts_plays_pettingzoo_games(env_id: str, name: str) -> None:
    game = to_openspiel(env_id, short_name=name)
    rng = np.random.RandomState(0)
    bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=20,
                       evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng)
    state = game.new_initial_state()
    for _ in range(4):
        action = bot.step(state)
        assert action in state.legal_actions()
        state.apply_action(action)
    assert len(state.history()) == 4 and not state.is_terminal()


def test_openspiels_mcts_finds_the_winning_move() -> None:
    game = to_openspiel("pettingzoo/classic/tictactoe-v3", short_name="t_mcts_pz_win")
    state = game.new_initial_state()
    for square in (0, 3, 1, 4):  # X on 0 and 1, O on 3 and 4: X wins on 2, O threatens 5
        state.apply_action(square)
    rng = np.random.RandomState(0)
    bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=100,
                       evaluator=mcts.RandomRolloutEvaluator(1, rng), random_state=rng, solve=True)
    assert bot.step(state) == 2
    assert state.history() == [0, 3, 1, 4]  # the search played on clones


def test_openspiel_games_behind_a_factory_or_an_id_come_back_for_cfr() -> None:
    game = to_openspiel(lambda: marlhub.make("openspiel/kuhn_poker"), short_name="t_kuhn_cfr")
    assert str(game) == "kuhn_poker()" and "t_kuhn_cfr" not in pyspiel.registered_names()
    assert str(to_openspiel("openspiel/kuhn_poker")) == "kuhn_poker()"
    solver = cfr.CFRSolver(game)
    for _ in range(50):
        solver.evaluate_and_update_policy()
    assert exploitability.exploitability(game, solver.average_policy()) < 0.05


def test_what_a_hub_game_cannot_do_is_refused_clearly() -> None:
    with pytest.raises(ConfigError, match=r"has the action space Box\(-2.0, 2.0, \(1,\), "
                       r"float32\), but OpenSpiel games have integer actions"):
        to_openspiel(lambda: marlhub.make("gymnasium/Pendulum-v1"), short_name="t_pendulum")
    game = to_openspiel(Nim, short_name="t_nim_cfr")
    with pytest.raises(ConfigError, match=r"an information state \(perfect recall\) was asked "
                       r"for, but a hub env made into an OpenSpiel game has none.*Run them on a "
                       r"native OpenSpiel game"):
        cfr.CFRSolver(game)


def test_reading_observations_of_a_new_state_builds_no_other_env() -> None:
    made: list[Nim] = []

    def make() -> Nim:
        made.append(Nim())
        return made[-1]

    game = to_openspiel(make, short_name="t_nim_lazy")
    made.clear()
    state = game.new_initial_state()
    for _ in range(5):  # OpenSpiel sizes each tensor with a new state of its own
        state.observation_tensor(0)
        state.observation_string(0)
    assert len(made) == 1 and state.seed == 0
    fresh = game.new_initial_state()
    twin = fresh.clone()  # a clone of a new state starts the same episode
    assert fresh.seed == twin.seed == 1 and str(fresh) == str(twin)
    assert game.new_initial_state().seed == 2


def test_an_unbounded_env_ends_at_the_games_declared_length() -> None:
    # CliffWalking has no time limit: its random episodes can outlast any bound.
    game = to_openspiel(lambda: marlhub.make("gymnasium/" + gymnasium_id("CliffWalking")),
                        short_name="t_cliff_bounded", max_game_length=30)
    assert game.max_game_length() == 30
    state = game.new_initial_state()
    moves = 0
    while not state.is_terminal():
        state.apply_action(0)  # up: never reaches the goal
        moves += 1
    assert moves == 30
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)


def test_clones_share_what_an_env_only_draws_with_so_mpe2_games_clone() -> None:
    """MPE2's envs hold a pygame Font from construction, which neither pickles nor copies."""
    pytest.importorskip("mpe2")
    from marlhub.adapters.openspiel.view_copy import snapshot

    env = marlhub.make("mpe2/simple_spread-v3")
    obs, _ = env.reset(seed=0)
    obs = env.step({agent: 1 for agent in obs})[0]
    clone = snapshot(env)
    native, native_clone = env.get_sub_environments, clone.get_sub_environments
    assert type(native.game_font).__module__.startswith("pygame")
    assert native_clone is not native and native_clone.game_font is native.game_font  # shared
    assert native_clone.screen is native.screen
    actions = {agent: 2 for agent in obs}
    a, b = env.step(actions), clone.step(actions)  # the episode carried over: both go on
    assert repr(a) == repr(b)
    game = to_openspiel(lambda: marlhub.make("mpe2/simple_spread-v3", {"max_cycles": 5}),
                        short_name="marlhub_test_mpe2_spread")
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)
    state = game.new_initial_state()
    for _ in range(3):  # a clone goes on from where its state was, apart from it
        state.apply_action(state.legal_actions()[0])
    twin = state.clone()
    for current in (state, twin):
        while not current.is_terminal():
            current.apply_action(current.legal_actions()[-1])
    assert twin.returns() == state.returns() and twin.history() == state.history()


def test_openspiels_random_agents_play_simultaneous_nodes_where_some_players_do_not_act() -> None:
    """A player that does not act gets one legal action, PASS, which the env never sees."""
    from open_spiel.python import rl_environment
    from open_spiel.python.algorithms import random_agent

    from marlhub.adapters.openspiel.view_state import PASS

    game = to_openspiel(lambda: Traffic({"num_cars": 3}), short_name="marlhub_test_traffic_rl",
                        dynamics="simultaneous")
    state = game.new_initial_state()
    legal = [state.legal_actions(p) for p in range(game.num_players())]
    assert [len(actions) > 0 for actions in legal] == [True] * game.num_players()
    assert legal[1] == [PASS]  # car_1 has not entered the road yet
    env = rl_environment.Environment(game, seed=0)
    agents = [random_agent.RandomAgent(player_id=p, num_actions=game.num_distinct_actions())
              for p in range(game.num_players())]
    for _ in range(3):
        time_step = env.reset()
        while not time_step.last():
            time_step = env.step([agent.step(time_step).action for agent in agents])
        assert len(time_step.rewards) == game.num_players()
    pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)


@pytest.mark.parametrize(("env_id", "config", "length"), [
    ("mpe2/simple_spread-v3", {"max_cycles": 30}, 90),  # AEC: a turn per agent a cycle
    ("mpe2/simple_spread-v3", {"max_cycles": 30, "api": "parallel"}, 30),
    ("gymnasium/CartPole-v1", {"num_agents": 2}, 500),  # the spec's max_episode_steps
    ("traffic", {"max_steps": 40}, 40),
    ("pettingzoo/classic/connect_four-v3", {}, 10_000),  # nothing declared
])
def test_max_game_length_is_the_length_the_source_declares(env_id: str, config: dict,
                                                           length: int) -> None:
    if env_id.startswith("mpe2/"):
        pytest.importorskip("mpe2")
    game = to_openspiel(lambda: marlhub.make(env_id, config), probe_episodes=1,
                        short_name=f"marlhub_test_length_{abs(hash((env_id, str(config))))}")
    assert game.max_game_length() == length


def test_an_env_whose_copies_start_over_is_refused_when_the_game_is_made() -> None:
    """MAgent2 keeps its world in its C engine: a copy is a new env, and no game clones it."""
    pytest.importorskip("magent2")
    with pytest.raises(ConfigError, match=r"a copy of the env in the middle of an episode starts "
                                          r"over \(ValueError: ctypes objects containing pointers "
                                          r"cannot be pickled\), and OpenSpiel clones states"):
        to_openspiel(lambda: marlhub.make("magent2/battle-v4", {"map_size": 12}),
                     short_name="marlhub_test_battle")
