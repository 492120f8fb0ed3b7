"""An OpenSpiel poker game, solved by OpenSpiel's CFR and evaluated through the hub.

OpenSpiel's Python CFR computes an average policy for Kuhn poker (keyed by
information state strings). The policy then plays through the hub:
``marlhub.make("openspiel/kuhn_poker", {"observation": "information_state_string"})``
gives each player its information state string as the observation, so a
tabular policy reads it directly, against a player that picks uniformly among
the legal actions of the action mask. The CFR player takes each seat in turn;
its mean return per hand is printed with the policy's exploitability.

Run::

    python examples/openspiel_poker_cfr.py [--iterations 300] [--hands 4000]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import pyspiel  # noqa: E402
from open_spiel.python.algorithms import cfr, exploitability  # noqa: E402

import marlhub  # noqa: E402


def evaluate(iterations: int = 300, hands: int = 4000, seed: int = 0) -> dict[str, float]:
    """Solve Kuhn poker with CFR, then play the average policy against random through the hub.

    Returns:
        ``{"mean_return": ..., "stderr": ..., "exploitability": ...}`` for the CFR player.
    """
    game = pyspiel.load_game("kuhn_poker")
    solver = cfr.CFRSolver(game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    policy = solver.average_policy()

    env = marlhub.make("openspiel/kuhn_poker", {"observation": "information_state_string"})
    rng = np.random.default_rng(seed)
    results = []
    for hand in range(hands):
        cfr_agent = env.possible_agents[hand % 2]
        obs, _ = env.reset(seed=seed + hand)
        total = 0.0
        while True:
            actions = {}
            for agent, ob in obs.items():
                legal = np.flatnonzero(ob["action_mask"])
                if agent == cfr_agent:
                    probs = np.asarray(policy.policy_for_key(ob["observation"]))[legal]
                    actions[agent] = int(rng.choice(legal, p=probs / probs.sum()))
                else:
                    actions[agent] = int(rng.choice(legal))
            obs, rewards, terminateds, truncateds, _ = env.step(actions)
            total += rewards[cfr_agent]
            if terminateds["__all__"] or truncateds["__all__"]:
                break
        results.append(total)
    returns = np.asarray(results)
    return {
        "mean_return": float(returns.mean()),
        "stderr": float(returns.std(ddof=1) / np.sqrt(len(returns))),
        "exploitability": float(exploitability.exploitability(game, policy)),
    }


def main(argv: Optional[list[str]] = None) -> int:
    """Solve, evaluate and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--hands", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    result = evaluate(args.iterations, args.hands, args.seed)
    print(f"Kuhn poker, CFR ({args.iterations} iterations, exploitability "
          f"{result['exploitability']:.4f}) vs random over {args.hands} hands through the hub: "
          f"{result['mean_return']:+.3f} +- {result['stderr']:.3f} per hand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
