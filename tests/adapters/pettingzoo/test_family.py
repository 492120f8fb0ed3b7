"""The pettingzoo/ family: ids from PettingZoo's registry, config, lockstep, the registry."""

from __future__ import annotations

import importlib.util

import pytest

pettingzoo = pytest.importorskip("pettingzoo")
import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from marlhub.adapters.pettingzoo.catalogue import registries  # noqa: E402
from marlhub.adapters.pettingzoo.family import PettingZooFamily  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ConfigError,
    MissingDependencyError,
    NotParallelizableError,
    UnknownEnvError,
)
from marlhub.registry import EnvContext, Registry  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")


@pytest.fixture(scope="module")
def family() -> PettingZooFamily:
    return PettingZooFamily()


@pytest.fixture
def registry(family: PettingZooFamily) -> Registry:
    registry = Registry(entry_point_group=None)
    registry.register_family(family)
    return registry


def test_ids_are_pettingzoos_registry_ids_of_importable_envs(family: PettingZooFamily) -> None:
    ids = dict(family.ids())
    assert "pettingzoo/classic/tictactoe-v3" in ids
    assert ids["pettingzoo/butterfly/pistonball-v6"] == (
        "PettingZoo butterfly env (AEC and parallel)")
    assert ids["pettingzoo/classic/connect_four-v3"] == "PettingZoo classic env (AEC)"
    expected = {f"pettingzoo/{i}" for i in registries()[0]}
    assert set(ids) <= expected
    if importlib.util.find_spec("multi_agent_ale_py") is None:
        assert not [i for i in ids if i.startswith("pettingzoo/atari/")]


def test_registered_lists_the_family(registry: Registry) -> None:
    listed = registry.registered("pettingzoo/classic/*")
    assert "pettingzoo/classic/tictactoe-v3" in listed and "pettingzoo/classic/rps-v2" in listed
    assert "pettingzoo/butterfly/pistonball-v6" not in listed
    assert "pettingzoo/classic/chess-v6" in marlhub.registered("pettingzoo/*")


def test_make_returns_hub_envs_through_the_registry(registry: Registry) -> None:
    env = registry.make("pettingzoo/classic/tictactoe-v3")
    assert type(env) is PettingZooEnv
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["player_1"]
    par = registry.make("pettingzoo/butterfly/pistonball-v6",
                        {"api": "parallel", "n_pistons": 4, "max_cycles": 5})
    assert type(par) is ParallelPettingZooEnv
    assert par.possible_agents == [f"piston_{i}" for i in range(4)]
    assert type(marlhub.make("pettingzoo/classic/rps-v2", {"num_actions": 5})) is PettingZooEnv


def test_config_keys_reach_the_constructor(family: PettingZooFamily) -> None:
    native = family.make("classic/go-v5", EnvContext({"board_size": 5, "komi": 3.5}))
    assert native.unwrapped._N == 5 and native.unwrapped._komi == 3.5
    assert family.make("classic/rps-v2", EnvContext({"max_cycles": 3})).unwrapped.max_cycles == 3


@pytest.mark.parametrize("rest", ["classic/tictactoe-v3", "classic/tictactoe_v3",
                                  "classic/tictactoe"])
def test_pettingzoos_spellings_work(family: PettingZooFamily, rest: str) -> None:
    assert str(family.make(rest, EnvContext())) == "tictactoe_v3"


def test_unknown_config_keys_list_the_accepted_ones(registry: Registry) -> None:
    accepted = r"Accepted keys: 'api', 'render_mode', 'screen_height'"
    with pytest.raises(ConfigError, match=rf"unknown key 'board'. {accepted}") as info:
        registry.make("pettingzoo/classic/tictactoe-v3", {"board": 4})
    assert info.value.unknown == ["board"]


def test_keys_hidden_behind_kwargs_are_reported_when_the_constructor_refuses_them(
    family: PettingZooFamily,
) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'bogus'.*cannot list the accepted keys"):
        family.make("sisl/pursuit", EnvContext({"bogus": 1}))


