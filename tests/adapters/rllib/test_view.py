"""Hub -> RLlib: real ray.rllib MultiAgentEnvs that RLlib's own checker accepts; registration."""

from __future__ import annotations

import pickle
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ray.rllib")

from ray.rllib.env.env_context import EnvContext as RLlibEnvContext  # noqa: E402
from ray.rllib.env.multi_agent_env import MultiAgentEnv as RLlibMultiAgentEnv  # noqa: E402
from ray.rllib.utils.pre_checks.env import check_multiagent_environments  # noqa: E402
from ray.tune.registry import ENV_CREATOR, _global_registry  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.rllib import (  # noqa: E402
    RayEnvCreator,
    RLlibEnv,
    from_rllib,
    register_with_ray,
    to_rllib,
)
from marlhub.contract.compare import why_different  # noqa: E402
from marlhub.core import ALL, MultiAgentEnv  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe, Traffic  # noqa: E402
from marlhub.errors import ActionError, EnvContractError, UnknownEnvError  # noqa: E402
from marlhub.registry import EnvContext, Registry, default_registry  # noqa: E402
from marlhub.spaces import ActionSampler, find_action_mask  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")

#: Every reference env, and one env of each family (their backends permitting).
CHECKED_IDS = [
    "rock_paper_scissors",
    "tic_tac_toe",
    "traffic",
    "pettingzoo/classic/tictactoe-v3",
    "openspiel/kuhn_poker",
    "openspiel/tic_tac_toe",
    "gymnasium/CartPole-v1",
]


def _backend_or_skip(env_id: str) -> None:
    backend = {"pettingzoo": "pettingzoo", "openspiel": "pyspiel"}.get(env_id.split("/")[0])
    if backend:
        pytest.importorskip(backend)


