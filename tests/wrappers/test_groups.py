"""Agent groups: RLlib's with_agent_groups semantics, plus agents kept right, dying members, clear errors."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pytest
from gymnasium.spaces import Dict, Discrete, MultiDiscrete, Tuple
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from marlhub import ALL, MarlhubWarning, MultiAgentEnv
from marlhub.adapters.gymnasium import make_multi_agent, to_gymnasium
from marlhub.conformance import check
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic
from marlhub.errors import (
    ActionError,
    AgentIdError,
    ConfigError,
    NotParallelizableError,
    ResetNeededError,
)
from marlhub.wrappers.groups import (
    GROUP_INFO,
    GROUP_REWARDS,
    INDIVIDUAL_REWARDS,
    GroupAgentsWrapper,
)

ENV_STATE = "state"  # ray.rllib.env.multi_agent_env.ENV_STATE


class MyMultiAgentEnv(MultiAgentEnv):
    """The RLlib docs' grouping example env: agent1..agent5, all acting every step."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.agents = self.possible_agents = [f"agent{i}" for i in range(1, 6)]
        self.observation_spaces = {a: Discrete(10) for a in self.agents}
        self.action_spaces = {a: Discrete(3) for a in self.agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return {a: 0 for a in self.possible_agents}, {}

    def step(self, action_dict: dict) -> Any:
        self.t += 1
        obs = {a: self.t for a in self.possible_agents}
        rewards = {a: float(action_dict[a]) for a in self.possible_agents}
        return obs, rewards, {ALL: self.t >= 5}, {ALL: False}, {a: {"t": self.t} for a in obs}


class TwoStepGame(MultiAgentEnv):
    """RLlib's QMIX example env as RLlib ships it (old API stack: _agent_ids, one shared space)."""

    action_space = Discrete(2)

    def __init__(self, env_config: dict) -> None:
        super().__init__()
        self.action_space = Discrete(2)
        self.state: Any = None
        self.agent_1 = 0
        self.agent_2 = 1
        self.one_hot_state_encoding = env_config.get("one_hot_state_encoding", False)
        self.with_state = env_config.get("separate_state_space", False)
        self._agent_ids = {0, 1}
        if not self.one_hot_state_encoding:
            self.observation_space = Discrete(6)
            self.with_state = False
        elif self.with_state:
            self.observation_space = Dict(
                {"obs": MultiDiscrete([2, 2, 2, 3]), ENV_STATE: MultiDiscrete([2, 2, 2])}
            )
        else:
            self.observation_space = MultiDiscrete([2, 2, 2, 3])

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        self.state = np.array([1, 0, 0])
        return self._obs(), {}

    def step(self, action_dict: dict) -> Any:
        state_index = np.flatnonzero(self.state)
        if state_index == 0:
            action = action_dict[self.agent_1]
            assert action in [0, 1], action
            self.state = np.array([0, 1, 0]) if action == 0 else np.array([0, 0, 1])
            global_rew, terminated = 0, False
        elif state_index == 1:
            global_rew, terminated = 7, True
        else:
            if action_dict[self.agent_1] == 0 and action_dict[self.agent_2] == 0:
                global_rew = 0
            elif action_dict[self.agent_1] == 1 and action_dict[self.agent_2] == 1:
                global_rew = 8
            else:
                global_rew = 1
            terminated = True
        rewards = {self.agent_1: global_rew / 2.0, self.agent_2: global_rew / 2.0}
        infos = {self.agent_1: {"done": terminated}, self.agent_2: {"done": terminated}}
        return self._obs(), rewards, {"__all__": terminated}, {"__all__": False}, infos

    def _obs(self) -> dict:
        if self.with_state:
            return {
                self.agent_1: {"obs": self.agent_1_obs(), ENV_STATE: self.state},
                self.agent_2: {"obs": self.agent_2_obs(), ENV_STATE: self.state},
            }
        return {self.agent_1: self.agent_1_obs(), self.agent_2: self.agent_2_obs()}

    def agent_1_obs(self) -> Any:
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [1]])
        return np.flatnonzero(self.state)[0]

    def agent_2_obs(self) -> Any:
        if self.one_hot_state_encoding:
            return np.concatenate([self.state, [2]])
        return np.flatnonzero(self.state)[0] + 3


