"""Hub -> hub wrappers: a hub env in, a hub env with other semantics out.

* :class:`~marlhub.wrappers.groups.GroupAgentsWrapper`: several agents acting as
  one, with ``Tuple`` spaces (RLlib's ``with_agent_groups``).
* :class:`~marlhub.wrappers.illegal.IllegalActionWrapper`: masked-out actions
  raise, end the episode with a penalty, or are replaced by legal ones.
* :class:`~marlhub.wrappers.scalarize.ScalarizeRewards`: vector rewards (multi-objective
  envs) made one number per agent by explicit weights.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> GroupAgentsWrapper(RockPaperScissors(), {"team": ["player1", "player2"]}).possible_agents
    ['team']
"""

from __future__ import annotations

from marlhub.wrappers.groups import GroupAgentsWrapper
from marlhub.wrappers.illegal import ILLEGAL_ACTION_POLICIES, IllegalActionWrapper
from marlhub.wrappers.scalarize import ScalarizeRewards

__all__ = ["ILLEGAL_ACTION_POLICIES", "GroupAgentsWrapper", "IllegalActionWrapper",
           "ScalarizeRewards"]