@pytest.mark.parametrize("env_id", CHECKED_IDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rllib_checker_passes(env_id: str, seed: int) -> None:
    _backend_or_skip(env_id)
    env = to_rllib(marlhub.make(env_id))
    assert isinstance(env, RLlibMultiAgentEnv)
    for agent in env.possible_agents:  # the checker samples from the action spaces
        env.get_action_space(agent).seed(seed)
    check_multiagent_environments(env)


def test_rllib_checker_passes_when_the_first_step_ends_the_episode() -> None:
    # The checker wants every key of the step's results in env.agents, but the hub
    # empties agents at the end: the RLlib face keeps the agents the last step named.
    env = to_rllib(TicTacToe({"max_steps": 1}))
    check_multiagent_environments(env)
    assert env.env.agents == []
    assert sorted(env.agents) == ["player1", "player2"]
    env.reset(seed=0)
    assert env.agents == env.env.agents


def test_rllib_checker_refuses_what_it_should() -> None:
    # The checker is not a rubber stamp: a foreign agent id in obs fails it.
    class Stranger(TicTacToe):
        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            obs, _ = super().reset(seed=seed, options=options)
            return {"nobody": next(iter(obs.values()))}, {}

    with pytest.raises(ValueError, match="agent_ids that are not the names"):
        check_multiagent_environments(to_rllib(Stranger(), check=False))


def _play(env: Any, seed: int, actions_seed: int, max_steps: int = 200) -> list[Any]:
    """Play one seeded episode with seeded legal actions; return everything the env said."""
    sampler = ActionSampler(actions_seed)
    obs, infos = env.reset(seed=seed)
    record: list[Any] = [(obs, infos, list(env.possible_agents))]
    for _ in range(max_steps):
        actions = {
            a: sampler.sample(a, env.get_action_space(a), find_action_mask(obs[a], infos.get(a)))
            for a in obs
        }
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        record.append((actions, obs, rewards, terminateds, truncateds, infos))
        if terminateds[ALL] or truncateds[ALL]:
            break
        obs = {a: o for a, o in obs.items() if not (terminateds.get(a) or truncateds.get(a))}
    return record


@pytest.mark.parametrize(
    "make", [TicTacToe, RockPaperScissors, lambda: Traffic({"num_cars": 4, "max_steps": 40})],
    ids=["TicTacToe", "RockPaperScissors", "Traffic"],
)
def test_to_rllib_changes_nothing_the_hub_env_says(make: Callable[[], MultiAgentEnv]) -> None:
    for seed in range(3):
        native = _play(make(), seed, seed + 10)
        adapted = _play(to_rllib(make()), seed, seed + 10)
        assert why_different(native, adapted) is None


def test_spaces_are_the_hub_envs() -> None:
    hub = Traffic({"num_cars": 2})
    env = to_rllib(hub)
    for agent in hub.possible_agents:
        assert env.get_observation_space(agent) is hub.get_observation_space(agent)
        assert env.get_action_space(agent) is hub.get_action_space(agent)
    assert isinstance(env.observation_space, gym.spaces.Dict)
    assert set(env.action_space.spaces) == set(hub.possible_agents)
    assert env.num_cars == 2  # public attributes are read from the hub env


def test_round_trips_unwrap() -> None:
    hub = TicTacToe()
    rl = to_rllib(hub)
    assert from_rllib(rl) is hub
    assert marlhub.convert(hub, to="rllib").env is hub
    assert marlhub.convert(rl, to="marlhub") is hub  # to_hub unwraps marlhub's own views
    assert marlhub.convert(rl, to="pettingzoo.aec").hub_env is hub

    class NativeRLlib(RLlibMultiAgentEnv):
        def __init__(self) -> None:
            super().__init__()
            self.possible_agents = self.agents = ["x"]
            self.observation_spaces = {"x": gym.spaces.Discrete(2)}
            self.action_spaces = {"x": gym.spaces.Discrete(2)}

        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            return {"x": 0}, {}

        def step(self, action_dict: Any) -> Any:
            return {"x": 1}, {"x": 1.0}, {"__all__": True}, {"__all__": False}, {}

    native = NativeRLlib()
    assert marlhub.convert(native, to="marlhub") is native  # checked as it is, not repaired
    hubbed = from_rllib(native)
    assert isinstance(hubbed, RLlibEnv) and isinstance(hubbed, MultiAgentEnv)
    assert to_rllib(hubbed) is native
    assert to_rllib(native) is native

    class Duck:  # RLlib-style, no RLlib base class, no __all__ in truncateds
        possible_agents = agents = ["x"]
        observation_spaces = action_spaces = {"x": gym.spaces.Discrete(2)}

        def reset(self, *, seed: Any = None, options: Any = None) -> Any:
            return {"x": 0}, {}

        def step(self, action_dict: Any) -> Any:
            return {"x": 1}, {"x": 1.0}, {"__all__": True}, {}, {}

    guarded = from_rllib(Duck())
    duck_face = to_rllib(guarded)
    assert duck_face.env is guarded  # the guarantees stay on
    duck_face.reset(seed=0)
    assert duck_face.step({"x": 0})[3] == {ALL: False}


def test_to_rllib_of_foreign_envs_goes_through_the_hub() -> None:
    pytest.importorskip("pettingzoo")
    from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make
    native = pettingzoo_make("aec", "classic/connect_four-v3")
    env = to_rllib(native)
    assert isinstance(env, RLlibMultiAgentEnv)
    assert type(env.env).__name__ == "PettingZooEnv" and env.env.env is native


class PaysTheDead(MultiAgentEnv):
    """'a' terminates in step 1, yet step 2 pays it 0.0: RLlib raises on data for done agents."""

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.agents = []
        self.observation_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}
        self.action_spaces = {x: gym.spaces.Discrete(2) for x in self.possible_agents}
        self.t = 0

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        self.t, self.agents = 0, ["a", "b"]
        return {"a": 0, "b": 0}, {}

    def step(self, action_dict: Any) -> Any:
        self.t += 1
        if self.t == 1:
            self.agents = ["b"]
            return ({"a": 1, "b": 1}, {"a": 1.0, "b": 0.0}, {"a": True, ALL: False},
                    {ALL: False}, {})
        self.agents = []
        return {"b": 1}, {"a": 0.0, "b": 1.0}, {ALL: True}, {ALL: False}, {}


