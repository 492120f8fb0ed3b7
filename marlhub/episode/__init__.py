"""Episode mechanics, written once: the action-dict validator, where an episode stands, and
the one seeded random-legal episode that check, run, probes and lockstep comparisons play.

* :mod:`~marlhub.episode.actions`: :func:`check_action_dict` and its parts.
* :mod:`~marlhub.episode.prechecked`: :func:`actions_prechecked`, where
  actions checked once are not checked again.
* :mod:`~marlhub.episode.status`: why ``step`` is refused, "over", "actors".
* :mod:`~marlhub.episode.play`: :class:`RandomEpisode`.
* :mod:`~marlhub.episode.lockstep`: the scaffold that steps an adapter and its
  native twin together.

Example:
    >>> from marlhub.envs import TicTacToe
    >>> steps = list(RandomEpisode(TicTacToe(), seed=1))
    >>> steps[-1].over
    True
"""

from __future__ import annotations

from marlhub.episode.actions import (
    ActionChecker,
    check_action,
    check_action_dict,
    check_keys,
)
from marlhub.episode.play import RandomEpisode, Step, episode_seed, random_actions
from marlhub.episode.prechecked import actions_are_prechecked, actions_prechecked
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_RESET,
    actors_of,
    done_agents,
    episode_over,
    require_running,
)

__all__ = [
    "EPISODE_OVER",
    "NOT_RESET",
    "ActionChecker",
    "RandomEpisode",
    "Step",
    "actions_are_prechecked",
    "actions_prechecked",
    "actors_of",
    "check_action",
    "check_action_dict",
    "check_keys",
    "done_agents",
    "episode_over",
    "episode_seed",
    "random_actions",
    "require_running",
]
