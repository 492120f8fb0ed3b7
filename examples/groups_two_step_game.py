"""Agent groups for QMIX-style training: RLlib's two-step game, grouped, with marlhub.

Run it: ``python examples/groups_two_step_game.py``. The two agents of the
game act as one group agent with ``Tuple`` spaces; the group's reward is the
sum of theirs, which stay in ``infos[group]["individual_rewards"]``. The
script checks the grouped env with the conformance suite and plays every
joint plan of the game to find the best one (both agents pick 1, then 1: 8).
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub import ALL, MultiAgentEnv
from marlhub.conformance import check


class TwoStepGame(MultiAgentEnv):
    """Agent 0 picks a branch; in branch 2 both agents coordinate for 8 (else 7 or less)."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.agents = self.possible_agents = [0, 1]
        self.observation_spaces = {a: gym.spaces.Discrete(6) for a in self.agents}
        self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
        self.state = 0

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        super().reset(seed=seed)
        self.state = 0
        self.agents = list(self.possible_agents)
        return self._obs(), {}

    def step(self, action_dict: dict) -> Any:
        if self.state == 0:
            self.state = 1 if action_dict[0] == 0 else 2
            reward, over = 0.0, False
        elif self.state == 1:
            reward, over = 7.0, True
        else:
            together = int(action_dict[0]) + int(action_dict[1])
            reward, over = {0: 0.0, 1: 1.0, 2: 8.0}[together], True
        if over:
            self.agents = []
        return self._obs(), {0: reward / 2, 1: reward / 2}, {ALL: over}, {ALL: False}, {}

    def _obs(self) -> dict:
        return {0: self.state, 1: self.state + 3}


def make_grouped(config: Optional[dict] = None) -> MultiAgentEnv:
    """The grouped env, as an RLlib ``register_env`` creator would build it."""
    return TwoStepGame(config).with_agent_groups({"group_1": [0, 1]})


def main() -> dict:
    """Check the grouped env and find its best joint plan; return what was found."""
    report = check(make_grouped, episodes=5, strict=True)
    print("conformance of the grouped two-step game:", "ok" if report.ok else report)
    env = make_grouped()
    print("agents:", env.possible_agents, "action space:", env.get_action_space("group_1"))
    returns, individual = {}, {}
    for first, second in itertools.product(itertools.product([0, 1], repeat=2), repeat=2):
        env.reset(seed=0)
        env.step({"group_1": first})
        _, rewards, _, _, infos = env.step({"group_1": second})
        returns[(first, second)] = rewards["group_1"]
        individual[(first, second)] = infos["group_1"]["individual_rewards"]
    best = max(returns, key=returns.__getitem__)
    print(f"best plan {best} earns {returns[best]} (individual rewards {individual[best]})")
    return {"conforms": report.ok, "best": best, "best_return": returns[best],
            "returns": np.array(list(returns.values()))}


if __name__ == "__main__":
    main()