def test_guard_names_the_rule_rllib_would_trip_on() -> None:
    env = to_rllib(PaysTheDead())
    env.reset(seed=0)
    env.step({"a": 0, "b": 0})
    rule = r"'done\.final': 'a' was done.*step 2 of the episode"
    with pytest.raises(EnvContractError, match=rule):
        env.step({"b": 0})
    # check=False hands the data on as it is (RLlib would be the one to raise).
    quiet = to_rllib(PaysTheDead(), check=False)
    quiet.reset(seed=0)
    quiet.step({"a": 0, "b": 0})
    assert quiet.step({"b": 0})[1] == {"a": 0.0, "b": 1.0}


def test_hub_errors_pass_through() -> None:
    env = to_rllib(TicTacToe())
    obs, _ = env.reset(seed=0)
    with pytest.raises(ActionError, match="actions only for the actors"):
        env.step({"nobody": 0, **{a: 0 for a in obs}})


def test_agent_lists_belong_to_the_hub_env() -> None:
    env = to_rllib(TicTacToe())
    with pytest.raises(AttributeError, match="cannot be assigned; change agents on the hub env"):
        env.agents = ["player1"]
    with pytest.raises(AttributeError, match="possible_agents of a HubRLlibEnv"):
        env.possible_agents = []
    with pytest.raises(AttributeError, match="no attribute '_secret'"):
        env._secret  # noqa: B018


# -- register_with_ray ----------------------------------------------------------------


def _ray_creator(name: str) -> Any:
    return _global_registry.get(ENV_CREATOR, name)


def test_register_with_ray_one_id_resolves_lazily_with_rllibs_config() -> None:
    assert register_with_ray("tic_tac_toe") == ["marlhub/tic_tac_toe"]
    creator = _ray_creator("marlhub/tic_tac_toe")
    assert isinstance(creator, RayEnvCreator) and creator.env_id == "tic_tac_toe"
    config = RLlibEnvContext({"max_steps": 3}, worker_index=2, num_workers=4, vector_index=1)
    env = pickle.loads(pickle.dumps(creator))(config)
    assert isinstance(env, RLlibMultiAgentEnv) and isinstance(env.env, TicTacToe)
    assert env.env.max_steps == 3


def test_creators_receive_worker_fields() -> None:
    def creator(config: EnvContext) -> TicTacToe:
        env = TicTacToe()
        env.config_seen = config  # type: ignore[attr-defined]
        return env

    registry = Registry()
    registry.register("spy", creator)
    register_with_ray("spy", registry=registry, prefix="test/")
    config = RLlibEnvContext({}, worker_index=3, num_workers=5, vector_index=2)
    made = _ray_creator("test/spy")(config)
    ctx = made.config_seen
    assert isinstance(ctx, EnvContext)
    assert (ctx.worker_index, ctx.num_workers, ctx.vector_index) == (3, 5, 2)


def test_family_ids_are_resolved_on_the_worker_not_at_registration() -> None:
    pytest.importorskip("pyspiel")
    name = register_with_ray("openspiel/kuhn_poker(players=3)", prefix="lazy/")[0]
    creator = _ray_creator(name)
    assert creator.creator is None  # nothing but the id travels
    shipped = pickle.dumps(creator)
    assert len(shipped) < 500
    env = pickle.loads(shipped)({})
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    check_multiagent_environments(env)


def test_ids_registered_by_name_carry_their_creator_to_workers() -> None:
    # A lambda registered in the driver reaches a worker where it was never registered.
    import cloudpickle

    marlhub.register_env("rllib_test_short_ttt", lambda config: TicTacToe({"max_steps": 2}))
    try:
        register_with_ray("rllib_test_short_ttt")
        shipped = cloudpickle.dumps(_ray_creator("marlhub/rllib_test_short_ttt"))
    finally:
        default_registry().unregister("rllib_test_short_ttt")
    env = pickle.loads(shipped)({})  # the id is unknown to this process's registry now
    obs, _ = env.reset(seed=0)
    obs = env.step({next(iter(obs)): 0})[0]
    assert env.step({next(iter(obs)): 1})[3][ALL] is True


