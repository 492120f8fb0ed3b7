"""Write your own env and prove it keeps the contract (README: "Writing your own env").

A small complete hub env, Nim: players take 1 to 3 sticks in turn; whoever takes
the last stick loses. It shows what the contract asks of every env:

* randomness only from ``self.np_random``, seeded by ``reset(seed=...)``
  (the pile's size and who starts), so one seed gives one episode;
* the observation dict names exactly the agents that act next;
* an action mask in the observation (``"action_mask"``) when some actions are illegal;
* rewards to any live agent, acting or not (the idle winner is paid when the
  other takes the last stick), and ``"__all__"`` in both done dicts every step;
* ``agents`` kept current and emptied at the end;
* ``ResetNeededError`` before ``reset()`` and after the end, ``ActionError`` for
  bad action dicts, with nothing changed.

Run it: ``python examples/write_your_own_env.py`` checks it with the suite, as
``marlhub check examples/write_your_own_env.py:Nim`` does from the shell.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub import ALL, MultiAgentEnv
from marlhub.conformance import assert_conforms
from marlhub.episode import EPISODE_OVER, NOT_RESET, check_action_dict, require_running


class Nim(MultiAgentEnv):
    """Two players take 1, 2 or 3 sticks in turn; whoever takes the last one loses."""

    def __init__(self, config: Optional[dict] = None) -> None:
        super().__init__()
        self.possible_agents = ["first", "second"]
        self.agents = []
        # Spaces are built once: the same objects on every call.
        self.observation_spaces = {a: gym.spaces.Dict({
            "sticks": gym.spaces.Box(0, 20, (1,), np.int64),
            "action_mask": gym.spaces.MultiBinary(3),
        }) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(3, start=1) for a in self.possible_agents}
        self.sticks = 0
        self.turn = 0
        self._cannot_step: Optional[str] = NOT_RESET

    def _observe(self) -> dict[str, Any]:
        mask = np.array([take <= self.sticks for take in (1, 2, 3)], np.int8)
        return {self.possible_agents[self.turn]: {
            "sticks": np.array([self.sticks], np.int64), "action_mask": mask}}

    def reset(self, *, seed: Optional[int] = None,  # type: ignore[override]
              options: Optional[dict] = None) -> tuple[dict, dict]:
        super().reset(seed=seed)  # seeds self.np_random
        self.sticks = int(self.np_random.integers(10, 16))
        self.turn = int(self.np_random.integers(2))
        self.agents = list(self.possible_agents)
        self._cannot_step = None
        return self._observe(), {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        require_running(type(self).__name__, self._cannot_step)
        actor = self.possible_agents[self.turn]
        mask = self._observe()[actor]["action_mask"]
        actions = check_action_dict(
            type(self).__name__, action_dict, actors=[actor],
            possible_agents=self.possible_agents, space_of=self.action_spaces.__getitem__,
            mask_of=lambda agent: mask,
        )
        self.sticks -= actions[actor]
        other = self.possible_agents[1 - self.turn]
        if self.sticks == 0:  # the actor took the last stick: it loses, the idle one wins
            self.agents = []
            self._cannot_step = EPISODE_OVER
            obs = {a: {"sticks": np.zeros(1, np.int64), "action_mask": np.zeros(3, np.int8)}
                   for a in (actor, other)}
            done = {actor: True, other: True, ALL: True}
            return obs, {actor: -1.0, other: 1.0}, done, {actor: False, other: False,
                                                          ALL: False}, {}
        self.turn = 1 - self.turn
        return (self._observe(), {actor: 0.0, other: 0.0}, {ALL: False}, {ALL: False}, {})


if __name__ == "__main__":
    report = assert_conforms(Nim, episodes=50, strict=True)
    print(report.summary_line())
