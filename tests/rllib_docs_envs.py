"""The RLlib docs' example envs as printed there (without the Ray import), for tests.

The classes are built on a base class of the caller's choice: marlhub's
``MultiAgentEnv``, RLlib's, or a plain ``object`` (RLlib-style duck typing).
The tic-tac-toe start player comes from numpy's global RNG as in the docs,
unless ``seeded_start=True`` draws it from a generator seeded in ``reset``.
Both keep the docs' quirks: ``truncateds`` without ``__all__``, agents never
emptied, and tic-tac-toe's ``board[::3]`` (a column) where the main diagonal
was meant.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv


def rock_paper_scissors_class(base: type = MultiAgentEnv) -> type:
    """Return the docs' RockPaperScissors on ``base``."""

    class RockPaperScissors(base):  # type: ignore[misc, valid-type]
        ROCK, PAPER, SCISSORS = 0, 1, 2
        WIN_MATRIX = {
            (ROCK, ROCK): (0, 0), (ROCK, PAPER): (-1, 1), (ROCK, SCISSORS): (1, -1),
            (PAPER, ROCK): (1, -1), (PAPER, PAPER): (0, 0), (PAPER, SCISSORS): (-1, 1),
            (SCISSORS, ROCK): (-1, 1), (SCISSORS, PAPER): (1, -1), (SCISSORS, SCISSORS): (0, 0),
        }

        def __init__(self, config: Optional[dict] = None) -> None:
            super().__init__()
            self.agents = self.possible_agents = ["player1", "player2"]
            self.observation_spaces = self.action_spaces = {
                "player1": gym.spaces.Discrete(3), "player2": gym.spaces.Discrete(3),
            }
            self.num_moves = 0

        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
            self.num_moves = 0
            return {"player1": 0, "player2": 0}, {}

        def step(self, action_dict: dict) -> Any:
            self.num_moves += 1
            move1, move2 = action_dict["player1"], action_dict["player2"]
            observations = {"player1": move2, "player2": move1}
            r1, r2 = self.WIN_MATRIX[move1, move2]
            rewards = {"player1": r1, "player2": r2}
            terminateds = {"__all__": self.num_moves >= 10}
            return observations, rewards, terminateds, {}, {}

    return RockPaperScissors


def tic_tac_toe_class(base: type = MultiAgentEnv, *, seeded_start: bool = False) -> type:
    """Return the docs' TicTacToe on ``base``; ``seeded_start`` makes its start player reproducible."""

    class TicTacToe(base):  # type: ignore[misc, valid-type]
        def __init__(self, config: Optional[dict] = None) -> None:
            super().__init__()
            self.agents = self.possible_agents = ["player1", "player2"]
            self.observation_spaces = {
                a: gym.spaces.Box(-1.0, 1.0, (9,), np.float32) for a in self.possible_agents
            }
            self.action_spaces = {a: gym.spaces.Discrete(9) for a in self.possible_agents}
            self.board: list[int] = []
            self.current_player = ""

        def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
            self.board = [0] * 9
            if seeded_start and (seed is not None or not hasattr(self, "rng")):
                self.rng = np.random.default_rng(seed)  # without a seed, it goes on
            rng = self.rng if seeded_start else np.random
            self.current_player = str(rng.choice(["player1", "player2"]))
            return {self.current_player: np.array(self.board, np.float32)}, {}

        def step(self, action_dict: dict) -> Any:
            action = action_dict[self.current_player]
            rewards = {self.current_player: 0.0}
            terminateds = {"__all__": False}
            opponent = "player1" if self.current_player == "player2" else "player2"
            if self.board[action] != 0:
                rewards[self.current_player] -= 5.0
            else:
                self.board[action] = 1 if self.current_player == "player1" else -1
                win_val = [1, 1, 1] if self.current_player == "player1" else [-1, -1, -1]
                b = self.board
                if (b[:3] == win_val or b[3:6] == win_val or b[6:] == win_val
                        or b[0:7:3] == win_val or b[1:8:3] == win_val or b[2:9:3] == win_val
                        or b[::3] == win_val or b[2:7:2] == win_val):
                    rewards[self.current_player] += 5.0
                    rewards[opponent] = -5.0
                    terminateds["__all__"] = True
                elif 0 not in self.board:
                    terminateds["__all__"] = True
            self.current_player = opponent
            return ({self.current_player: np.array(self.board, np.float32)}, rewards,
                    terminateds, {}, {})

    return TicTacToe


DocsRockPaperScissors = rock_paper_scissors_class()
DocsTicTacToe = tic_tac_toe_class()
