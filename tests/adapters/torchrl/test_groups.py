"""Group maps: TorchRL's premade ones, dicts, and the default rule."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("torchrl")

from torchrl.envs.utils import MarlGroupMapType  # noqa: E402

from marlhub.adapters.torchrl.groups import (  # noqa: E402
    default_group_map,
    one_group_per_agent,
    resolve_group_map,
)
from marlhub.errors import AgentIdError, ConfigError  # noqa: E402

AGENTS = ["car_0", "car_1", "light"]


def _same(a: Any, b: Any) -> bool:
    return str(a)[:3] == str(b)[:3]


@pytest.mark.parametrize(("agents", "same", "expected"), [
    (AGENTS, _same, {"car": ["car_0", "car_1"], "light": ["light"]}),
    (["piston_0", "piston_1"], _same, {"agents": ["piston_0", "piston_1"]}),
    ([0, 1], lambda a, b: a == b, {"0": [0], "1": [1]}),
    # car_1 differs from car_0: no "car" group; each gets its own.
    (["car_0", "car_1", "x"], lambda a, b: a == b, {"car_0": ["car_0"], "car_1": ["car_1"],
                                                    "x": ["x"]}),
    # "car" (an agent) and "car_0"/"car_1" would both be the group "car": one group each.
    (["car_0", "car_1", "car"], lambda a, b: len(a) == len(b),
     {"car_0": ["car_0"], "car_1": ["car_1"], "car": ["car"]}),
])
def test_default_group_map(agents: list[Any], same: Any, expected: dict[str, Any]) -> None:
    assert default_group_map(agents, same) == expected


def test_premade_group_maps() -> None:
    assert resolve_group_map(MarlGroupMapType.ALL_IN_ONE_GROUP, AGENTS, _same) == {
        "agents": AGENTS}
    assert resolve_group_map(MarlGroupMapType.ONE_GROUP_PER_AGENT, [0, 1], _same) == {
        "0": [0], "1": [1]}
    with pytest.raises(ConfigError, match="would both be the group '0'"):
        one_group_per_agent([0, "0"])


@pytest.mark.parametrize(("group_map", "error", "match"), [
    ({"cars": ["car_0"], "light": ["light"]}, AgentIdError, "'car_1' is in no group"),
    ({"a": ["car_0", "car_1"], "b": ["car_1", "light"]}, AgentIdError,
     "'car_1' is in groups 'a' and 'b'"),
    ({"a": AGENTS + ["car_9"]}, AgentIdError, "names 'car_9'.*Did you mean 'car_0'"),
    ({"done": AGENTS}, ConfigError, "'done' is taken by the root"),
    ({"_x": AGENTS}, ConfigError, "'_x' cannot name a group"),
    ({"a": AGENTS, "b": []}, ConfigError, "group 'b' is empty"),
    ({"a": "car_0"}, ConfigError, "not a list of agent ids"),
])
def test_bad_group_maps_are_refused(group_map: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        resolve_group_map(group_map, AGENTS, _same)
