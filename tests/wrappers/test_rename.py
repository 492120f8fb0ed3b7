"""RenameAgents: a hub env under other agent ids, both ways; to_pettingzoo names non-string ids."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import marlhub
from marlhub import ActionError, AgentIdError
from marlhub.adapters.gymnasium import make_multi_agent
from marlhub.conformance import check
from marlhub.envs import RockPaperScissors, Traffic
from marlhub.rollout import random_rollout
from marlhub.wrappers.rename import RenameAgents, string_ids


def test_names_are_strings_and_distinct() -> None:
    assert string_ids([0, 1]) == {0: "agent_0", 1: "agent_1"}
    assert string_ids(["agent_0", 0]) == {"agent_0": "agent_0", 0: "agent_0_"}


def test_a_renamed_env_keeps_the_contract_and_its_returns() -> None:
    names = {a: a.upper() for a in Traffic().possible_agents}
    report = check(lambda: RenameAgents(Traffic(), names), episodes=10, strict=True)
    assert report.ok, str(report)
    original = random_rollout(Traffic(), episodes=3, seed=1)
    renamed = random_rollout(RenameAgents(Traffic(), names), episodes=3, seed=1)
    assert [{names[a]: r for a, r in e.items()} for e in original.episode_returns] == \
        renamed.episode_returns


def test_actions_for_unknown_names_are_refused_by_the_env() -> None:
    env = RenameAgents(make_multi_agent("CartPole-v1")({"num_agents": 2}), {0: "a", 1: "b"})
    env.reset(seed=0)
    with pytest.raises(ActionError):
        env.step({"a": 0, "c": 1})
    with pytest.raises(AgentIdError, match="'c' is not an agent"):
        env.get_action_space("c")


def test_bad_renamings_are_refused() -> None:
    env = make_multi_agent("CartPole-v1")({"num_agents": 2})
    with pytest.raises(AgentIdError, match="distinct, unreserved"):
        RenameAgents(env, {0: "a", 1: "a"})
    with pytest.raises(AgentIdError):
        RenameAgents(env, {0: "a"})


def test_to_pettingzoo_gives_string_ids_and_converting_back_restores_the_env() -> None:
    pettingzoo = pytest.importorskip("pettingzoo")
    from pettingzoo.test import api_test, parallel_api_test

    from marlhub.adapters.pettingzoo import from_pettingzoo, to_pettingzoo

    hub = marlhub.make("gymnasium/CartPole-v1", {"num_agents": 3})
    aec = to_pettingzoo(hub)
    assert aec.possible_agents == ["agent_0", "agent_1", "agent_2"]
    assert from_pettingzoo(aec) is hub
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's advice on CartPole's infinite bounds
        api_test(aec, num_cycles=10)
        parallel_api_test(to_pettingzoo(marlhub.make("gymnasium/CartPole-v1", {"num_agents": 2}),
                                        api="parallel"), num_cycles=10)
    assert pettingzoo.__name__ == "pettingzoo"


# -- the global state (centralised critics read it through every wrapper) -----------

def test_a_renamed_env_forwards_the_global_state_and_its_space() -> None:
    env = Traffic({"num_cars": 2})
    renamed = RenameAgents(env, {a: a.upper() for a in env.possible_agents})
    assert renamed.state_space is env.state_space
    obs, _ = renamed.reset(seed=3)
    actors = list(obs)
    while actors:
        np.testing.assert_array_equal(renamed.state(), env.state())
        obs, _, terminateds, truncateds, _ = renamed.step(dict.fromkeys(actors, 1))
        actors = marlhub.actors(obs, terminateds, truncateds)
    np.testing.assert_array_equal(renamed.state(), env.state())


def test_a_renamed_env_without_a_state_has_none_as_pettingzoo_envs_do() -> None:
    renamed = RenameAgents(RockPaperScissors(), {"player1": "a", "player2": "b"})
    assert not hasattr(renamed, "state_space")
    with pytest.raises(NotImplementedError, match="RockPaperScissors has no state"):
        renamed.state()


def test_the_state_survives_renaming_and_the_parallel_view_step_for_step() -> None:
    pytest.importorskip("pettingzoo")
    mpe2 = pytest.importorskip("mpe2")
    from mpe2 import simple_spread_v3

    from marlhub.adapters.pettingzoo import to_pettingzoo

    assert mpe2.__name__ == "mpe2"
    native = simple_spread_v3.parallel_env()
    hub = marlhub.make("mpe2/simple_spread-v3", {"api": "parallel"})
    # Integer ids: to_pettingzoo names them agent_<i> again, through a second RenameAgents.
    numbered = RenameAgents(hub, {a: i for i, a in enumerate(hub.possible_agents)})
    view = to_pettingzoo(numbered, api="parallel")
    assert view.possible_agents == native.possible_agents
    assert view.state_space == native.state_space
    native.reset(seed=7)
    view.reset(seed=7)
    rng = np.random.default_rng(0)
    while view.agents:
        np.testing.assert_array_equal(view.state(), native.state())
        assert view.state_space.contains(view.state())
        actions = {a: int(rng.integers(native.action_space(a).n)) for a in native.agents}
        native.step(actions)
        view.step(actions)
    np.testing.assert_array_equal(view.state(), native.state())
