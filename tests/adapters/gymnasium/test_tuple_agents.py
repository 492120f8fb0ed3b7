"""Gymnasium envs of the Tuple convention -> hub: TupleAgentsEnv, its detection, its lockstep."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub import ALL, COMMON
from marlhub.adapters import to_hub
from marlhub.adapters.gymnasium import (
    GymnasiumMultiEnv,
    TupleAgentsEnv,
    compare_tuple_with_native,
    from_gymnasium,
    from_gymnasium_tuple,
    is_tuple_team,
    to_gymnasium_tuple,
)
from marlhub.conformance import check
from marlhub.errors import ActionError, AgentIdError, EnvContractError, ProtocolError
from tests.adapters.gymnasium.tuple_envs import Meet, Relay


def test_agents_spaces_and_a_step_are_the_tuples_entries() -> None:
    native = Meet(3)
    hub = TupleAgentsEnv(native)
    assert hub.possible_agents == ["agent_0", "agent_1", "agent_2"] and hub.n_agents == 3
    assert hub.get_observation_space("agent_1") is native.observation_space[1]
    assert hub.get_action_space("agent_2") is native.action_space[2]
    obs, infos = hub.reset(seed=3)
    twin = Meet(3)
    native_obs, _ = twin.reset(seed=3)
    assert all((obs[f"agent_{i}"] == native_obs[i]).all() for i in range(3))
    # The team's info is nobody's in particular.
    assert infos == {"agent_0": {}, "agent_1": {}, "agent_2": {}, COMMON: {"step": 0}}
    obs, rewards, terminateds, truncateds, infos = hub.step(
        {"agent_0": 2, "agent_1": 1, "agent_2": 0})
    native_obs, native_rewards, *_ = twin.step((2, 1, 0))
    assert all((obs[f"agent_{i}"] == native_obs[i]).all() for i in range(3))
    assert rewards == {f"agent_{i}": native_rewards[i] for i in range(3)}
    assert terminateds[ALL] is False and truncateds[ALL] is False and infos[COMMON] == {"step": 1}


def play_to_the_end(hub: Any, seed: int) -> tuple[dict[str, Any], dict[str, Any], int]:
    obs, _ = hub.reset(seed=seed)
    steps = 0
    while True:
        obs, rewards, terminateds, truncateds, _ = hub.step({a: 0 for a in obs})
        steps += 1
        if terminateds[ALL] or truncateds[ALL]:
            return terminateds, truncateds, steps


def test_one_terminated_or_truncated_ends_every_agent() -> None:
    terminateds, truncateds, steps = play_to_the_end(TupleAgentsEnv(Meet(limit=4)), seed=0)
    assert steps == 4 and truncateds == {"agent_0": True, "agent_1": True, ALL: True}
    assert terminateds == {"agent_0": False, "agent_1": False, ALL: False}


def test_a_team_reward_goes_to_every_agent_and_custom_ids_name_them() -> None:
    hub = TupleAgentsEnv(Meet(team_reward=True), agent_ids=["left", "right"])
    twin = Meet(team_reward=True)
    hub.reset(seed=1)
    twin.reset(seed=1)
    team = twin.step((1, 2))[1]
    assert isinstance(team, float) and hub.step({"left": 1, "right": 2})[1] == {
        "left": team, "right": team}


def test_acting_alive_masks_and_agent_infos_come_from_the_info() -> None:
    hub = TupleAgentsEnv(Relay())
    obs, infos = hub.reset(seed=0)
    (actor,) = obs
    waiting = "agent_1" if actor == "agent_0" else "agent_0"
    assert infos[actor]["turns"] == 0 and "action_mask" in infos[actor] and COMMON not in infos
    with pytest.raises(ActionError, match=f"{waiting}.*it waits in this step"):
        hub.step({actor: 1, waiting: 0})
    for seed in range(20):  # the baton at 0: its runner must move it
        obs, _ = hub.reset(seed=seed)
        (actor,) = obs
        if obs[actor] == 0:
            with pytest.raises(ActionError, match="mask"):
                hub.step({actor: 0})
            break
    else:
        pytest.fail("no seed put the baton at 0")
    seen_out = False
    obs, _ = hub.reset(seed=0)
    actors = list(obs)
    while True:
        obs, rewards, terminateds, truncateds, infos = hub.step({a: 1 for a in actors})
        actors = marlhub.actors(obs, terminateds, truncateds)
        assert set(infos) <= set(obs) | {COMMON}
        if terminateds.get("agent_1") and not terminateds[ALL]:
            seen_out = True  # runner 1 left: its final observation, then never again
            assert "agent_1" in obs and "agent_1" not in hub.agents
        if terminateds[ALL]:
            break
    assert seen_out and rewards == {"agent_0": 1.0}


def test_per_agent_done_lists_end_each_agent_on_its_own() -> None:
    class Leaving(Meet):  # ma-gym's convention: one done flag per agent
        pay_the_gone = False

        def step(self, action: Any) -> Any:
            obs, reward, _, _, info = super().step(action)
            dones = [self.t >= 2, self.t >= 3]
            if not self.pay_the_gone:
                reward = [0.0 if self.t > 2 and i == 0 else r for i, r in enumerate(reward)]
            return obs, reward, dones, [False, False], info

    hub = TupleAgentsEnv(Leaving(limit=10))
    hub.reset(seed=0)
    obs, _, terminateds, _, _ = hub.step({"agent_0": 0, "agent_1": 0})
    obs, _, terminateds, _, _ = hub.step({"agent_0": 0, "agent_1": 0})
    assert terminateds == {"agent_0": True, "agent_1": False, ALL: False}
    assert hub.agents == ["agent_1"]
    with pytest.raises(ActionError, match="agent_0"):
        hub.step({"agent_0": 0, "agent_1": 0})
    obs, rewards, terminateds, _, _ = hub.step({"agent_1": 0})
    assert list(obs) == ["agent_1"] and list(rewards) == ["agent_1"]
    assert terminateds == {"agent_1": True, ALL: True}
    # A reward for an agent that left is not reported (the hub never names it again): said.
    paying = Leaving(limit=10)
    paying.pay_the_gone = True
    hub = TupleAgentsEnv(paying)
    hub.reset(seed=0)
    hub.step({"agent_0": 0, "agent_1": 0})
    hub.step({"agent_0": 0, "agent_1": 0})
    with pytest.warns(marlhub.MarlhubWarning, match="gave 'agent_0' the reward -0.1 after it left"):
        hub.step({"agent_1": 0})


def test_envs_that_break_the_convention_are_refused_or_reported() -> None:
    with pytest.raises(ProtocolError, match="Tuple observation and action spaces"):
        TupleAgentsEnv(gym.make("CartPole-v1"))
    liar = Meet()
    liar.n_agents = 3
    with pytest.raises(ProtocolError, match="n_agents equal to its Tuples' length 2"):
        TupleAgentsEnv(liar)
    with pytest.raises(AgentIdError, match="reserved"):
        TupleAgentsEnv(Meet(), agent_ids=["a", ALL])

    class ShortRewards(Meet):
        def step(self, action: Any) -> Any:
            obs, _, term, trunc, info = super().step(action)
            return obs, [1.0], term, trunc, info

    hub = TupleAgentsEnv(ShortRewards())
    hub.reset(seed=0)
    with pytest.raises(EnvContractError, match="reward.scalar.*one per agent"):
        hub.step({"agent_0": 0, "agent_1": 0})


def test_detection_by_n_agents_or_by_the_look_of_the_spaces() -> None:
    assert is_tuple_team(Meet()) and is_tuple_team(Meet(n_agents=False))
    assert not is_tuple_team(Meet(n=1, n_agents=False))  # a Tuple of one: one agent's
    assert is_tuple_team(Meet(n=1))  # ... unless it says it is a team
    assert not is_tuple_team(gym.make("Blackjack-v1"))  # a Tuple observation, one agent
    native = Meet()
    hub = to_hub(native)
    assert isinstance(hub, TupleAgentsEnv) and hub.env is native
    assert isinstance(from_gymnasium(Meet(n=1, n_agents=False)), GymnasiumMultiEnv)
    # Converting back unwraps, both ways.
    assert to_gymnasium_tuple(hub) is native and to_gymnasium_tuple(native) is native
    assert from_gymnasium_tuple(native).env is native  # type: ignore[attr-defined]
    rps = marlhub.make("rock_paper_scissors")
    assert from_gymnasium_tuple(to_gymnasium_tuple(rps)) is rps
    assert from_gymnasium(to_gymnasium_tuple(rps)) is rps


@pytest.mark.parametrize("make", [
    lambda: TupleAgentsEnv(Meet(3)),
    lambda: Meet(n_agents=False, team_reward=True),  # to_hub adapts it
    lambda: TupleAgentsEnv(Relay()),
], ids=["meet", "meet-team-reward", "relay"])
def test_tuple_envs_conform(make: Any) -> None:
    report = check(make, episodes=4, strict=True)
    assert report.ok, str(report)


def test_lockstep_with_the_native_env() -> None:
    assert compare_tuple_with_native(lambda config: Meet(**config), {"n": 3}, episodes=3) == []
    assert compare_tuple_with_native(lambda config: Relay(), episodes=3) == []


@pytest.fixture
def meet_in_gymnasium() -> Iterator[str]:
    gym.register("marlhub_tests/Meet-v0", entry_point=Meet, kwargs={"n_agents": False})
    try:
        yield "marlhub_tests/Meet-v0"
    finally:
        del gym.registry["marlhub_tests/Meet-v0"]


def test_a_tuple_env_in_gymnasiums_registry_is_a_team_of_the_gymnasium_family(
        meet_in_gymnasium: str) -> None:
    env_id = "gymnasium/" + meet_in_gymnasium
    team = marlhub.make(env_id, {"n": 3})
    assert isinstance(team, TupleAgentsEnv) and team.possible_agents[2] == "agent_2"
    assert marlhub.make(env_id, {"agents": "copies", "num_agents": 2}).possible_agents == [0, 1]
    assert marlhub.make(env_id, {"num_agents": 1}).possible_agents == [0]
    with pytest.raises(marlhub.ConfigError, match="num_agents.*has no meaning"):
        marlhub.make(env_id, {"agents": "tuple", "num_agents": 2})
    with pytest.raises(marlhub.ConfigError, match="agents must be 'tuple' or 'copies'"):
        marlhub.make(env_id, {"agents": "team"})
    report = check(env_id, episodes=3, against_native=True, config={"agents": "tuple"})
    assert report.ok and not report.findings, str(report)


def test_observations_are_handed_out_as_the_env_returns_them() -> None:
    hub = TupleAgentsEnv(Meet())
    obs, _ = hub.reset(seed=0)
    assert isinstance(obs["agent_0"], np.ndarray) and obs["agent_0"].dtype == np.int64
    assert isinstance(hub.render(), str)
    hub.close()
