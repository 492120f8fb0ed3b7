"""Entry point discovery with real distributions written into a directory put on sys.path."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from marlhub.errors import EntryPointError, MarlhubWarning, UnknownEnvError
from marlhub.registry import Registry, create_default_registry
from marlhub.registry.entry_points import discover

GROUP = "marlhub.test_envs"

PLUGIN_SOURCE = '''
import gymnasium as gym
from marlhub import MultiAgentEnv

VALUE = 42


class PluginEnv(MultiAgentEnv):
    """An env shipped by a plugin package."""

    def __init__(self, config=None):
        super().__init__()
        self.config = config
        self.agents = self.possible_agents = ["p"]
        self.observation_spaces = {"p": gym.spaces.Discrete(2)}
        self.action_spaces = {"p": gym.spaces.Discrete(2)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"p": 0}, {}

    def step(self, action_dict):
        return {"p": 0}, {"p": 1.0}, {"p": True, "__all__": True}, {"__all__": False}, {}


def make_env(config):
    """Builds PluginEnv through a function."""
    return PluginEnv(config)
'''


def write_distribution(root: Path, dist: str, entry_points: str, group: str = GROUP) -> None:
    """Write ``dist``-1.0.dist-info with METADATA and entry_points.txt under ``root``."""
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + textwrap.dedent(entry_points))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A plugin module and its distribution on sys.path; returns the module name."""
    module = f"marlhub_plugin_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(PLUGIN_SOURCE)
    write_distribution(
        tmp_path,
        "marlhub-test-plugin",
        f"""\
        plugin_env = {module}:PluginEnv
        plugin/func-v0 = {module}:make_env
        broken_import = {module}_missing:PluginEnv
        broken_attr = {module}:Nope
        not_callable = {module}:VALUE
        shadowed = {module}:PluginEnv
        bad:name = {module}:PluginEnv
        """,
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield module
    sys.modules.pop(module, None)


def fresh(**kwargs: object) -> Registry:
    with pytest.warns(MarlhubWarning, match=r"entry point bad:name = .* not a valid env id: it contains ':'"):
        registry = Registry(entry_point_group=GROUP, **kwargs)  # type: ignore[arg-type]
        registry.problems  # discovery happens here, once
    return registry


def test_discovery_reads_names_without_importing(plugin: str) -> None:
    registry = fresh()
    assert registry.registered() == [
        "broken_attr", "broken_import", "not_callable", "plugin/func-v0", "plugin_env", "shadowed",
    ]
    assert plugin not in sys.modules


def test_make_loads_the_entry_point_and_passes_the_config(plugin: str) -> None:
    registry = fresh()
    env = registry.make("plugin_env", {"k": 1})
    assert type(env).__name__ == "PluginEnv" and env.config == {"k": 1}
    assert plugin in sys.modules
    spec = registry.spec("plugin/func-v0")
    assert spec.description == "Builds PluginEnv through a function."
    assert spec.source == f"entry point plugin/func-v0 = {plugin}:make_env (marlhub-test-plugin)"
    assert type(registry.make("plugin/func-v0")).__name__ == "PluginEnv"


def test_explicit_registration_wins_over_an_entry_point(plugin: str) -> None:
    registry = fresh()

    def mine(config: object) -> object:
        """Mine."""
        return registry.make("plugin_env")

    registry.register("shadowed", mine)
    assert registry.spec("shadowed").creator is mine
    assert registry.entries("shadowed") == [("shadowed", "Mine.")]


@pytest.mark.parametrize(
    ("env_id", "match"),
    [
        ("broken_import", r"broken_import = .*_missing:PluginEnv .*cannot be loaded: ModuleNotFoundError"),
        ("broken_attr", r"broken_attr = .*:Nope .*cannot be loaded: AttributeError"),
        ("not_callable", r"not_callable = .*cannot be loaded: it loads int 42, which is not callable"),
    ],
)
def test_broken_entry_point_raises_when_made(plugin: str, env_id: str, match: str) -> None:
    registry = fresh()
    for _ in range(2):  # the failure is cached and raised again, not retried silently
        with pytest.raises(EntryPointError, match=match) as info:
            registry.make(env_id)
        assert info.value.distribution == "marlhub-test-plugin"
        assert isinstance(info.value, ImportError)
    assert "marlhub.register_env" in str(info.value)


def test_broken_entry_points_do_not_break_listing(plugin: str) -> None:
    registry = fresh()
    listing = registry.listing("*")
    assert dict(listing.entries)["plugin_env"] == "An env shipped by a plugin package."
    assert dict(listing.entries)["broken_import"] == "(broken entry point, see below)"
    broken = sorted(p.source.split(" = ")[0] for p in listing.problems if p.error is not None)
    assert broken == ["entry point broken_attr", "entry point broken_import", "entry point not_callable"]
    assert any("bad:name" in str(p) for p in listing.problems)


def test_an_entry_point_under_a_family_prefix_belongs_to_the_family(plugin: str) -> None:
    registry = fresh()

    class PluginFamily:
        name = "plugin"
        description = "a family that owns plugin/"

        def ids(self) -> list[tuple[str, str]]:
            return []

        def make(self, rest: str, config: object) -> object:
            raise UnknownEnvError(f"plugin/{rest}")

    registry.register_family(PluginFamily())
    assert "plugin/func-v0" not in registry.registered()
    with pytest.raises(UnknownEnvError):
        registry.make("plugin/func-v0")
    assert any("the family 'plugin' owns its prefix" in str(p) for p in registry.listing().problems)


def test_first_distribution_on_sys_path_wins(
    plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    write_distribution(other, "marlhub-other-plugin", f"plugin_env = {plugin}:make_env\n")
    monkeypatch.syspath_prepend(str(other))
    envs, problems = discover(GROUP)
    assert envs["plugin_env"].distribution == "marlhub-other-plugin"
    assert any(
        "marlhub-test-plugin" in p.source and "already declares the id 'plugin_env'" in p.message
        for p in problems
    )


def test_refresh_discovers_again(plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = fresh()
    late = tmp_path / "late"
    write_distribution(late, "marlhub-late-plugin", f"late_env = {plugin}:PluginEnv\n")
    monkeypatch.syspath_prepend(str(late))
    assert "late_env" not in registry.registered()  # discovered once per registry
    registry.refresh_entry_points()
    with pytest.warns(MarlhubWarning):  # bad:name is reported again
        assert "late_env" in registry.registered()


def test_registries_without_a_group_discover_nothing(plugin: str) -> None:
    assert Registry().registered() == []


def test_default_registry_reads_the_marlhub_envs_group(
    plugin: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "default_group"
    write_distribution(root, "marlhub-grid", f"grid_soccer = {plugin}:PluginEnv\n", group="marlhub.envs")
    monkeypatch.syspath_prepend(str(root))
    registry = create_default_registry()
    assert "grid_soccer" in registry.registered("g*")
    assert type(registry.make("grid_soccer")).__name__ == "PluginEnv"
