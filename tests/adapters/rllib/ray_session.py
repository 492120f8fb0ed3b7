"""What the tests that train with RLlib share besides the ``ray_instance`` fixture
(``tests/conftest.py``): the policy map of a two-player game."""

from __future__ import annotations

from typing import Any


def by_player(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """A policy per seat of a two-player game: ``"first"`` for player1, else ``"second"``."""
    return "first" if agent_id == "player1" else "second"
