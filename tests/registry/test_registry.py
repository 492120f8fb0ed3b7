"""The Registry class: registration, make, errors, families and glob listing (fresh instances)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

import gymnasium as gym
import pytest

from marlhub import MultiAgentEnv
from marlhub.errors import (
    ConfigError,
    EnvCreationError,
    EnvRegistrationError,
    MarlhubWarning,
    MissingDependencyError,
    ProtocolError,
    UnknownEnvError,
)
from marlhub.registry import EnvContext, EnvSpec, Family, Registry


class ConfigEcho(MultiAgentEnv):
    """Keeps the config it was built with."""

    def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        self.config = config
        self.agents = self.possible_agents = ["a", "b"]
        self.observation_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        return {"a": 0, "b": 0}, {}

    def step(self, action_dict: dict) -> Any:
        return {}, {"a": 0.0, "b": 0.0}, {"__all__": True}, {"__all__": False}, {}


class NoArgs(ConfigEcho):
    def __init__(self) -> None:
        super().__init__(None)


class ToyFamily:
    """A family of envs named after their argument, counting its ids() calls."""

    def __init__(self, name: str = "toy", known: Iterable[str] = ("alpha", "beta", "leduc")) -> None:
        self.name = name
        self.description = "toy envs"
        self.known = list(known)
        self.listed = 0
        self.made: list[tuple[str, EnvContext]] = []

    def ids(self) -> Iterable[tuple[str, str]]:
        self.listed += 1
        return [(f"{self.name}/{k}", f"the toy env {k}") for k in self.known]

    def make(self, rest: str, config: EnvContext) -> Any:
        if rest not in self.known:
            raise UnknownEnvError(f"{self.name}/{rest}", [f"{self.name}/{k}" for k in self.known[:1]])
        self.made.append((rest, config))
        return ConfigEcho(config)


class MissingBackendFamily(ToyFamily):
    def ids(self) -> Iterable[tuple[str, str]]:
        raise MissingDependencyError("fakebackend", "fake", "The 'missing' family")


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.register("echo", ConfigEcho)
    return reg


# -- register -------------------------------------------------------------------------


def test_register_returns_a_spec_with_the_docstring_as_description(registry: Registry) -> None:
    spec = registry.spec("echo")
    assert spec == EnvSpec("echo", ConfigEcho, "Keeps the config it was built with.", "register", True)


def test_explicit_description_wins(registry: Registry) -> None:
    registry.register("described", ConfigEcho, description="one line")
    assert registry.entries("described") == [("described", "one line")]


def test_taken_name_raises_and_says_how_to_replace(registry: Registry) -> None:
    with pytest.raises(EnvRegistrationError, match=r"'echo': the name is taken.*overwrite=True"):
        registry.register("echo", NoArgs)
    assert registry.spec("echo").creator is ConfigEcho


def test_overwrite_replaces(registry: Registry) -> None:
    registry.register("echo", NoArgs, overwrite=True)
    assert type(registry.make("echo")) is NoArgs


def test_non_callable_creator_raises(registry: Registry) -> None:
    with pytest.raises(EnvRegistrationError, match=r"creator must be callable, got str 'ConfigEcho'"):
        registry.register("x", "ConfigEcho")  # type: ignore[arg-type]
    assert "x" not in registry.registered()


def test_bad_name_raises(registry: Registry) -> None:
    with pytest.raises(EnvRegistrationError, match="whitespace"):
        registry.register("my env", ConfigEcho)


def test_bad_description_raises(registry: Registry) -> None:
    with pytest.raises(EnvRegistrationError, match="description must be a string, got int"):
        registry.register("x", ConfigEcho, description=3)  # type: ignore[arg-type]


def test_slashed_name_without_a_family_is_allowed(registry: Registry) -> None:
    registry.register("mypkg/echo-v0", ConfigEcho)
    assert isinstance(registry.make("mypkg/echo-v0"), ConfigEcho)


def test_unregister(registry: Registry) -> None:
    registry.unregister("echo")
    with pytest.raises(UnknownEnvError):
        registry.make("echo")
    with pytest.raises(UnknownEnvError, match="Only registered names can be unregistered"):
        registry.unregister("echo")


# -- make and the config ------------------------------------------------------------


def test_make_passes_an_env_context_copy_of_the_dict(registry: Registry) -> None:
    config = {"size": 3}
    env = registry.make("echo", config)
    assert isinstance(env.config, EnvContext)
    assert env.config == {"size": 3}
    assert env.config.worker_index == 0
    env.config["size"] = 99
    assert config == {"size": 3}


def test_make_keeps_the_callers_env_context_attributes(registry: Registry) -> None:
    ctx = EnvContext({"size": 3}, worker_index=2, vector_index=1, num_workers=4, remote=True)
    env = registry.make("echo", ctx)
    assert env.config is not ctx
    assert (env.config.worker_index, env.config.vector_index, env.config.num_workers) == (2, 1, 4)
    assert env.config.remote is True and env.config == {"size": 3}
    env.config["size"] = 0
    assert ctx == {"size": 3}


def test_function_creator_gets_the_config(registry: Registry) -> None:
    seen: list[Any] = []

    def creator(config: EnvContext) -> ConfigEcho:
        seen.append(config)
        return ConfigEcho(config)

    registry.register("via_function", creator)
    registry.make("via_function", {"k": 1})
    assert seen == [{"k": 1}] and isinstance(seen[0], EnvContext)


def test_creator_without_arguments_is_called_without_config(registry: Registry) -> None:
    registry.register("noargs", NoArgs)
    assert type(registry.make("noargs")) is NoArgs
    assert type(registry.make("noargs", {})) is NoArgs
    with pytest.raises(ConfigError, match=r"'noargs'.*takes no config, got keys \['k'\].*pass config=None"):
        registry.make("noargs", {"k": 1})


@pytest.mark.parametrize("config", [[1, 2], "size=3", 3])
def test_non_mapping_config_raises_config_error(registry: Registry, config: Any) -> None:
    with pytest.raises(ConfigError, match=r"Bad config for 'echo': config must be a mapping such as a dict, got"):
        registry.make("echo", config)


def test_unknown_id_is_a_key_error_with_suggestions(registry: Registry) -> None:
    registry.register("tic_tac_toe", ConfigEcho)
    with pytest.raises(KeyError) as info:
        registry.make("tic_tac_to")
    assert isinstance(info.value, UnknownEnvError)
    assert info.value.suggestions == ["tic_tac_toe"]
    assert "Did you mean 'tic_tac_toe'?" in str(info.value)
    assert "marlhub list" in str(info.value)


def test_non_string_id_raises_unknown(registry: Registry) -> None:
    with pytest.raises(UnknownEnvError, match="Env ids are strings, got int"):
        registry.make(3)  # type: ignore[arg-type]


def test_creator_raising_becomes_env_creation_error(registry: Registry) -> None:
    cause = ValueError("size must be odd")

    def creator(config: EnvContext) -> Any:
        raise cause

    registry.register("fails", creator)
    with pytest.raises(EnvCreationError, match=r"'fails' with config \{'size': 4\} failed: ValueError: size must be odd") as info:
        registry.make("fails", {"size": 4})
    assert info.value.__cause__ is cause
    assert info.value.env_id == "fails" and info.value.config == {"size": 4}
    assert isinstance(info.value, RuntimeError)


def test_marlhub_errors_from_the_creator_pass_through(registry: Registry) -> None:
    error = ConfigError("strict", "unknown key 'x'", unknown=["x"], accepted=["size"])

    def creator(config: EnvContext) -> Any:
        raise error

    registry.register("strict", creator)
    with pytest.raises(ConfigError) as info:
        registry.make("strict", {"x": 1})
    assert info.value is error


def test_creator_returning_no_env_raises_protocol_error(registry: Registry) -> None:
    registry.register("not_an_env", lambda config: 42)
    # to_hub asks each adapter module whether 42 is of its kind.
    pytest.importorskip("marlhub.adapters.pettingzoo")
    pytest.importorskip("marlhub.adapters.openspiel")
    with pytest.raises(ProtocolError, match=r"the creator of 'not_an_env' to return a MultiAgentEnv"):
        registry.make("not_an_env")


# -- families -------------------------------------------------------------------------


def test_family_dispatch_passes_rest_and_context(registry: Registry) -> None:
    family = ToyFamily()
    registry.register_family(family)
    env = registry.make("toy/alpha", EnvContext({"k": 1}, worker_index=3))
    assert isinstance(env, ConfigEcho)
    rest, ctx = family.made[0]
    assert rest == "alpha" and ctx == {"k": 1} and ctx.worker_index == 3
    assert family.listed == 0  # making never lists the catalogue
    assert registry.spec("toy/alpha") == EnvSpec("toy/alpha", None, "toy envs", "family toy")


class ParallelToyFamily(ToyFamily):
    """A toy family whose ``alpha`` has a parallel version, chosen by ``{"api": "parallel"}``."""

    def parallel_config(self, rest: str, config: EnvContext) -> Optional[EnvContext]:
        if rest != "alpha" or "api" in config:
            return None
        return config.copy_with_overrides({**config, "api": "parallel"})


def test_simultaneous_config_asks_the_family_for_its_parallel_version(
        registry: Registry) -> None:
    registry.register_family(ParallelToyFamily())
    chosen = registry.simultaneous_config("toy/alpha", EnvContext({"k": 1}, worker_index=2))
    assert chosen == {"k": 1, "api": "parallel"} and chosen.worker_index == 2  # type: ignore[union-attr]
    # No parallel version, the caller's own api, a family without the method, a plain name.
    config = {"api": "aec"}
    assert registry.simultaneous_config("toy/beta", None) is None
    assert registry.simultaneous_config("toy/alpha", config) is config
    registry.register_family(ToyFamily("plain"))
    assert registry.simultaneous_config("plain/alpha", None) is None
    assert registry.simultaneous_config("echo", config) is config
    with pytest.raises(ConfigError, match="config must be a mapping"):
        registry.simultaneous_config("toy/alpha", ["api"])  # type: ignore[arg-type]


def test_family_unknown_rest_uses_the_familys_error(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    with pytest.raises(UnknownEnvError, match=r"'toy/gamma'.*Did you mean 'toy/alpha'"):
        registry.make("toy/gamma")


def test_mistyped_family_prefix_suggests_the_family(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    with pytest.raises(UnknownEnvError, match=r"Did you mean 'toy/alpha'"):
        registry.make("tyo/alpha")


def test_id_without_its_family_prefix_suggests_the_family_id(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    with pytest.raises(UnknownEnvError, match=r"'leduc'.*Did you mean 'toy/leduc'"):
        registry.make("leduc")


def test_cannot_register_a_name_under_a_family_prefix(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    with pytest.raises(EnvRegistrationError, match=r"ids under 'toy/' belong to the family 'toy'"):
        registry.register("toy/mine", ConfigEcho, overwrite=True)


def test_cannot_register_a_family_over_registered_ids(registry: Registry) -> None:
    registry.register("toy/mine", ConfigEcho)
    with pytest.raises(EnvRegistrationError, match=r"ids are already registered under 'toy/': \['toy/mine'\]"):
        registry.register_family(ToyFamily())


def test_family_name_taken_and_overwrite(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    with pytest.raises(EnvRegistrationError, match="family name is taken.*overwrite=True"):
        registry.register_family(ToyFamily())
    other = ToyFamily(known=["zeta"])
    registry.register_family(other, overwrite=True)
    assert registry.families == {"toy": other}
    registry.unregister_family("toy")
    assert registry.families == {}
    with pytest.raises(UnknownEnvError, match="No family of that name"):
        registry.unregister_family("toy")


def test_register_family_rejects_non_families(registry: Registry) -> None:
    with pytest.raises(EnvRegistrationError, match="does not follow the Family protocol"):
        registry.register_family(object())  # type: ignore[arg-type]
    with pytest.raises(EnvRegistrationError, match="one id segment"):
        registry.register_family(ToyFamily(name="a/b"))


def test_toy_family_follows_the_protocol() -> None:
    assert isinstance(ToyFamily(), Family)


# -- listing -------------------------------------------------------------------------


def test_glob_listing_reaches_families_only_when_the_pattern_can(registry: Registry) -> None:
    family = ToyFamily()
    registry.register_family(family)
    registry.register("tic_tac_toe", ConfigEcho)
    assert registry.registered("ti*") == ["tic_tac_toe"]
    assert family.listed == 0
    assert registry.registered("toy/*") == ["toy/alpha", "toy/beta", "toy/leduc"]
    assert registry.registered("*") == [
        "echo", "tic_tac_toe", "toy/alpha", "toy/beta", "toy/leduc",
    ]
    assert registry.registered("*", families=False) == ["echo", "tic_tac_toe"]
    assert registry.registered("*b*") == ["toy/beta"]
    assert registry.entries("toy/b*") == [("toy/beta", "the toy env beta")]


def test_a_family_with_a_missing_backend_is_skipped_and_reported(registry: Registry) -> None:
    registry.register_family(ToyFamily())
    registry.register_family(MissingBackendFamily(name="missing"))
    listing = registry.listing("*")
    assert listing.ids == ["echo", "toy/alpha", "toy/beta", "toy/leduc"]
    (problem,) = listing.problems
    assert problem.family == "missing"
    assert "pip install 'marlhub[fake]'" in str(problem)
    assert registry.listing("e*").problems == []  # the pattern does not reach it


def test_a_family_whose_ids_crash_warns_and_is_skipped(registry: Registry) -> None:
    class Crashing(ToyFamily):
        def ids(self) -> Iterable[tuple[str, str]]:
            raise RuntimeError("catalogue corrupt")

    registry.register_family(Crashing(name="crash"))
    with pytest.warns(MarlhubWarning, match=r"family 'crash': ids\(\) raised RuntimeError: catalogue corrupt"):
        listing = registry.listing("*")
    assert listing.ids == ["echo"]


def test_family_ids_outside_its_prefix_are_reported(registry: Registry) -> None:
    class Sloppy(ToyFamily):
        def ids(self) -> Iterable[tuple[str, str]]:
            return [("sloppy/ok", ""), ("elsewhere", "")]

    registry.register_family(Sloppy(name="sloppy"))
    listing = registry.listing("*")
    assert listing.ids == ["echo", "sloppy/ok"]
    assert "'elsewhere', which is not under 'sloppy/'" in str(listing.problems[0])


def test_listing_rejects_a_non_string_pattern(registry: Registry) -> None:
    with pytest.raises(TypeError, match="pattern must be a glob string"):
        registry.registered(None)  # type: ignore[arg-type]


def test_fresh_registries_are_independent(registry: Registry) -> None:
    assert Registry().registered() == []
    assert registry.registered() == ["echo"]
