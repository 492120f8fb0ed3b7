"""Gymnasium and the hub: single-agent envs as agents, hub envs as single-agent envs.

Run it: ``python examples/gymnasium_views.py``. It

1. turns CartPole into a 3-agent hub env with ``make_multi_agent`` (RLlib's
   function; each copy seeded ``seed + i``, so the copies play different
   episodes) and checks it with marlhub's conformance suite;
2. gives one player's view of tic-tac-toe as a Gymnasium env, the opponent
   played by a fixed policy, and checks it with Gymnasium's ``check_env``;
3. gives the joint view of rock-paper-scissors (``Dict`` spaces, summed reward).
"""

from __future__ import annotations

import numpy as np
from gymnasium.utils.env_checker import check_env

from marlhub.adapters.gymnasium import make_multi_agent, to_gymnasium
from marlhub.conformance import check
from marlhub.envs import RockPaperScissors, TicTacToe


def first_empty(board: np.ndarray, agent: object = None) -> int:
    """Play the first empty field (a weak but legal tic-tac-toe policy)."""
    return int(np.flatnonzero(board == 0)[0])


def main() -> dict:
    """Run the tour; return what it found, for the test that exercises this script."""
    # 1. Gymnasium -> hub: three CartPoles, one per agent.
    MultiCartPole = make_multi_agent("CartPole-v1")
    cartpoles = MultiCartPole({"num_agents": 3, "max_episode_steps": 200})
    obs, _ = cartpoles.reset(seed=0)
    print("copies start apart:", [round(float(o[0]), 4) for o in obs.values()])
    report = check(lambda: MultiCartPole({"num_agents": 3}), episodes=5, strict=True)
    print("conformance of make_multi_agent('CartPole-v1'):", "ok" if report.ok else report)

    # 2. hub -> Gymnasium: player1's view of tic-tac-toe.
    view = to_gymnasium(TicTacToe(), "player1", others=first_empty)
    check_env(view, skip_render_check=True)
    board, _ = view.reset(seed=1)
    total, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        board, reward, terminated, truncated, _ = view.step(first_empty(board))
        total += reward
    print(f"player1 against first_empty: return {total:+.0f}")

    # 3. hub -> Gymnasium: both rock-paper-scissors players at once.
    joint = to_gymnasium(RockPaperScissors(), joint=True)
    check_env(joint, skip_render_check=True)
    joint.reset(seed=0)
    _, team_reward, _, _, info = joint.step({"player1": 1, "player2": 0})
    print("joint step:", team_reward, info["individual_rewards"])
    return {"conforms": report.ok, "tic_tac_toe_return": total,
            "individual_rewards": info["individual_rewards"]}


if __name__ == "__main__":
    main()
