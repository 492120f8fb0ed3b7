"""Hub -> hub wrappers: a hub env in, a hub env with other semantics out.

* :class:`~marlhub.wrappers.groups.GroupAgentsWrapper`: several agents acting as
  one, with ``Tuple`` spaces (RLlib's ``with_agent_groups``).

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> GroupAgentsWrapper(RockPaperScissors(), {"team": ["player1", "player2"]}).possible_agents
    ['team']
"""

from __future__ import annotations

from marlhub.wrappers.groups import GroupAgentsWrapper

__all__ = ["GroupAgentsWrapper"]
