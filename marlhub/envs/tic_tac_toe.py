"""Tic-tac-toe, the turn-based example env of the RLlib docs.

Two players, ``"player1"`` and ``"player2"``, take turns on a 3x3 board
(fields 0..8, row by row). The player to move is the only one in the
observation dict. Observations are the raw board, ``Box(-1, 1, (9,), float32)``:
0 is empty, 1 a piece of player1, -1 a piece of player2 (the same for both
players, as in the docs' code). Actions are ``Discrete(9)``.

Rewards follow the docs' **code**, whose docstring says +1/-1 but which pays
+5/-5: a win gives the mover +5 and the opponent -5 and ends the episode;
a full board ends it with 0; placing on an occupied field leaves the board
unchanged, costs the mover -5 and still passes the turn. The rewards dict
always holds the mover's entry.

Where this differs from the docs' code:

* the start player is drawn from the env's seeded ``self.np_random`` (the docs
  use the global ``np.random``, so seeds did not reproduce episodes);
* the docs' diagonal test ``board[::3]`` looks at fields 0, 3, 6 (a column
  already checked); this env checks the real diagonal 0, 4, 8;
* ``truncateds`` holds ``__all__``; ``agents`` becomes ``[]`` at the end;
  ``ResetNeededError`` before reset or after the end; the whole action dict is
  checked first (``ActionError``, env unchanged);
* optional config ``max_steps`` (default None: no limit, as in the docs) ends
  the episode with ``__all__`` truncated;
* when the episode ends (a win, a full board or ``max_steps``) both players get
  their final observation, the mover too (rules ``done.final_obs`` and
  ``done.truncation_has_obs``): without it RLlib's sampler loses the winner's
  last move and its +5 when a sample ends inside the episode;
* a global state for centralised critics: ``state()`` is the board and whose
  turn it is (1 player1, -1 player2, 0 before reset), in ``state_space``,
  ``Box(-1, 1, (10,), float32)``.

Example:
    >>> env = TicTacToe()
    >>> obs, infos = env.reset(seed=3)
    >>> first = next(iter(obs))
    >>> obs[first]
    array([0., 0., 0., 0., 0., 0., 0., 0., 0.], dtype=float32)
    >>> obs, rewards, terminateds, truncateds, infos = env.step({first: 4})
    >>> rewards[first], terminateds
    (0.0, {'__all__': False})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional, cast

import gymnasium as gym
import numpy as np

from marlhub.context import check_config, check_int
from marlhub.core import ALL, MultiAgentDict, MultiAgentEnv, ResetResult, StepResult
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running

__all__ = ["TicTacToe"]

ENV_ID = "tic_tac_toe"
_DEFAULTS: dict[str, Any] = {"max_steps": None}
# Rows, columns and both diagonals.
_LINES = (
    (0, 1, 2), (3, 4, 5), (6, 7, 8),
    (0, 3, 6), (1, 4, 7), (2, 5, 8),
    (0, 4, 8), (2, 4, 6),
)


class TicTacToe(MultiAgentEnv):
    """Two players take turns placing pieces on a 3x3 board; three in a line wins.

    Args:
        config: a dict or ``EnvContext``; the one accepted key is ``max_steps``
            (None, the default, or an integer >= 1: truncate after that many steps).

    Raises:
        ConfigError: unknown config keys or a bad ``max_steps``.
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
        super().__init__()
        cfg = check_config(ENV_ID, config, _DEFAULTS)
        self.max_steps = check_int(ENV_ID, cfg, "max_steps", minimum=1, allow_none=True)
        self.possible_agents = ["player1", "player2"]
        self.agents = list(self.possible_agents)
        # 0 empty, 1 a piece of player1, -1 a piece of player2.
        self.observation_spaces = {
            "player1": gym.spaces.Box(-1.0, 1.0, (9,), np.float32),
            "player2": gym.spaces.Box(-1.0, 1.0, (9,), np.float32),
        }
        # One action per field.
        self.action_spaces = {
            "player1": gym.spaces.Discrete(9),
            "player2": gym.spaces.Discrete(9),
        }
        self.state_space = gym.spaces.Box(-1.0, 1.0, (10,), np.float32)
        self.render_mode = "ansi"
        self.board: Optional[list[int]] = None
        self.current_player: Optional[str] = None
        self.num_steps = 0
        self._cannot_step: Optional[str] = NOT_RESET

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Empty the board, draw the start player from ``self.np_random``; return its obs.

        Args:
            seed: seeds ``self.np_random``, hence the start player.
            options: ignored.
        """
        super().reset(seed=seed)
        self.board = [0] * 9
        self.current_player = cast(str, self.possible_agents[int(self.np_random.integers(2))])
        self.num_steps = 0
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return {self.current_player: self._obs()}, {}

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Place the current player's piece; the opponent moves next.

        Raises:
            ResetNeededError: before ``reset()`` or after the game ended.
            ActionError: no action for the player to move, an action for the other
                player or an unknown agent, or an action outside Discrete(9).
        """
        require_running(type(self).__name__, self._cannot_step)
        mover = cast(str, self.current_player)
        actions = check_action_dict(
            type(self).__name__,
            action_dict,
            actors=[mover],
            possible_agents=self.possible_agents,
            finished=(),  # nobody leaves before the episode ends
            space_of=self.get_action_space,
        )
        action = actions[mover]
        board = cast("list[int]", self.board)  # set by reset(), which require_running checked
        self.num_steps += 1
        rewards: MultiAgentDict = {mover: 0.0}
        terminated = False
        opponent = "player1" if mover == "player2" else "player2"

        if board[action] != 0:
            # The docs' aberration: an occupied field costs -5 and the turn still passes.
            rewards[mover] -= 5.0
        else:
            piece = 1 if mover == "player1" else -1
            board[action] = piece
            if any(all(board[i] == piece for i in line) for line in _LINES):
                rewards[mover] += 5.0
                rewards[opponent] = -5.0
                terminated = True
            elif 0 not in board:
                terminated = True

        self.current_player = opponent
        truncated = (
            not terminated and self.max_steps is not None and self.num_steps >= self.max_steps
        )
        observations: MultiAgentDict = {opponent: self._obs()}
        if terminated or truncated:
            observations[mover] = self._obs()
        if terminated or truncated:
            self.agents = []
            self._cannot_step = EPISODE_OVER
        return observations, rewards, {ALL: terminated}, {ALL: truncated}, {}

    def _obs(self) -> np.ndarray:
        return np.array(self.board, np.float32)

    def state(self) -> np.ndarray:
        """Return the global state: the board, then who moves next (1 player1, -1 player2).

        Example:
            >>> env = TicTacToe()
            >>> _ = env.reset(seed=3)
            >>> env.state().shape, env.state_space.contains(env.state())
            ((10,), True)
        """
        mover = {"player1": 1.0, "player2": -1.0}.get(str(self.current_player), 0.0)
        return np.array([*(self.board or [0] * 9), mover], np.float32)

    def render(self) -> str:
        """Return the board as three lines of text (X = player1, O = player2).

        Example:
            >>> env = TicTacToe()
            >>> obs, _ = env.reset(seed=0)
            >>> _ = env.step({next(iter(obs)): 0})
            >>> print(env.render())
            O . .
            . . .
            . . .
            player1 to move
        """
        if self.board is None:
            return "no game yet: call reset()"
        marks = {0: ".", 1: "X", -1: "O"}
        rows = [" ".join(marks[v] for v in self.board[r : r + 3]) for r in (0, 3, 6)]
        status = "game over" if self._cannot_step else f"{self.current_player} to move"
        return "\n".join(rows + [status])
