"""Rock-paper-scissors, the simultaneous-move example env of the RLlib docs.

Two players, ``"player1"`` and ``"player2"``, both move every step. Each
observes the opponent's last move (0 after reset); the winner of a move gets
+1, the loser -1, a tie 0 each; the episode ends (``__all__`` terminated)
after ``num_moves`` moves (10, as in the docs).

Where this differs from the docs' code, the contract (:data:`marlhub.contract.rules.RULES`)
asks for it:

* ``truncateds`` is ``{"__all__": False}``, not ``{}`` (rule ``done.all_present``);
* ``agents`` becomes ``[]`` once the episode is over;
* ``step()`` before ``reset()`` or after the end raises ``ResetNeededError``;
* the whole action dict is checked before any of it is applied
  (``ActionError``, env unchanged);
* ``reset(seed=...)`` seeds ``self.np_random``; observations are plain ``int``
  and rewards ``float`` whatever integer type the actions came in.

Example:
    >>> env = RockPaperScissors()
    >>> env.reset(seed=0)
    ({'player1': 0, 'player2': 0}, {})
    >>> obs, rewards, terminateds, truncateds, infos = env.step(
    ...     {"player1": RockPaperScissors.PAPER, "player2": RockPaperScissors.ROCK})
    >>> obs, rewards, terminateds, truncateds
    ({'player1': 0, 'player2': 1}, {'player1': 1.0, 'player2': -1.0}, {'__all__': False}, {'__all__': False})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym

from marlhub.context import check_config, check_int
from marlhub.core import ALL, MultiAgentDict, MultiAgentEnv, ResetResult, StepResult
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running

__all__ = ["RockPaperScissors"]

ENV_ID = "rock_paper_scissors"
_DEFAULTS: dict[str, Any] = {"num_moves": 10}
_NAMES = ("ROCK", "PAPER", "SCISSORS")


class RockPaperScissors(MultiAgentEnv):
    """Two players play ``num_moves`` rounds of rock-paper-scissors, moving simultaneously.

    Args:
        config: a dict or ``EnvContext``; the one accepted key is ``num_moves``
            (moves per episode, default 10).

    Attributes:
        num_moves: moves played so far in this episode (the docs' counter).
        max_moves: moves per episode, from config ``num_moves``.
        last_move: ``(player1's move, player2's move)`` of the last step, or None.

    Raises:
        ConfigError: unknown config keys or a ``num_moves`` that is not an integer >= 1.
    """

    metadata = {"render_modes": ["ansi"]}

    ROCK = 0
    PAPER = 1
    SCISSORS = 2
    # Kept from the docs' class scaffold, where they are declared but never used.
    LIZARD = 3
    SPOCK = 4

    WIN_MATRIX = {
        (ROCK, ROCK): (0, 0),
        (ROCK, PAPER): (-1, 1),
        (ROCK, SCISSORS): (1, -1),
        (PAPER, ROCK): (1, -1),
        (PAPER, PAPER): (0, 0),
        (PAPER, SCISSORS): (-1, 1),
        (SCISSORS, ROCK): (-1, 1),
        (SCISSORS, PAPER): (1, -1),
        (SCISSORS, SCISSORS): (0, 0),
    }

    def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        cfg = check_config(ENV_ID, config, _DEFAULTS)
        self.max_moves = check_int(ENV_ID, cfg, "num_moves", minimum=1)
        self.possible_agents = ["player1", "player2"]
        self.agents = list(self.possible_agents)
        # The observations are always the last taken actions, hence identical spaces.
        self.observation_spaces = self.action_spaces = {
            "player1": gym.spaces.Discrete(3),
            "player2": gym.spaces.Discrete(3),
        }
        self.render_mode = "ansi"
        self.last_move: Optional[tuple[int, int]] = None
        self.num_moves = 0
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Start a new game; both players observe 0 (nobody has moved yet).

        Args:
            seed: seeds ``self.np_random`` (the game itself draws nothing).
            options: ignored.
        """
        super().reset(seed=seed)
        self.num_moves = 0
        self.last_move = None
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return {"player1": 0, "player2": 0}, {}

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Play one move of both players; each then observes the other's move.

        Raises:
            ResetNeededError: before ``reset()`` or after the last move.
            ActionError: an action missing, for an unknown agent, or outside Discrete(3).
        """
        require_running(type(self).__name__, self._cannot_step)
        actions = check_action_dict(
            type(self).__name__,
            action_dict,
            actors=self.agents,
            possible_agents=self.possible_agents,
            finished=(),  # nobody leaves before the episode ends
            space_of=self.get_action_space,
        )
        self.num_moves += 1
        move1, move2 = actions["player1"], actions["player2"]
        self.last_move = (move1, move2)
        observations: MultiAgentDict = {"player1": move2, "player2": move1}
        r1, r2 = self.WIN_MATRIX[move1, move2]
        rewards: MultiAgentDict = {"player1": float(r1), "player2": float(r2)}
        done = self.num_moves >= self.max_moves
        if done:
            self.agents = []
            self._cannot_step = EPISODE_OVER
        return observations, rewards, {ALL: done}, {ALL: False}, {}

    def render(self) -> str:
        """Return the last move as text.

        Example:
            >>> env = RockPaperScissors()
            >>> _ = env.reset(seed=0)
            >>> _ = env.step({"player1": 0, "player2": 2})
            >>> print(env.render())
            move 1/10: player1 ROCK vs player2 SCISSORS -> player1 wins
        """
        if self.last_move is None:
            return f"move 0/{self.max_moves}: nobody has moved yet"
        move1, move2 = self.last_move
        r1, _ = self.WIN_MATRIX[move1, move2]
        outcome = {1: "player1 wins", -1: "player2 wins", 0: "tie"}[r1]
        return (
            f"move {self.num_moves}/{self.max_moves}: player1 {_NAMES[move1]} "
            f"vs player2 {_NAMES[move2]} -> {outcome}"
        )