def test_register_with_ray_glob() -> None:
    names = register_with_ray("t*", prefix="glob/")
    assert names == ["glob/tic_tac_toe", "glob/traffic"]
    assert isinstance(_ray_creator("glob/traffic")({"num_cars": 2}).env, Traffic)


def test_register_with_ray_family_glob() -> None:
    pytest.importorskip("pyspiel")
    names = register_with_ray("openspiel/*_poker", prefix="glob/")
    assert "glob/openspiel/kuhn_poker" in names and "glob/openspiel/leduc_poker" in names


def test_register_with_ray_errors() -> None:
    with pytest.raises(UnknownEnvError, match="'tic_tac_to'.*Did you mean 'tic_tac_toe'"):
        register_with_ray("tic_tac_to")
    with pytest.raises(UnknownEnvError, match="'zz\\*'.*matches no registered id"):
        register_with_ray("zz*")
    with pytest.raises(TypeError, match="registry id or a glob.*got int 3"):
        register_with_ray(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prefix must be a string"):
        register_with_ray("traffic", prefix=None)  # type: ignore[arg-type]
    assert not _global_registry.contains(ENV_CREATOR, "marlhub/tic_tac_to")


def test_bad_env_config_fails_on_the_worker_with_marlhubs_message() -> None:
    register_with_ray("traffic", prefix="cfg/")
    with pytest.raises(marlhub.errors.ConfigError, match="Bad config for 'traffic'.*num_car"):
        _ray_creator("cfg/traffic")({"num_car": 2})


def test_observation_dtypes_survive() -> None:
    env = to_rllib(TicTacToe())
    obs, _ = env.reset(seed=0)
    (value,) = obs.values()
    assert value.dtype == np.float32


def test_rllib_envs_pickle_and_copy_with_their_episode() -> None:
    import copy

    env = to_rllib(TicTacToe())
    obs, _ = env.reset(seed=0)
    for clone in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert type(clone) is type(env) and isinstance(clone, RLlibMultiAgentEnv)
        assert clone.env is not env.env
        clone.step({next(iter(obs)): 4})
        assert clone.env.board != env.env.board  # the clone moved, the original did not


# -- masked games: RLlib samples from the whole space ------------------------------------

MASKED = ["openspiel/chess", "openspiel/go", "openspiel/backgammon", "openspiel/leduc_poker",
          "pettingzoo/classic/chess-v6", "pettingzoo/classic/connect_four-v3"]


@pytest.mark.parametrize("mask_observation", [False, True])
@pytest.mark.parametrize("env_id", MASKED)
def test_rllib_checker_passes_on_masked_games_with_defaults(env_id: str,
                                                           mask_observation: bool) -> None:
    pytest.importorskip("pyspiel" if env_id.startswith("openspiel") else "pettingzoo")
    check_multiagent_environments(to_rllib(marlhub.make(env_id),
                                           mask_observation=mask_observation))


def test_an_illegal_action_ends_the_episode_and_masks_are_in_infos() -> None:
    pytest.importorskip("pyspiel")
    env = to_rllib(marlhub.make("openspiel/tic_tac_toe"))
    obs, infos = env.reset(seed=0)
    assert (infos["player_0"]["action_mask"] == obs["player_0"]["action_mask"]).all()
    env.step({"player_0": 4})
    _, rewards, terminateds, _, infos = env.step({"player_1": 4})
    assert rewards["player_1"] == -1.0 and terminateds[ALL]
    assert infos["player_1"]["illegal_action"] == 4
    strict = to_rllib(marlhub.make("openspiel/tic_tac_toe"), illegal_action="raise")
    strict.reset(seed=0)
    strict.step({"player_0": 4})
    with pytest.raises(ActionError, match="expected a legal action"):
        strict.step({"player_1": 4})


def test_the_masked_observation_layout_of_rllibs_masking_module() -> None:
    env = to_rllib(TicTacToe(), mask_observation=True)  # no masks: all ones
    space = env.get_observation_space("player1")
    assert set(space.spaces) == {"observations", "action_mask"}
    obs, _ = env.reset(seed=0)
    (agent,) = obs
    assert space.contains(obs[agent]) and obs[agent]["action_mask"].tolist() == [1.0] * 9
    assert from_rllib(env) is env.env
