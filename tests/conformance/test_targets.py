"""Targets with a config: ids, classes and factories get it; what cannot take one says so."""

from __future__ import annotations

from typing import Any

import pytest

from marlhub.conformance import check
from marlhub.conformance.targets import resolve_target
from marlhub.envs import Traffic
from marlhub.errors import ConfigError, TargetError

MODULE = __name__


def make_traffic(config: Any) -> Traffic:
    """A factory that takes the config (as an EnvContext)."""
    return Traffic(config)


def make_default_traffic() -> Traffic:
    """A factory that takes no config."""
    return Traffic()


@pytest.mark.parametrize("target", ["traffic", Traffic, make_traffic, f"{MODULE}:make_traffic"])
def test_ids_classes_and_factories_are_built_with_the_config(target: Any) -> None:
    env = resolve_target(target, config={"num_cars": 5}).build()
    assert env.possible_agents == ["car_0", "car_1", "car_2", "car_3", "car_4", "light"]


def test_a_check_with_a_config_passes_and_plays_the_configured_env() -> None:
    report = check("traffic", config={"num_cars": 5, "road_length": 4}, episodes=3)
    assert report.ok and report.findings == [], str(report)
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        check("traffic", config={"nope": 1}, episodes=1)


def test_what_cannot_take_a_config_is_refused_with_a_fix() -> None:
    with pytest.raises(TargetError, match="takes no argument to receive it"):
        resolve_target(make_default_traffic, config={"num_cars": 5})
    with pytest.raises(TargetError, match="env instance, which is built already"):
        resolve_target(Traffic(), config={"num_cars": 5})
    assert resolve_target(make_default_traffic).build().possible_agents[-1] == "light"


def test_the_native_twin_gets_the_config_too() -> None:
    pytest.importorskip("magent2")
    config = {"map_size": 16, "max_cycles": 20}  # 12 agents instead of 162
    report = check("magent2/battle-v4", config=config, against_native=True, episodes=1)
    assert report.ok and report.findings == [], str(report)
