"""hub -> OpenSpiel: to_openspiel registers hub envs as pyspiel Python games; round trips."""

from __future__ import annotations

import copy
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

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