def grouped_two_step(config: dict) -> MultiAgentEnv:
    """The QMIX example's registration: env_creator returning the grouped TwoStepGame."""
    grouping = {"group_1": [0, 1]}
    obs_space = Tuple(
        [
            Dict({"obs": MultiDiscrete([2, 2, 2, 3]), ENV_STATE: MultiDiscrete([2, 2, 2])}),
            Dict({"obs": MultiDiscrete([2, 2, 2, 3]), ENV_STATE: MultiDiscrete([2, 2, 2])}),
        ]
    )
    act_space = Tuple([TwoStepGame.action_space, TwoStepGame.action_space])
    return TwoStepGame(config).with_agent_groups(grouping, obs_space=obs_space, act_space=act_space)


# -- RLlib's documented examples ---------------------------------------------------------


def test_rllib_docs_grouping_example_as_printed() -> None:
    env = MyMultiAgentEnv()
    with pytest.warns(MarlhubWarning, match="got the env itself as `groups`"):
        grouped_env = env.with_agent_groups(env, {
            "group1": ["agent1", "agent2", "agent3"],
            "group2": ["agent4", "agent5"],
        })
    assert grouped_env.possible_agents == ["group1", "group2"]
    assert grouped_env.get_action_space("group2") == Tuple([Discrete(3), Discrete(3)])


def test_rllib_docs_grouping_example_called_right() -> None:
    grouped = MyMultiAgentEnv().with_agent_groups({"group1": ["agent1", "agent3"]})
    assert grouped.possible_agents == ["group1", "agent2", "agent4", "agent5"]
    assert grouped.agents == grouped.possible_agents  # RLlib leaves these empty
    obs, infos = grouped.reset(seed=0)
    assert obs == {"group1": (0, 0), "agent2": 0, "agent4": 0, "agent5": 0}
    obs, rewards, terminateds, truncateds, infos = grouped.step(
        {"group1": (2, 1), "agent2": 0, "agent4": 1, "agent5": 2}
    )
    assert obs["group1"] == (1, 1) and rewards == {"group1": 3.0, "agent2": 0.0, "agent4": 1.0, "agent5": 2.0}
    assert infos["group1"][INDIVIDUAL_REWARDS] == [2.0, 1.0] == infos["group1"][GROUP_REWARDS]
    assert infos["group1"][GROUP_INFO] == [{"t": 1}, {"t": 1}] and infos["agent2"] == {"t": 1}
    assert terminateds == {ALL: False} and truncateds == {ALL: False}


def test_rllib_qmix_two_step_game_grouping() -> None:
    env = grouped_two_step({"separate_state_space": True, "one_hot_state_encoding": True})
    assert env.possible_agents == ["group_1"] and isinstance(env.observation_space, Tuple)
    obs, _ = env.reset(seed=0)
    assert list(obs) == ["group_1"] and obs["group_1"][1]["obs"].tolist() == [1, 0, 0, 2]
    env.step({"group_1": (1, 0)})
    _, rewards, terminateds, _, infos = env.step({"group_1": (1, 1)})
    assert rewards == {"group_1": 8.0} and terminateds["group_1"] and terminateds[ALL]
    assert infos["group_1"][INDIVIDUAL_REWARDS] == [4.0, 4.0]
    report = check(lambda: grouped_two_step({"separate_state_space": True,
                                             "one_hot_state_encoding": True}), episodes=5, strict=True)
    assert report.ok, str(report)


def test_rllib_two_step_game_with_grouped_agents_wrapper_class() -> None:
    # RLlib's TwoStepGameWithGroupedAgents reads the wrapper's spaces back as Tuples.
    env = TwoStepGame({})
    grouped = env.with_agent_groups(
        groups={"agents": [0, 1]},
        obs_space=Tuple([env.observation_space, env.observation_space]),
        act_space=Tuple([env.action_space, env.action_space]),
    )
    assert Dict({"agents": grouped.observation_space})["agents"] == Tuple([Discrete(6), Discrete(6)])
    assert grouped.reset(seed=0) == ({"agents": (0, 3)}, {"agents": {GROUP_INFO: [{}, {}]}})


# -- conformance -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: RockPaperScissors().with_agent_groups({"team": ["player2", "player1"]}),
        lambda: make_multi_agent("CartPole-v1")({"num_agents": 4}).with_agent_groups({"a": [0, 2], "b": [3]}),
        lambda: Traffic({"num_cars": 3}).with_agent_groups({"control": ["light"]}),
        lambda: GroupAgentsWrapper(MyMultiAgentEnv(), {"g": ["agent5", "agent1"]}),
    ],
)
def test_grouped_envs_conform(make: Any) -> None:
    report = check(make, episodes=5, strict=True)
    assert report.ok, str(report)


