"""A PettingZoo classic game to the hub and back, checked at every stop.

1. ``marlhub.make("pettingzoo/classic/connect_four-v3")`` builds PettingZoo's
   Connect Four (through PettingZoo's registry where it has one) and hands it over as a hub
   (RLlib-style ``MultiAgentEnv``) env.
2. A seeded random game is played through the hub API; each player's sum of
   hub rewards is its PettingZoo return.
3. ``compare_with_native`` replays seeded games on the adapted env and on a
   second native instance, step by step: no difference.
4. The conformance suite checks the adapted env against the contract.
5. Back to PettingZoo: ``to_pettingzoo`` hands back the very same native env,
   and a hub-born game (marlhub's tic-tac-toe) becomes a PettingZoo AEC env
   that passes PettingZoo's own ``api_test`` and ``seed_test``.

Run it with ``python examples/pettingzoo_roundtrip.py``; it exits with 0 when
every check passes.
"""

from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

import numpy as np
from pettingzoo.classic import connect_four_v3

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import compare_with_native, to_pettingzoo  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.envs import TicTacToe  # noqa: E402

ENV_ID = "pettingzoo/classic/connect_four-v3"


def play(env: marlhub.MultiAgentEnv, seed: int) -> dict[str, float]:
    """Play one game with random legal moves; return each player's sum of rewards."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    while True:
        (player,) = obs  # one player to move at a time
        legal = np.flatnonzero(obs[player]["action_mask"])
        obs, rewards, terminateds, truncateds, infos = env.step({player: int(rng.choice(legal))})
        for agent, reward in rewards.items():
            returns[agent] += reward
        if terminateds["__all__"] or truncateds["__all__"]:
            return returns
        obs = {a: o for a, o in obs.items() if not (terminateds[a] or truncateds[a])}


def main() -> int:
    ok = True
    env = marlhub.make(ENV_ID)
    returns = play(env, seed=7)
    print(f"1-2. {ENV_ID} as {type(env).__name__}: one game, returns {returns}")
    ok &= sorted(returns.values()) in ([-1.0, 1.0], [0.0, 0.0])

    findings = compare_with_native(connect_four_v3.env,
                                   episodes=5, seed=0)
    print(f"3. lockstep with a native instance, 5 games: {len(findings)} differences")
    ok &= not findings

    report = check(ENV_ID, episodes=5, seed=0, strict=True)
    print(f"4. conformance: {'PASS' if report.ok else 'FAIL'} ({report.steps} steps)")
    ok &= report.ok

    native = to_pettingzoo(env)
    print(f"5. to_pettingzoo(env) is the native env: {native is env.env}")
    ok &= native is env.env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PettingZoo's tests warn about naming style
        from pettingzoo.test import api_test, seed_test

        with contextlib.redirect_stdout(io.StringIO()):
            api_test(to_pettingzoo(TicTacToe()), num_cycles=200)
            seed_test(lambda: to_pettingzoo(TicTacToe()), num_cycles=200)
    print("   marlhub's TicTacToe as a PettingZoo AEC env passes api_test and seed_test")
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
