"""The default registry behind marlhub.make / register_env / registered."""

from __future__ import annotations

from typing import Any

import pytest

import marlhub
from marlhub.envs import BUILTIN_ENVS, TicTacToe, Traffic
from marlhub.errors import ConfigError, UnknownEnvError
from marlhub.registry import EnvContext, create_default_registry, default_registry


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
