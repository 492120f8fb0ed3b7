"""OpenSpiel's Python MCTS plays the hub's tic-tac-toe reference env, through to_openspiel.

The env is the RLlib docs' ``TicTacToe`` (``marlhub.envs``): a hub env, not an
OpenSpiel game. ``to_openspiel`` registers it as a pyspiel Python game, so
``open_spiel.python.algorithms.mcts.MCTSBot`` searches it (cloning states
deep-copies the env) and plays against a uniformly random player. In that env
an occupied field is a legal move that costs -5 and passes the turn, and a
win pays +5.

pyspiel's C++ ``pyspiel.MCTSBot`` crashes on Python games; the Python one is used.

Run::

    python examples/openspiel_mcts_tic_tac_toe.py [--games 20] [--simulations 100]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyspiel  # noqa: E402
from open_spiel.python.algorithms import mcts  # noqa: E402
from open_spiel.python.bots import uniform_random  # noqa: E402

from marlhub.adapters.openspiel import to_openspiel  # noqa: E402
from marlhub.envs import TicTacToe  # noqa: E402


def play(games: int = 20, simulations: int = 100, seed: int = 0) -> dict[str, int]:
    """Play ``games`` games of MCTS against random, MCTS taking each side in turn.

    Returns:
        ``{"wins": ..., "draws": ..., "losses": ...}`` from MCTS's side: it wins a
        game when its return is higher than the random player's.
    """
    # MCTS needs terminal rewards; the env's returns still count every reward.
    to_openspiel(TicTacToe, short_name="marlhub_tic_tac_toe", reward_model="terminal",
                 utility_range=(-np.inf, 5.0), seed=seed)
    game = pyspiel.load_game("marlhub_tic_tac_toe")  # now an OpenSpiel game like any other
    rng = np.random.RandomState(seed)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rng)
    tally = {"wins": 0, "draws": 0, "losses": 0}
    for index in range(games):
        mcts_player = index % 2
        bots = {
            mcts_player: mcts.MCTSBot(game, uct_c=2.0, max_simulations=simulations,
                                      evaluator=evaluator, random_state=rng, solve=True),
            1 - mcts_player: uniform_random.UniformRandomBot(1 - mcts_player, rng),
        }
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(bots[state.current_player()].step(state))
        returns = state.returns()
        mine, theirs = returns[mcts_player], returns[1 - mcts_player]
        tally["wins" if mine > theirs else "losses" if mine < theirs else "draws"] += 1
    return tally


def main(argv: Optional[list[str]] = None) -> int:
    """Play and print the tally."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--simulations", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    tally = play(args.games, args.simulations, args.seed)
    print(f"MCTS ({args.simulations} simulations) vs random on the hub's TicTacToe, "
          f"{args.games} games: {tally['wins']} wins, {tally['draws']} draws, "
          f"{tally['losses']} losses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
