"""The mpe2/ and magent2/ families: ids from the packages' modules, config, errors, lockstep."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("mpe2")
# Not kept as a global: under PettingZoo 1.24 its module __getattr__ raises ImportError for
# any unknown name, which breaks doctest collection (inspect.unwrap asks for __wrapped__).
pytest.importorskip("magent2.environments")

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from marlhub.adapters.pettingzoo.family_packages import (  # noqa: E402
    ENV_MODULE,
    MAgent2Family,
    Mpe2Family,
)
from marlhub.cli import main  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import (  # noqa: E402
    ActionError,
    ConfigError,
    MissingDependencyError,
    NotParallelizableError,
    UnknownEnvError,
)
from marlhub.registry import EnvContext, Registry  # noqa: E402

#: A small battle: 4 agents, short episodes.
SMALL_BATTLE = {"map_size": 12, "max_cycles": 20}


@pytest.fixture(scope="module")
def mpe() -> Mpe2Family:
    return Mpe2Family()


@pytest.fixture(scope="module")
def magent() -> MAgent2Family:
    return MAgent2Family()


@pytest.fixture
def registry(mpe: Mpe2Family, magent: MAgent2Family) -> Registry:
    registry = Registry(entry_point_group=None)
    registry.register_family(mpe)
    registry.register_family(magent)
    return registry


def _env_modules(package: object) -> set[str]:
    return {i.name for i in pkgutil.iter_modules(package.__path__)  # type: ignore[attr-defined]
            if ENV_MODULE.fullmatch(i.name)}


@pytest.mark.parametrize(("fixture", "package_name", "expected"), [
    ("mpe", "mpe2", {"mpe2/simple_spread-v3", "mpe2/simple_tag-v3", "mpe2/simple_adversary-v3"}),
    ("magent", "magent2.environments", {"magent2/battle-v4", "magent2/gather-v5"}),
])
def test_ids_are_the_packages_env_modules(request: pytest.FixtureRequest, fixture: str,
                                          package_name: str, expected: set[str]) -> None:
    package = importlib.import_module(package_name)
    family = request.getfixturevalue(fixture)
    ids = dict(family.ids())
    assert expected <= set(ids)
    spelled = {name.replace("_v", "-v") for name in _env_modules(package)}
    assert {i.split("/", 1)[1] for i in ids} == spelled  # one id per module, nothing tabled
    assert ids[sorted(expected)[0]].endswith("env (AEC and parallel)")


def test_marlhub_list_shows_both_families(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "m*"]) == 0
    out = capsys.readouterr().out
    assert "mpe2/simple_spread-v3" in out and "MPE2 env (AEC and parallel)" in out
    assert "magent2/battle-v4" in out and "MAgent2 env (AEC and parallel)" in out
    assert "magent2/battle-v4" in marlhub.registered("magent2/*")


def test_make_gives_the_aec_env_and_the_parallel_one_on_request(registry: Registry) -> None:
    env = registry.make("mpe2/simple_spread-v3")
    assert type(env) is PettingZooEnv and env.possible_agents == ["agent_0", "agent_1", "agent_2"]
    par = registry.make("magent2/battle-v4", {"api": "parallel", **SMALL_BATTLE})
    assert type(par) is ParallelPettingZooEnv
    assert par.possible_agents == ["red_0", "red_1", "blue_0", "blue_1"]
    assert type(marlhub.make("mpe2/simple_tag-v3", {"api": "parallel"})) is ParallelPettingZooEnv


def test_parallel_config_chooses_the_parallel_version_unless_api_is_given(
        mpe: Mpe2Family, magent: MAgent2Family) -> None:
    assert mpe.parallel_config("simple_spread-v3", {"N": 2}) == {"N": 2, "api": "parallel"}
    assert magent.parallel_config("battle", SMALL_BATTLE) == {**SMALL_BATTLE, "api": "parallel"}
    assert mpe.parallel_config("simple_spread-v3", {"api": "aec"}) is None
    assert mpe.parallel_config("simple_sprad-v3", None) is None  # making it says what is wrong


@pytest.mark.parametrize(("env_id", "config"), [
    ("mpe2/simple_spread-v3", {"max_cycles": 5}),
    ("magent2/battle-v4", SMALL_BATTLE),
])
def test_the_aec_version_of_a_parallel_env_is_refused_with_the_way_to_the_parallel_one(
        registry: Registry, env_id: str, config: dict) -> None:
    with pytest.raises(NotParallelizableError, match=rf"'{env_id}' was built as the AEC version "
                       r"of an env that exists natively in parallel: pass \{'api': 'parallel'\} "
                       r"in its config \(or drop 'api'\) to build its parallel version\."):
        registry.make(env_id, {"api": "aec", **config}, to="pettingzoo.parallel")
    assert registry.make(env_id, {"api": "aec", **config}, to="pettingzoo.parallel",
                         turn_based="pad").possible_agents


def test_config_reaches_the_constructor(registry: Registry) -> None:
    spread = registry.make("mpe2/simple_spread-v3", {"api": "parallel", "N": 5, "max_cycles": 4})
    assert len(spread.possible_agents) == 5
    # MAgent2's reward settings go through **reward_args: do nothing for a step, get step_reward.
    battle = registry.make("magent2/battle-v4", {"api": "parallel", "step_reward": -1.0,
                                                 **SMALL_BATTLE})
    obs, _ = battle.reset(seed=0)
    _, rewards, *_ = battle.step(dict.fromkeys(obs, 0))
    assert set(rewards.values()) == {-1.0}


@pytest.mark.parametrize("rest", ["simple_spread-v3", "simple_spread_v3", "simple_spread"])
def test_pettingzoos_spellings_work(mpe: Mpe2Family, rest: str) -> None:
    assert str(mpe.make(rest, EnvContext())) == "simple_spread_v3"


def test_unknown_config_keys_list_the_accepted_ones(registry: Registry) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'n'\. Accepted keys: 'N', 'api'") as info:
        registry.make("mpe2/simple_spread-v3", {"n": 4})
    assert info.value.unknown == ["n"]
    # MAgent2's reward keys are read from the module; render_mode is the parallel version's only.
    with pytest.raises(ConfigError, match=r"unknown key 'render_mode'.*'attack_penalty'"):
        registry.make("magent2/battle-v4", {"render_mode": "rgb_array", **SMALL_BATTLE})
    registry.make("magent2/battle-v4", {"api": "parallel", "render_mode": "rgb_array",
                                        **SMALL_BATTLE})
    with pytest.raises(ConfigError, match=r"'api' must be 'aec' or 'parallel', got 'gym'"):
        registry.make("mpe2/simple_spread-v3", {"api": "gym"})


def test_unknown_ids_get_suggestions(registry: Registry) -> None:
    with pytest.raises(UnknownEnvError, match=r"Did you mean 'mpe2/simple_spread-v3'"):
        registry.make("mpe2/simple_sprad-v3")
    with pytest.raises(UnknownEnvError, match=r"version v9 for 'battle' not found"):
        registry.make("magent2/battle-v9")


def test_pettingzoos_old_mpe_ids_point_at_the_new_family() -> None:
    try:
        importlib.import_module("pettingzoo.mpe")
    except ImportError:  # PettingZoo 1.26 and newer: MPE left for mpe2
        pass
    else:
        pytest.skip("this PettingZoo still ships MPE (deprecated): its ids are its own")
    with pytest.raises(UnknownEnvError, match=r"left PettingZoo for the mpe2 package.*"
                                              r"Did you mean 'mpe2/simple_spread-v3'"):
        marlhub.make("pettingzoo/mpe/simple_spread_v3")


def test_a_missing_package_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in [m for m in sys.modules if m == "magent2" or m.startswith("magent2.")]:
        monkeypatch.setitem(sys.modules, module, None)  # as if it were not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'marlhub\[magent2\]'"):
        list(MAgent2Family().ids())
    registry = Registry(entry_point_group=None)
    registry.register_family(MAgent2Family())
    listing = registry.listing("magent2/*")
    assert listing.ids == [] and "marlhub[magent2]" in str(listing.problems[0])


@pytest.mark.parametrize(("family", "rest", "config"), [
    (Mpe2Family, "simple_spread-v3", {}),
    (Mpe2Family, "simple_spread-v3", {"api": "parallel"}),
    (Mpe2Family, "simple_tag-v3", {"api": "parallel", "max_cycles": 10}),
    (MAgent2Family, "battle-v4", {"api": "parallel", **SMALL_BATTLE}),
    (MAgent2Family, "battle-v4", {"map_size": 12, "max_cycles": 3}),
])
def test_lockstep_with_the_native_env(family: type, rest: str, config: dict) -> None:
    assert family().lockstep(rest, EnvContext(config), episodes=2, seed=0, max_steps=200) == []


@pytest.mark.parametrize("env_id", ["mpe2/simple_spread-v3", "magent2/battle-v4"])
def test_check_against_native_by_id(env_id: str) -> None:
    report = check(env_id, episodes=2, max_steps=40, against_native=True)
    assert report.ok, str(report)
    assert report.lockstep_seconds is not None


def test_the_parallel_adapter_keeps_the_contract_on_a_battle() -> None:
    report = check(lambda: marlhub.make("magent2/battle-v4", {"api": "parallel", **SMALL_BATTLE}),
                   episodes=3, strict=True)
    assert report.ok, str(report)


def test_openspiel_conversion_is_refused_as_the_world_does_not_copy() -> None:
    # MAgent2 0.3.4 keeps its world in its C engine (ctypes pointers), and copy.deepcopy of
    # an env mid-episode is a new env back at its start (gymnasium's EzPickle): OpenSpiel
    # could not clone a state, so to_openspiel refuses it, as it does LunarLander's Box2D.
    report = check("magent2/battle-v4", episodes=1, max_steps=5, interop=["openspiel"])
    assert [c.status for c in report.conversions] == ["refused"]
    assert "ctypes" in report.conversions[0].reason


def test_the_whole_action_dict_is_still_checked_on_a_battle() -> None:
    """The many-agent fast path (one pass of C per check) refuses what the per-agent check does."""
    env = marlhub.make("magent2/battle-v4", {"api": "parallel", **SMALL_BATTLE})
    obs, _ = env.reset(seed=0)
    good = dict.fromkeys(obs, 1)
    bad_dicts = {
        "an action for 'red_1' outside": {**good, "red_1": 21},
        "True is not an action": {**good, "blue_0": True},
        "a float": {**good, "blue_1": 1.0},
        "missing": {a: 1 for a in list(obs)[1:]},
        "not an agent": {**good, "green_0": 1},
    }
    for what, actions in bad_dicts.items():
        with pytest.raises(ActionError):
            env.step(actions)
    # Nothing was applied: the env is where a twin that never saw them is.
    twin = marlhub.make("magent2/battle-v4", {"api": "parallel", **SMALL_BATTLE})
    twin.reset(seed=0)
    shuffled = dict(reversed(list(good.items())))  # any order of the actors is fine
    ours, theirs = env.step(shuffled), twin.step(good)
    assert ours[1] == theirs[1] and all((ours[0][a] == theirs[0][a]).all() for a in ours[0])
