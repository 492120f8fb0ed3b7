"""RemoteEnv: a marlhub server's world as a hub env, equal to a local env step for step, errors included."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.adapters.remote import connect
from marlhub.adapters.remote.adapter import RemoteEnv
from marlhub.adapters.remote.lockstep import compare_with_local
from marlhub.conformance import check
from marlhub.contract.compare import why_different
from marlhub.errors import (
    ActionError,
    ConfigError,
    RemoteRequestError,
    ResetNeededError,
)

#: Envs of every family (built-in, OpenSpiel, PettingZoo AEC and parallel, Gymnasium).
IDS = [
    ("rock_paper_scissors", None),
    ("tic_tac_toe", None),
    ("traffic", None),
    ("openspiel/kuhn_poker", None),
    ("openspiel/leduc_poker", None),
    ("pettingzoo/classic/tictactoe-v3", None),
    ("pettingzoo/classic/connect_four-v3", None),
    ("pettingzoo/butterfly/pistonball-v6", {"api": "parallel", "max_cycles": 6}),
    ("gymnasium/CartPole-v1", None),
]


@pytest.mark.parametrize(("env_id", "config"), IDS, ids=[i for i, _ in IDS])
def test_remote_env_equals_the_local_env_step_for_step(served: Any, env_id: str,
                                                       config: Any) -> None:
    server = served(env_id, config)
    remote = connect(server.address)
    local = marlhub.make(env_id, config)
    assert isinstance(remote, RemoteEnv) and remote.env_id == env_id
    assert remote.possible_agents == local.possible_agents
    for agent in local.possible_agents:
        assert remote.get_observation_space(agent) == local.get_observation_space(agent)
        assert remote.get_action_space(agent) == local.get_action_space(agent)
        assert remote.get_observation_space(agent) is remote.get_observation_space(agent)
    episodes = 1 if "pistonball" in env_id else 3
    assert compare_with_local(remote, local, episodes=episodes, seed=7, max_steps=300) == []
    remote.close()
    assert server.worlds.worlds == {}


def test_the_conformance_suite_passes_on_a_remote_env(served: Any) -> None:
    server = served("openspiel/kuhn_poker")
    report = check(f"remote/{server.address}", episodes=4, strict=True)
    assert report.ok, str(report)


ERROR_CALLS = [
    ("step before reset", lambda env, a: env.step({a: 0}), ResetNeededError),
    ("an action outside the space", lambda env, a: env.step({a: 99}), ActionError),
    ("a numpy action outside the space", lambda env, a: env.step({a: np.int64(-1)}), ActionError),
    ("a bool action", lambda env, a: env.step({a: True}), ActionError),
    ("an unknown agent", lambda env, a: env.step({"nobody": 0}), ActionError),
    ("an agent whose turn it is not", lambda env, a: env.step({"player1": 0}), ActionError),
    ("no dict at all", lambda env, a: env.step([0]), ActionError),
    ("a missing actor", lambda env, a: env.step({}), ActionError),
]


@pytest.mark.parametrize(("case", "call", "error"), ERROR_CALLS, ids=[c for c, *_ in ERROR_CALLS])
def test_errors_come_back_as_the_local_env_raises_them_and_change_nothing(
        served: Any, case: str, call: Any, error: type) -> None:
    server = served("tic_tac_toe")
    remote, local = connect(server.address), marlhub.make("tic_tac_toe")
    if case != "step before reset":
        for env in (remote, local):
            env.reset(seed=1)  # player1 acts first under seed 1
            env.step({"player1": 4})
    with pytest.raises(error) as remote_error:
        call(remote, "player2")
    with pytest.raises(error) as local_error:
        call(local, "player2")
    assert str(remote_error.value) == str(local_error.value)
    assert type(remote_error.value) is type(local_error.value)
    assert vars(remote_error.value) == vars(local_error.value)
    if case != "step before reset":  # the episode goes on as if nothing was sent
        assert why_different(remote.step({"player2": 0}), local.step({"player2": 0})) is None
        assert remote.agents == local.agents
    remote.close()


def test_a_masked_out_action_is_refused_with_the_envs_message(served: Any) -> None:
    server = served("pettingzoo/classic/tictactoe-v3")
    remote, local = connect(server.address), marlhub.make("pettingzoo/classic/tictactoe-v3")
    messages = []
    for env in (remote, local):
        env.reset(seed=0)
        env.step({"player_1": 4})
        with pytest.raises(ActionError) as caught:
            env.step({"player_2": 4})
        messages.append(str(caught.value))
        obs, *_ = env.step({"player_2": 0})
    assert messages[0] == messages[1] and "mask" in messages[0]
    remote.close()


def test_step_after_the_end_is_the_envs_reset_needed_error(served: Any) -> None:
    server = served("rock_paper_scissors")
    remote = connect(server.address)
    remote.reset(seed=0)
    done = False
    while not done:
        _, _, terms, truncs, _ = remote.step({"player1": 0, "player2": 1})
        done = terms["__all__"] or truncs["__all__"]
    assert remote.agents == []
    with pytest.raises(ResetNeededError, match="episode is over"):
        remote.step({"player1": 0, "player2": 1})
    remote.close()


def test_reset_options_seeds_of_any_kind_and_render_reach_the_env(served: Any) -> None:
    server = served("tic_tac_toe")
    remote, local = connect(server.address), marlhub.make("tic_tac_toe")
    assert remote.reset(seed=3, options={"x": (1, 2)})[0].keys() == \
        local.reset(seed=3, options={"x": (1, 2)})[0].keys()
    with pytest.raises(type(_error(lambda: local.reset(seed="abc")))) as caught:
        remote.reset(seed="abc")
    assert str(caught.value) == str(_error(lambda: local.reset(seed="abc")))
    assert remote.render() == local.render()
    remote.close()


def _error(call: Any) -> BaseException:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the exception is the point
        return exc
    raise AssertionError("expected an error")


def test_agents_follow_the_server_env(served: Any) -> None:
    server = served("traffic")
    remote, local = connect(server.address), marlhub.make("traffic")
    remote.reset(seed=2), local.reset(seed=2)
    assert remote.agents == local.agents
    assert compare_with_local(remote, local, episodes=2, seed=2) == []
    assert remote.agents == local.agents
    remote.close()


def test_a_deep_copy_copies_the_world_and_a_pickle_makes_a_new_one(served: Any) -> None:
    server = served("tic_tac_toe")
    remote, local = connect(server.address), marlhub.make("tic_tac_toe")
    for env in (remote, local):
        env.reset(seed=1)
        env.step({"player1": 4})
    twin = copy.deepcopy(remote)  # mid-episode: the copy goes on from here, on its own
    assert twin.world_name != remote.world_name and len(server.worlds.worlds) == 2
    assert twin.agents == remote.agents
    local_twin = copy.deepcopy(local)
    for actions in ({"player2": 0}, {"player1": 8}):
        assert why_different(twin.step(actions), local_twin.step(actions)) is None
    restored = pickle.loads(pickle.dumps(remote))  # a pickle may load anywhere, later
    with pytest.raises(ResetNeededError, match="reset\\(\\) has not been called"):
        restored.step({"player2": 0})
    assert why_different(remote.step({"player2": 0}), local.step({"player2": 0})) is None
    for env in (remote, twin, restored):
        env.close()
    assert server.worlds.worlds == {}


def test_openspiel_algorithms_clone_remote_envs(served: Any) -> None:
    pyspiel = pytest.importorskip("pyspiel")
    from marlhub.adapters.openspiel import to_openspiel

    server = served("tic_tac_toe")
    game = to_openspiel(lambda: connect(server.address), short_name="remote_tic_tac_toe_test")
    pyspiel.random_sim_test(game, num_sims=1, serialize=False, verbose=False)


def test_client_config_needs_the_servers_permission(served: Any) -> None:
    strict = served("traffic")
    with pytest.raises(RemoteRequestError, match="PERMISSION_DENIED.*own config only"):
        connect(strict.address, {"num_cars": 2})
    open_server = served("traffic", allow_config=True)
    env = connect(open_server.address, {"num_cars": 2})
    assert env.env_config == {"num_cars": 2}
    assert env.possible_agents == marlhub.make("traffic", {"num_cars": 2}).possible_agents
    with pytest.raises(ConfigError, match="num_carz"):
        connect(open_server.address, {"num_carz": 2})
    env.close()


def test_connect_refuses_unknown_options() -> None:
    with pytest.raises(ConfigError, match="unknown keys \\['timeot'\\]"):
        connect("127.0.0.1:1", timeot=3)


class GraphEnv(marlhub.MultiAgentEnv):
    """An env whose observation space has no tensor form."""

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = self.agents = ["a"]
        self.observation_spaces = {"a": gym.spaces.Graph(gym.spaces.Discrete(2), None)}
        self.action_spaces = {"a": gym.spaces.Discrete(2)}


def test_an_unmappable_space_is_refused_when_serving_and_at_create_world(served: Any) -> None:
    registry = marlhub.Registry()
    registry.register("graph", GraphEnv)
    with pytest.raises(RemoteRequestError, match="cannot be served over dm_env_rpc: Graph"):
        served("graph", registry=registry)
    from marlhub.adapters.remote.host import WorldHost
    from marlhub.adapters.remote.view import start_grpc_server

    host = WorldHost(lambda config: GraphEnv(), env_id="graph")
    server, port = start_grpc_server(host)
    try:
        with pytest.raises(RemoteRequestError, match="refused CreateWorld \\(FAILED_PRECONDITION\\)"
                           ".*Graph"):
            connect(f"127.0.0.1:{port}")
    finally:
        server.stop(None)
