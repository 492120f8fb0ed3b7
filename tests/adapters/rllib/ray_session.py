"""What the tests that train with RLlib share besides the ``ray_instance`` fixture
(``tests/conftest.py``): the policy map of a two-player game, and what one PPO
iteration on it must show."""

from __future__ import annotations

from typing import Any


def by_player(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """A policy per seat of a two-player game: ``"first"`` for player1, else ``"second"``."""
    return "first" if agent_id == "player1" else "second"


def assert_both_policies_learned(result: dict[str, Any], min_steps: int = 128) -> None:
    """One ``algo.train()`` result: steps and episodes sampled, both players acted and their
    policies learned from it."""
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= min_steps
    assert runners["num_episodes_lifetime"] > 0
    assert set(runners["module_episode_returns_mean"]) == {"first", "second"}
    assert set(result["learners"]) >= {"first", "second"}
