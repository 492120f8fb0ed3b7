"""Id parsing, name validation and which globs reach a family."""

from __future__ import annotations

import pytest

from marlhub.errors import EnvRegistrationError
from marlhub.registry.ids import (
    literal_prefix,
    pattern_reaches,
    split_id,
    validate_family_name,
    validate_name,
)


@pytest.mark.parametrize(
    ("env_id", "expected"),
    [
        ("traffic", (None, "traffic")),
        ("openspiel/kuhn_poker(players=3)", ("openspiel", "kuhn_poker(players=3)")),
        ("pettingzoo/classic/tictactoe-v3", ("pettingzoo", "classic/tictactoe-v3")),
    ],
)
def test_split_id(env_id: str, expected: tuple) -> None:
    assert split_id(env_id) == expected


@pytest.mark.parametrize("name", ["traffic", "my-env.v2", "mypkg/grid-v0", "a/b/c", "Env_1"])
def test_valid_names_pass(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("", "the name is empty"),
        ("my env", "whitespace"),
        ("tab\tenv", "whitespace"),
        ("grid*", r"contains '\*'"),
        ("pkg:Env", "contains ':'"),
        ("a[1]", r"contains '\[', '\]'"),
        ("a//b", "empty segment"),
        ("/a", "empty segment"),
        ("a/", "empty segment"),
        (3, "ids are strings, got int 3"),
        (None, "ids are strings, got NoneType"),
    ],
)
def test_bad_names_raise_with_the_reason(name: object, match: str) -> None:
    with pytest.raises(EnvRegistrationError, match=match) as info:
        validate_name(name)
    assert "Cannot register" in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name", ["open/spiel", "", "a b"])
def test_bad_family_names_raise(name: str) -> None:
    with pytest.raises(EnvRegistrationError, match="Cannot register"):
        validate_family_name(name)


@pytest.mark.parametrize(
    ("pattern", "prefix"),
    [("*", ""), ("openspiel/*", "openspiel/"), ("tic?", "tic"), ("a[bc]", "a"), ("exact", "exact")],
)
def test_literal_prefix(pattern: str, prefix: str) -> None:
    assert literal_prefix(pattern) == prefix


@pytest.mark.parametrize(
    ("pattern", "reaches"),
    [
        ("*", True),
        ("*poker", True),
        ("o*", True),
        ("openspiel/*", True),
        ("openspiel/k*", True),
        ("openspiel/kuhn_poker", True),
        ("openspiel", False),
        ("openspielx/*", False),
        ("tic*", False),
        ("traffic", False),
        ("p*/classic", False),
    ],
)
def test_pattern_reaches(pattern: str, reaches: bool) -> None:
    assert pattern_reaches(pattern, "openspiel") is reaches
