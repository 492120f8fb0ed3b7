"""Hub envs in TorchRL through their PettingZoo face, with both kinds of group map.

1. A turn-based env (marlhub's tic-tac-toe) goes through PettingZoo's AEC API:
   ``PettingZooWrapper(to_pettingzoo(env), use_mask=True)``; TorchRL's ``"mask"``
   entry says which agent acts in each step.
2. A simultaneous env (rock-paper-scissors) goes through the parallel API:
   ``to_pettingzoo(env, api="parallel")``.
3. For each, TorchRL's own ``check_env_specs`` runs with one group per agent
   (a tensordict and, usually, a network per agent) and with all agents in one
   group (stacked tensors, one shared network), and a random rollout prints
   each agent's return.

Run it with ``python examples/torchrl_hub_envs.py`` (needs ``pip install 'marlhub[torchrl]'``).
"""

from __future__ import annotations

import logging
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marlhub.adapters.pettingzoo import to_pettingzoo  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe  # noqa: E402

CASES = [("tic_tac_toe", TicTacToe, "aec"), ("rock_paper_scissors", RockPaperScissors, "parallel")]


def wrap(hub: Any, api: str, group_map: Any, seed: int = 0) -> Any:
    """Return ``hub`` as a TorchRL env through PettingZoo's ``api``."""
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper

    with warnings.catch_warnings():  # TorchRL names the PettingZoo version it was tested with
        warnings.filterwarnings("ignore", "PettingZoo in TorchRL is tested", UserWarning)
        return PettingZooWrapper(
            to_pettingzoo(hub, api=api), use_mask=True, group_map=group_map, seed=seed
        )


def main() -> int:
    """Check and roll out each case with each group map; return 0."""
    from torchrl.envs.utils import MarlGroupMapType, check_env_specs

    logging.getLogger("torchrl").setLevel(logging.WARNING)  # check_env_specs logs success
    for name, make, api in CASES:
        for group_map in (MarlGroupMapType.ONE_GROUP_PER_AGENT, MarlGroupMapType.ALL_IN_ONE_GROUP):
            env = wrap(make(), api, group_map)
            check_env_specs(env, seed=0)
            td = env.rollout(50, break_when_any_done=True)
            returns = []
            for group, agents in env.group_map.items():
                per_agent = td["next", group, "reward"].sum(0).reshape(-1).tolist()
                returns += [f"{agent}={r:+.1f}" for agent, r in zip(agents, per_agent, strict=True)]
            print(
                f"{name} ({api}), group_map {dict(env.group_map)}: check_env_specs passed; "
                f"{len(td)} steps, returns {', '.join(returns)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