def test_grouped_env_in_a_gymnasium_view_passes_check_env() -> None:
    grouped = RockPaperScissors().with_agent_groups({"team": ["player1", "player2"]})
    check_env(to_gymnasium(grouped, "team"), skip_render_check=True)


# -- what RLlib lacks: members that die inside a group ---------------------------------------


def test_a_member_that_dies_keeps_its_last_observation_and_its_actions_are_ignored() -> None:
    hub = make_multi_agent("CartPole-v1")({"num_agents": 2})
    env = hub.with_agent_groups({"pair": [0, 1]})
    env.reset(seed=0)
    t = 0
    while 0 in hub.agents:  # member 0 pushes left and topples; member 1 balances
        obs, rewards, terminateds, truncateds, infos = env.step({"pair": (0, t % 2)})
        t += 1
    assert terminateds == {"pair": False, ALL: False} and env.agents == ["pair"]
    last = obs["pair"][0].copy()
    obs, rewards, terminateds, _, infos = env.step({"pair": ("ignored", t % 2)})
    np.testing.assert_array_equal(obs["pair"][0], last)
    assert infos["pair"][INDIVIDUAL_REWARDS] == [0.0, 1.0] and rewards == {"pair": 1.0}
    while not terminateds[ALL]:
        obs, rewards, terminateds, truncateds, infos = env.step({"pair": (0, 0)})
    assert terminateds["pair"] and not truncateds["pair"] and env.agents == []
    with pytest.raises(ResetNeededError, match="episode is over"):
        env.step({"pair": (0, 0)})


def test_group_done_with_one_member_truncated_is_truncated() -> None:
    hub = make_multi_agent("CartPole-v1")({"num_agents": 2, "max_episode_steps": 30})
    env = hub.with_agent_groups({"pair": [0, 1]})
    env.reset(seed=0)
    t = 0
    while True:  # member 0 topples early, member 1 balances until the time limit
        _, _, terminateds, truncateds, _ = env.step({"pair": (0, t % 2)})
        t += 1
        if terminateds[ALL] or truncateds[ALL]:
            break
    assert truncateds == {"pair": True, ALL: True} and terminateds == {"pair": False, ALL: False}


