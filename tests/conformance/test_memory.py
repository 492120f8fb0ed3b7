"""Memory kept episode over episode: found where an env hoards, silent where it does not."""

from __future__ import annotations

import tracemalloc

import pytest

import marlhub
from marlhub.conformance.memory import memory_growth
from tests.conformance import rule_breakers as B


@pytest.mark.parametrize("env_id", ["rock_paper_scissors", "tic_tac_toe", "traffic"])
def test_the_reference_envs_keep_nothing(env_id: str) -> None:
    assert memory_growth(marlhub.make(env_id), 0, max_steps=1000, reset_kwargs={}) is None


def test_an_env_that_hoards_frames_is_found_with_the_line_that_allocates() -> None:
    growth = memory_growth(B.HoardsFrames(), 0, max_steps=1000, reset_kwargs={})
    assert growth is not None
    assert growth.per_episode > 6 * 64 * 64 * 3 * 0.9
    assert growth.where.startswith("rule_breakers.py:") and "self.frames.append" in growth.where


def test_a_tracemalloc_session_of_the_caller_is_left_running() -> None:
    tracemalloc.start()
    try:
        assert memory_growth(B.HoardsFrames(), 0, max_steps=1000, reset_kwargs={}) is not None
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()
    assert memory_growth(B.Duel(), 0, max_steps=1000, reset_kwargs={}) is None
    assert not tracemalloc.is_tracing()
