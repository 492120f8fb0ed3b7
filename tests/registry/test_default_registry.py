"""The default registry behind marlhub.make / register_env / registered."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

import marlhub
from marlhub.contract.compare import why_different
from marlhub.envs import BUILTIN_ENVS, TicTacToe, Traffic
from marlhub.errors import ConfigError, NotParallelizableError, UnknownEnvError
from marlhub.registry import (
    EnvContext,
    create_default_registry,
    default_registry,
    simultaneous_config,
)

#: Envs of the PettingZoo families that exist natively in parallel: id, the module of
#: their native ``parallel_env`` and a config of short episodes.
NATIVELY_PARALLEL = [
    ("mpe2/simple_spread-v3", "mpe2.simple_spread_v3", {"max_cycles": 6}),
    ("pettingzoo/butterfly/pistonball-v6", "pettingzoo.butterfly.pistonball_v6",
     {"n_pistons": 4, "max_cycles": 6}),
    ("magent2/battle-v4", "magent2.environments.battle_v4", {"map_size": 12, "max_cycles": 6}),
    ("magent2/tiger_deer-v4", "magent2.environments.tiger_deer_v4",
     {"map_size": 10, "max_cycles": 6}),
]


def test_make_tic_tac_to_suggests_tic_tac_toe() -> None:
    with pytest.raises(KeyError, match=r"Did you mean 'tic_tac_toe'\?.*marlhub list") as info:
        marlhub.make("tic_tac_to")
    assert isinstance(info.value, UnknownEnvError)
    assert info.value.suggestions[0] == "tic_tac_toe"


def test_builtins_are_registered_by_plain_name_with_their_descriptions() -> None:
    entries = dict(default_registry().entries("*", families=False))
    for name, (_, description) in BUILTIN_ENVS.items():
        assert entries[name] == description
    assert set(BUILTIN_ENVS) <= set(marlhub.registered(families=False))


def test_make_builtin_with_config() -> None:
    env = marlhub.make("traffic", {"num_cars": 2})
    assert isinstance(env, Traffic)
    assert env.possible_agents == ["car_0", "car_1", "light"]


def test_builtin_config_errors_pass_through() -> None:
    with pytest.raises(ConfigError, match="Bad config for 'traffic'"):
        marlhub.make("traffic", {"no_such_key": 1})


def test_register_env_and_make_through_the_package() -> None:
    seen: list[Any] = []

    def creator(config: EnvContext) -> TicTacToe:
        seen.append(config.worker_index)
        return TicTacToe(config)

    marlhub.register_env("test_default_tic_tac_toe", creator)
    try:
        env = marlhub.make("test_default_tic_tac_toe", EnvContext({}, worker_index=5))
        assert isinstance(env, TicTacToe) and seen == [5]
        assert marlhub.registered("test_default_*") == ["test_default_tic_tac_toe"]
    finally:
        default_registry().unregister("test_default_tic_tac_toe")
    assert marlhub.registered("test_default_*") == []


def test_default_registry_is_one_object_and_created_ones_are_fresh() -> None:
    assert default_registry() is default_registry()
    created = create_default_registry(entry_point_group=None)
    assert created is not default_registry()
    assert created.registered(families=False) == sorted(BUILTIN_ENVS)


def _episode(par: Any, seed: int) -> list[Any]:
    """A seeded episode of a PettingZoo parallel env, its actions drawn from seeded spaces."""
    record: list[Any] = [par.reset(seed=seed)[0]]
    for i, agent in enumerate(par.possible_agents):
        par.action_space(agent).seed(seed + i)
    while par.agents:
        actions = {agent: par.action_space(agent).sample() for agent in par.agents}
        record.append(par.step(actions)[:4])
    return record


@pytest.mark.parametrize(("env_id", "module", "config"), NATIVELY_PARALLEL)
def test_natively_parallel_ids_are_made_parallel_for_the_parallel_api(
        env_id: str, module: str, config: dict[str, Any]) -> None:
    native = pytest.importorskip(module)
    assert simultaneous_config(env_id, config) == {**config, "api": "parallel"}
    par = marlhub.make(env_id, config, to="pettingzoo.parallel")
    assert type(par).__name__ != "HubParallelEnv"  # the native env itself, not a view
    assert why_different(_episode(par, 3), _episode(native.parallel_env(**config), 3)) is None


def test_simultaneous_config_leaves_envs_without_a_parallel_version_alone() -> None:
    config = {"max_steps": 9}
    assert simultaneous_config("tic_tac_toe", config) is config
    assert simultaneous_config("openspiel/kuhn_poker", None) is None
    assert simultaneous_config("mpe2/simple_spread-v3", {"api": "aec"}) == {"api": "aec"}
    if importlib.util.find_spec("pettingzoo") is not None:
        assert simultaneous_config("pettingzoo/classic/tictactoe-v3", config) is config
        assert simultaneous_config("pettingzoo/classic/chess-v6", None) is None


def test_turn_based_envs_are_still_refused_as_turn_based() -> None:
    with pytest.raises(NotParallelizableError, match=r"Only 'player2' act in this step .* The "
                       r"env is turn-based: use to='pettingzoo.aec', or turn_based='pad' to "
                       r"give the idle agents their last observation\.$"):
        marlhub.make("tic_tac_toe", to="pettingzoo.parallel")