# -- clear errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("groups", "error", "match"),
    [
        ({"g": ["player1", "player3"]}, AgentIdError, "group 'g' lists 'player3', which is not an agent.*Did you mean"),
        ({"g": ["player1"], "h": ["player1", "player2"]}, AgentIdError, "'player1' of group 'h' is also in group 'g'"),
        ({"g": ["player1", "player1"]}, AgentIdError, "is twice in that group"),
        ({"player1": ["player2"]}, AgentIdError, "the group id 'player1' is already an agent id"),
        ({"__all__": ["player2"]}, AgentIdError, "'__all__' is reserved"),
        ({"g": []}, ConfigError, "group 'g' has no members"),
        ({"g": "player1"}, ConfigError, "must be a list of agent ids"),
        (["player1"], ConfigError, "groups must be a non-empty dict"),
    ],
)
def test_bad_groups(groups: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        GroupAgentsWrapper(RockPaperScissors(), groups)


def test_given_spaces_must_be_tuples_with_one_item_per_member() -> None:
    with pytest.raises(ConfigError, match="obs_space for group 'g' must be a gymnasium.spaces.Tuple"):
        RockPaperScissors().with_agent_groups({"g": ["player1", "player2"]}, obs_space=Discrete(3))
    with pytest.raises(ConfigError, match="act_space for group 'g'.*one item per member \\(2\\)"):
        RockPaperScissors().with_agent_groups({"g": ["player1", "player2"]}, act_space=Tuple([Discrete(3)]))


def test_members_that_do_not_act_together_are_refused_at_the_first_such_step() -> None:
    env = TicTacToe().with_agent_groups({"both": ["player1", "player2"]})
    with pytest.raises(NotParallelizableError, match="the group 'both' needs every live agent.*RLlib's rule"):
        env.reset(seed=0)
    cars = Traffic().with_agent_groups({"cars": ["car_0", "car_1"]})
    with pytest.raises(NotParallelizableError, match="Only 'car_0' act"):
        cars.reset(seed=0)
    with pytest.raises(ResetNeededError, match="stopped acting together"):
        cars.step({})


def test_bad_actions_leave_the_env_unchanged() -> None:
    env = RockPaperScissors().with_agent_groups({"team": ["player1", "player2"]})
    with pytest.raises(ResetNeededError):
        env.step({"team": (0, 0)})
    env.reset(seed=0)
    bad = [
        ({"team": (0,)}, "expected a tuple of 2 actions, one for each of \\['player1', 'player2'\\]"),
        ({"team": "rp"}, "expected a tuple of 2 actions"),
        ({"team": (0, 5)}, r"expected an action in Discrete\(3\) \(member 'player2'\)"),
        ({"team": (0, 0), "player1": 0}, "it is a member of group 'team'; its action goes inside"),
        ({"other": 0, "team": (0, 0)}, "it is not an agent or group of this env"),
        ({}, "Add an action for 'team'"),
    ]
    for actions, match in bad:
        with pytest.raises(ActionError, match=match):
            env.step(actions)
    assert env.env.num_moves == 0
    assert env.step({"team": np.array([1, 0])})[1] == {"team": 0.0}


def test_two_step_game_example(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "examples" / "groups_two_step_game.py"
    found = runpy.run_path(str(script))["main"]()
    assert found["conforms"] and found["best_return"] == 8.0 and found["best"][1] == (1, 1)
    assert "best plan" in capsys.readouterr().out


# -- property: grouping loses and invents nothing ------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    assignment=st.lists(st.sampled_from(["g0", "g1", None]), min_size=4, max_size=4),
    seed=st.integers(0, 10_000),
)
def test_grouped_copies_match_the_ungrouped_env_step_for_step(assignment: list, seed: int) -> None:
    groups: dict[str, list[int]] = {}
    for agent, group in enumerate(assignment):
        if group:
            groups.setdefault(group, []).append(agent)
    assume(groups)
    make = make_multi_agent("CartPole-v1")
    config = {"num_agents": 4, "max_episode_steps": 40}
    plain, grouped = make(config), make(config).with_agent_groups(groups)
    obs_p, _ = plain.reset(seed=seed)
    obs_g, _ = grouped.reset(seed=seed)
    last = dict(obs_p)
    rng = np.random.default_rng(seed)
    returns_p = dict.fromkeys(range(4), 0.0)
    returns_g = dict.fromkeys(grouped.possible_agents, 0.0)
    while True:
        member_actions = {a: int(rng.integers(2)) for a in plain.agents}
        actions_g = {
            key: tuple(member_actions.get(m, 0) for m in groups[key]) if key in groups
            else member_actions[key]
            for key in grouped.agents
        }
        obs_p, rew_p, term_p, trunc_p, _ = plain.step(member_actions)
        obs_g, rew_g, term_g, trunc_g, _ = grouped.step(actions_g)
        last.update(obs_p)
        for key, value in rew_p.items():
            returns_p[key] += value
        for key, value in rew_g.items():
            returns_g[key] += value
        for key, value in obs_g.items():
            members = groups.get(key, [key])
            items = value if key in groups else (value,)
            for member, item in zip(members, items):
                np.testing.assert_array_equal(item, last[member])
            assert rew_g[key] == sum(rew_p.get(m, 0.0) for m in members)
        assert (term_g[ALL], trunc_g[ALL]) == (term_p[ALL], trunc_p[ALL])
        if term_p[ALL] or trunc_p[ALL]:
            break
    for key, total in returns_g.items():
        assert total == sum(returns_p[m] for m in groups.get(key, [key]))
    report = check(lambda: make(config).with_agent_groups(groups), episodes=2, seed=seed, strict=True)
    assert report.ok, str(report)


def test_a_grouped_env_forwards_the_global_state_and_its_space() -> None:
    env = Traffic({"num_cars": 3})
    grouped = GroupAgentsWrapper(env, {"signal": ["light"]})
    assert grouped.state_space is env.state_space
    obs, _ = grouped.reset(seed=2)
    while True:
        state = grouped.state()
        np.testing.assert_array_equal(state, env.state())
        assert grouped.state_space.contains(state)
        actions = {a: (1,) if a == "signal" else 2 for a in obs}
        obs, _, terminateds, truncateds, _ = grouped.step(actions)
        if terminateds[ALL] or truncateds[ALL]:
            break
        obs = {a: o for a, o in obs.items() if not (terminateds.get(a) or truncateds.get(a))}
    np.testing.assert_array_equal(grouped.state(), env.state())
    plain = RockPaperScissors().with_agent_groups({"team": ["player1", "player2"]})
    assert not hasattr(plain, "state_space")
    with pytest.raises(NotImplementedError, match="RockPaperScissors has no state"):
        plain.state()
