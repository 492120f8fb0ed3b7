"""The openspiel/ registry family: game strings, config keys, listing, lockstep."""

from __future__ import annotations

import pytest

pyspiel = pytest.importorskip("pyspiel")

from marlhub.adapters.openspiel import OpenSpielEnv  # noqa: E402
from marlhub.adapters.openspiel.family import (  # noqa: E402
    PARAMETERISED_EXAMPLES,
    OpenSpielFamily,
)
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402
from marlhub.registry import EnvContext, Registry  # noqa: E402


@pytest.fixture(scope="module")
def family() -> OpenSpielFamily:
    return OpenSpielFamily()


@pytest.fixture(scope="module")
def registry(family: OpenSpielFamily) -> Registry:
    registry = Registry()
    registry.register_family(family)
    return registry


def test_game_strings_with_parameters_and_nested_games(registry: Registry) -> None:
    env = registry.make("openspiel/kuhn_poker(players=3)")
    assert isinstance(env, OpenSpielEnv) and str(env.game) == "kuhn_poker(players=3)"
    env = registry.make("openspiel/turn_based_simultaneous_game(game=goofspiel(num_cards=4))")
    assert str(env.game).startswith("turn_based_simultaneous_game(game=goofspiel(")
    assert "num_cards=4," in str(env.game)
    assert env.possible_agents == ["player_0", "player_1"]


def test_config_keys_become_game_parameters_or_adapter_options(registry: Registry) -> None:
    env = registry.make("openspiel/goofspiel", {"num_cards": 4, "max_steps": 2,
                                                "agent_ids": "int"})
    assert str(env.game) == "goofspiel(num_cards=4)" and env.max_steps == 2
    assert env.possible_agents == [0, 1]
    # Config overrides the string's parameters.
    env = registry.make("openspiel/kuhn_poker(players=3)", EnvContext({"players": 4},
                                                                      worker_index=2))
    assert env.num_players == 4


def test_unknown_config_key_lists_parameters_and_options(family: OpenSpielFamily) -> None:
    with pytest.raises(ConfigError, match=r"Bad config for 'openspiel/kuhn_poker': unknown key "
                       r"'playerz': neither a parameter of kuhn_poker nor an adapter option\. "
                       r"kuhn_poker accepts the parameters players=2 \(int\); the adapter takes "
                       r"observation, agent_ids") as info:
        family.make("kuhn_poker", EnvContext({"playerz": 3}))
    assert info.value.unknown == ["playerz"] and "players" in info.value.accepted
    assert "max_steps" in info.value.accepted


def test_unknown_parameter_in_the_string(family: OpenSpielFamily) -> None:
    with pytest.raises(ConfigError, match=r"unknown parameter 'num_card' for OpenSpiel game "
                       r"'goofspiel'\. goofspiel accepts: egocentric=False \(bool\)"):
        family.make("goofspiel(num_card=4)", EnvContext())
    with pytest.raises(ConfigError, match=r"unknown parameter 'cards' for OpenSpiel game "
                       r"'goofspiel'"):
        family.make("turn_based_simultaneous_game(game=goofspiel(cards=4))", EnvContext())


def test_unknown_game_suggests_ids_of_the_family(registry: Registry) -> None:
    with pytest.raises(UnknownEnvError, match=r"'openspiel/leduc_pokr'.*OpenSpiel has no game "
                       r"named 'leduc_pokr'.*Did you mean 'openspiel/leduc_poker'"):
        registry.make("openspiel/leduc_pokr")


def test_games_that_need_parameters_say_which(family: OpenSpielFamily) -> None:
    with pytest.raises(ConfigError, match=r"Missing parameter game"):
        family.make("turn_based_simultaneous_game", EnvContext())
    with pytest.raises(ConfigError, match=r"mean-field"):
        family.make("mfg_garnet", EnvContext())


def test_ids_enumerate_every_registered_game_with_dynamics_and_players(
    family: OpenSpielFamily,
) -> None:
    listing = dict(family.ids())
    names = set(pyspiel.registered_names())
    assert {f"openspiel/{n}" for n in names} <= set(listing)
    assert listing["openspiel/goofspiel"] == (
        "Goofspiel: simultaneous, 2 players, chance, perfect information"
    )
    assert listing["openspiel/tic_tac_toe"].endswith(
        "sequential, 2 players, deterministic, perfect information"
    )
    assert listing["openspiel/turn_based_simultaneous_game"].endswith(
        "needs parameter game, e.g. openspiel/"
        "turn_based_simultaneous_game(game=goofspiel(num_cards=4))"
    )
    assert "mean-field" in listing["openspiel/mfg_crowd_modelling"]
    assert "action structs only" in listing["openspiel/crossword"]
    assert "openspiel/python_tic_tac_toe" in listing


def test_registry_listing_globs_reach_the_family(registry: Registry) -> None:
    ids = registry.registered("openspiel/kuhn*")
    assert "openspiel/kuhn_poker" in ids and "openspiel/leduc_poker" not in ids


@pytest.mark.parametrize("name", sorted(PARAMETERISED_EXAMPLES))
def test_every_parameterised_example_builds(family: OpenSpielFamily, name: str) -> None:
    env = family.make(PARAMETERISED_EXAMPLES[name], EnvContext())
    obs, _ = env.reset(seed=0)
    assert obs and env.num_players >= 1


def test_lockstep_through_the_family(family: OpenSpielFamily) -> None:
    assert family.lockstep("leduc_poker", EnvContext(), episodes=3, seed=0, max_steps=100) == []
    assert family.lockstep("goofspiel", EnvContext({"num_cards": 4, "observation": "string"}),
                           episodes=2, seed=5, max_steps=100) == []


def test_check_against_native_by_id(registry: Registry) -> None:
    report = check("openspiel/kuhn_poker(players=3)", episodes=3, against_native=True,
                   registry=registry)
    assert report.ok, str(report)
