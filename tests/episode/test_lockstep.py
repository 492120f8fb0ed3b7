"""The lockstep scaffold finds every kind of difference, under the right rule, with a reproducer."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY
from marlhub.envs import RockPaperScissors
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step


class Twin(NativeTwin):
    """A second RockPaperScissors, optionally made to disagree."""

    def __init__(self, obs_bias: int = 0, reward_scale: float = 1.0) -> None:
        self.env = RockPaperScissors()
        self.obs_bias = obs_bias
        self.reward_scale = reward_scale
        self.closed = False

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        self.sums: dict[Any, float] = {}
        lock.expect("observations", first.obs, self.env.reset(seed=seed)[0])

    def step(self, step: Step, lock: Lockstep) -> None:
        obs, rewards, *_ = self.env.step(step.actions)
        rewards = {a: r * self.reward_scale for a, r in rewards.items()}
        for agent, reward in rewards.items():
            self.sums[agent] = self.sums.get(agent, 0.0) + reward
        if len(lock.run.actions) == 5:
            obs = {a: o + self.obs_bias for a, o in obs.items()}
        lock.expect("rewards", step.rewards, rewards, fatal=False)
        lock.expect("observations", step.obs, obs)

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def close(self) -> None:
        self.closed = True


def test_agreeing_envs_give_no_finding_and_the_twin_is_closed() -> None:
    twins: list[Twin] = []
    assert compare_in_lockstep(RockPaperScissors(), lambda: twins.append(Twin()) or twins[-1],
                               episodes=3) == []
    assert twins[0].closed


def test_an_observation_difference_stops_the_episode_at_its_step() -> None:
    findings = compare_in_lockstep(RockPaperScissors(), lambda: Twin(obs_bias=1), episodes=2,
                                   seed=4)
    assert [(f.rule, f.episode, f.step) for f in findings] == [
        (EQUIV_TRAJECTORY, 0, 5), (EQUIV_TRAJECTORY, 1, 5)]
    assert "observations differ" in findings[0].message
    assert findings[0].reproducer is not None and findings[0].reproducer.seed == 4
    assert len(findings[0].reproducer.actions) == 5


def test_reward_differences_go_on_to_the_returns() -> None:
    findings = compare_in_lockstep(RockPaperScissors(), lambda: Twin(reward_scale=2.0),
                                   episodes=1, seed=0)
    rules = [f.rule for f in findings]
    assert rules[0] == EQUIV_TRAJECTORY and "rewards differ" in findings[0].message
    assert set(rules[1:]) == {EQUIV_RETURNS}


def test_an_adapted_env_that_raises_is_a_finding() -> None:
    class Raises(RockPaperScissors):
        def step(self, action_dict: Any) -> Any:
            if self.num_moves == 2:
                raise ValueError("nope")
            return super().step(action_dict)

    findings = compare_in_lockstep(Raises(), Twin, episodes=1)
    assert len(findings) == 1 and "step() raised ValueError: nope" in findings[0].message
    assert findings[0].step == 3