def test_api_values(family: PettingZooFamily) -> None:
    with pytest.raises(ConfigError, match=r"'api' must be 'aec' or 'parallel', got 'gym'"):
        family.make("classic/rps-v2", EnvContext({"api": "gym"}))
    with pytest.raises(ConfigError, match="classic/tictactoe-v3 has no parallel version"):
        family.make("classic/tictactoe-v3", EnvContext({"api": "parallel"}))


def test_unknown_ids_get_suggestions(registry: Registry) -> None:
    with pytest.raises(UnknownEnvError, match=r"Did you mean 'pettingzoo/classic/tictactoe-v3'"):
        registry.make("pettingzoo/classic/tictacto-v3")
    with pytest.raises(UnknownEnvError, match=r"version v9 for 'classic/tictactoe' not found"):
        registry.make("pettingzoo/classic/tictactoe-v9")


def test_parallel_config_builds_the_native_parallel_version(family: PettingZooFamily) -> None:
    ctx = family.parallel_config("butterfly/pistonball", EnvContext({"n_pistons": 4},
                                                                    worker_index=3))
    assert isinstance(ctx, EnvContext) and ctx.worker_index == 3
    assert dict(ctx) == {"n_pistons": 4, "api": "parallel"}
    assert family.parallel_config("sisl/pursuit", None) == {"api": "parallel"}
    # No parallel version, the caller's own choice of api, or no such id: none.
    assert family.parallel_config("classic/tictactoe-v3", None) is None
    assert family.parallel_config("butterfly/pistonball-v6", {"api": "aec"}) is None
    assert family.parallel_config("butterfly/nope-v1", None) is None


def test_the_aec_version_of_a_parallel_env_is_refused_with_the_way_to_the_parallel_one(
        registry: Registry) -> None:
    with pytest.raises(NotParallelizableError, match=r"'pettingzoo/butterfly/pistonball-v6' was "
                       r"built as the AEC version of an env that exists natively in parallel: "
                       r"pass \{'api': 'parallel'\} in its config \(or drop 'api'\)"):
        registry.make("pettingzoo/butterfly/pistonball-v6", {"api": "aec", "max_cycles": 5},
                      to="pettingzoo.parallel")
    with pytest.raises(NotParallelizableError, match=r"The env is turn-based: use "
                       r"to='pettingzoo.aec', or turn_based='pad'"):
        registry.make("pettingzoo/classic/tictactoe-v3", to="pettingzoo.parallel")


@pytest.mark.skipif(importlib.util.find_spec("multi_agent_ale_py") is not None,
                    reason="the atari dependencies are installed")
def test_missing_env_dependencies_name_the_pettingzoo_extra(family: PettingZooFamily) -> None:
    with pytest.raises(MissingDependencyError, match=r"pip install 'pettingzoo\[atari\]'"):
        family.make("atari/pong-v3", EnvContext())


@pytest.mark.parametrize(("rest", "config"), [
    ("classic/connect_four-v3", {}),
    ("classic/leduc_holdem-v4", {}),
    ("classic/rps-v2", {"api": "parallel", "max_cycles": 4}),
    ("butterfly/cooperative_pong", {"max_cycles": 20}),
])
def test_lockstep(family: PettingZooFamily, rest: str, config: dict) -> None:
    assert family.lockstep(rest, EnvContext(config), episodes=2, seed=0, max_steps=200) == []


def test_lockstep_refuses_bad_config_before_playing(family: PettingZooFamily) -> None:
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        family.lockstep("classic/rps-v2", EnvContext({"nope": 1}), episodes=1, seed=0, max_steps=5)


def test_check_against_native_by_id() -> None:
    report = check("pettingzoo/classic/tictactoe-v3", episodes=3, against_native=True)
    assert report.ok, str(report)
