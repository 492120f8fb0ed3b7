"""The error tree: one root, matching built-ins, messages that say what to do."""

from __future__ import annotations

import pytest

import marlhub
from marlhub import errors as E


@pytest.mark.parametrize(("cls", "builtin"), [
    (E.UnknownEnvError, KeyError),
    (E.ActionError, ValueError),
    (E.ConfigError, ValueError),
    (E.MissingDependencyError, ImportError),
    (E.ResetNeededError, RuntimeError),
    (E.EnvCreationError, RuntimeError),
    (E.EnvRegistrationError, ValueError),
    (E.NotParallelizableError, ValueError),
    (E.ProtocolError, TypeError),
    (E.TargetError, ValueError),
])
def test_each_error_is_a_marlhub_error_and_its_builtin(cls: type, builtin: type) -> None:
    assert issubclass(cls, E.MarlhubError) and issubclass(cls, builtin)


def test_unknown_env_error_suggests_and_prints_plainly() -> None:
    err = E.UnknownEnvError("tic_tac_to", ["tic_tac_toe"])
    assert str(err).startswith("No env is registered as 'tic_tac_to'.")
    assert "Did you mean 'tic_tac_toe'?" in str(err) and "marlhub list" in str(err)
    assert err.env_id == "tic_tac_to" and err.suggestions == ["tic_tac_toe"]


def test_make_with_a_typo_raises_a_key_error_naming_the_right_id() -> None:
    with pytest.raises(KeyError, match="tic_tac_toe"):
        marlhub.make("tic_tac_to")


def test_action_error_keeps_its_fields_and_says_how_to_fix() -> None:
    err = E.ActionError("player_2", 7, expected="an integer in [0, 8]")
    assert (err.agent_id, err.actual, err.expected) == ("player_2", 7, "an integer in [0, 8]")
    assert str(err).startswith("Bad action for 'player_2': got 7, expected an integer in [0, 8].")


def test_missing_dependency_names_the_extra() -> None:
    err = E.MissingDependencyError("pyspiel", "openspiel", "The OpenSpiel adapter")
    assert "pip install 'marlhub[openspiel]'" in str(err) and err.name == "pyspiel"


def test_closest_finds_family_members_by_their_last_part() -> None:
    assert E.closest("leduc_poker", ["openspiel/leduc_poker", "traffic"]) == ["openspiel/leduc_poker"]


def test_reset_needed_error_takes_an_env_name_and_reason_or_a_whole_message() -> None:
    assert str(E.ResetNeededError("Nim", "reset() has not been called yet")) == (
        "Nim.step() was called but reset() has not been called yet. Call reset() to start a "
        "new episode.")
    assert str(E.ResetNeededError("Nim")).startswith("Nim.step() was called but the episode is over")
    own = E.ResetNeededError("Nim is over: call reset() before step().")
    assert str(own) == "Nim is over: call reset() before step()." and own.env_name == ""


def test_remote_env_error_names_the_key_of_the_time_limit_that_ran_out() -> None:
    assert "{'connect_timeout': seconds}" in str(E.RemoteEnvError("h:1", "connect", "no answer"))
    assert "{'timeout': seconds}" in str(E.RemoteEnvError("h:1", "Step", "no answer"))


@pytest.mark.parametrize(("config", "cause", "hint"), [
    ({}, ImportError("MuJoCo is not installed"), "A package the env needs is missing"),
    ({"size": 3}, ImportError("no module x"), "A package the env needs is missing"),
    ({}, ValueError("bad board"), "The env's creator raised without any config"),
    ({"size": 3}, ValueError("size must be odd"), "Check the config against what the env's"),
])
def test_env_creation_error_blames_the_config_only_when_there_is_one(
        config: dict, cause: Exception, hint: str) -> None:
    message = str(E.EnvCreationError("my_env", config, cause))
    assert hint in message and "check the config" not in message.lower().replace(
        "check the config against", "")


def test_make_with_config_as_keyword_arguments_says_to_pass_a_dict() -> None:
    with pytest.raises(E.ConfigError, match=r"make\(\) got keyword arguments \['num_cars'\], "
                       r".*Pass the env's config as a dict: marlhub.make\('traffic', "
                       r"\{'num_cars': 3\}\)"):
        marlhub.make("traffic", num_cars=3)
    assert marlhub.make("traffic", {"num_cars": 3}).possible_agents[-1] == "light"
