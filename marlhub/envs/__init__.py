"""Reference envs written directly against the hub protocol.

* :class:`RockPaperScissors`: the RLlib docs' simultaneous-move example.
* :class:`TicTacToe`: the RLlib docs' turn-based example.
* :class:`Traffic`: agents that enter, leave early, act in changing groups and
  are rewarded while not acting; the test bed for the contract's hard parts.

:data:`BUILTIN_ENVS` maps the registry names to ``(class, description)``; the
registry registers them by plain name. Each class takes one ``config``
argument (a dict or ``EnvContext``), RLlib style.

Example:
    >>> env_class, description = BUILTIN_ENVS["tic_tac_toe"]
    >>> env = env_class({"max_steps": 50})
    >>> sorted(BUILTIN_ENVS)
    ['rock_paper_scissors', 'tic_tac_toe', 'traffic']
"""

from __future__ import annotations

from marlhub.envs.rock_paper_scissors import RockPaperScissors
from marlhub.envs.tic_tac_toe import TicTacToe
from marlhub.envs.traffic import Traffic

__all__ = ["BUILTIN_ENVS", "RockPaperScissors", "TicTacToe", "Traffic"]

#: Registry name -> (env class, one-line description).
BUILTIN_ENVS: dict[str, tuple[type, str]] = {
    "rock_paper_scissors": (
        RockPaperScissors,
        "Two players, simultaneous moves, 10 rounds (the RLlib docs' example).",
    ),
    "tic_tac_toe": (
        TicTacToe,
        "Two players take turns on a 3x3 board (the RLlib docs' example).",
    ),
    "traffic": (
        Traffic,
        "Cars enter, queue at an agent-controlled light and leave; turn groups vary.",
    ),
}
