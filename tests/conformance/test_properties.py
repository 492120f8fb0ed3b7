"""Property-based tests: random well-formed turn patterns never produce an error finding,
and the same patterns with one rule broken always report that rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import gymnasium as gym
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marlhub import MultiAgentEnv, ResetNeededError
from marlhub.conformance import check
from marlhub.conformance import rules as R

POOL = ["a0", "a1", "a2", "a3"]


@dataclass
class Plan:
    """What happens in one step of a scripted episode."""

    enter: list[str]
    die: list[str]
    rewarded: list[str]
    next_actors: list[str]
    ending: Optional[str] = None  # "terminated" or "truncated" on the last step


@dataclass
class Script:
    start_live: list[str]
    first_actors: list[str]
    plans: list[Plan] = field(default_factory=list)


def _subset(draw: Any, items: list[str], *, min_size: int = 0) -> list[str]:
    chosen = draw(st.sets(st.sampled_from(items), min_size=min_size)) if items else set()
    return [a for a in items if a in chosen]


@st.composite
def scripts(draw: Any) -> Script:
    """Simultaneous, turn-based and mixed patterns; agents entering, dying, rewarded while idle."""
    pool = POOL[: draw(st.integers(1, len(POOL)))]
    live = _subset(draw, pool, min_size=1)
    waiting = [a for a in pool if a not in live]
    script = Script(list(live), _subset(draw, live, min_size=1))
    length = draw(st.integers(1, 10))
    for k in range(length):
        enter = _subset(draw, waiting)
        waiting = [a for a in waiting if a not in enter]
        live = live + enter
        die = _subset(draw, live)
        remaining = [a for a in live if a not in die]
        rewarded = _subset(draw, live)
        if k == length - 1 or not remaining:
            ending = draw(st.sampled_from(["terminated", "truncated"])) if remaining else "terminated"
            script.plans.append(Plan(enter, die, rewarded, [], ending))
            break
        script.plans.append(Plan(enter, die, rewarded, _subset(draw, remaining, min_size=1)))
        live = remaining
    return script


class ScriptedEnv(MultiAgentEnv):
    """Plays a :class:`Script` whatever the actions; keeps the contract unless told to break it."""

    def __init__(self, script: Script, breakage: Optional[str] = None) -> None:
        super().__init__()
        self.script = script
        self.breakage = breakage
        self.possible_agents = list(POOL)
        self.observation_spaces = {a: gym.spaces.Discrete(100) for a in POOL}
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in POOL}
        self.k = -1

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.k = 0
        self.live = list(self.script.start_live)
        self.agents = list(self.live)
        self.actors = list(self.script.first_actors)
        return {a: 0 for a in self.actors}, {a: {} for a in self.actors}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.k < 0 or self.k >= len(self.script.plans):
            raise ResetNeededError("ScriptedEnv")
        if sorted(action_dict) != sorted(self.actors):
            raise ValueError(f"expected actions for {self.actors}, got {sorted(action_dict)}")
        plan = self.script.plans[self.k]
        self.k += 1
        self.live = self.live + plan.enter
        remaining = [a for a in self.live if a not in plan.die]
        rewards = {a: 0.0 for a in action_dict}
        rewards.update({a: 0.5 for a in plan.rewarded})
        obs = {a: self.k for a in plan.die}
        terminateds: dict[Any, bool] = {a: True for a in plan.die}
        truncateds: dict[Any, bool] = {}
        if plan.ending:
            obs.update({a: self.k for a in remaining})  # last obs for everyone still there
            terminateds["__all__"] = plan.ending == "terminated"
            truncateds["__all__"] = plan.ending == "truncated"
            self.agents, self.actors = [], []
            self.k = len(self.script.plans)
        else:
            obs.update({a: self.k for a in plan.next_actors})
            terminateds["__all__"] = truncateds["__all__"] = False
            self.live = remaining
            self.agents, self.actors = list(remaining), list(plan.next_actors)
        if self.breakage == "drop_reward_of_actor":
            for a in action_dict:
                if a in obs:
                    rewards.pop(a, None)
        if self.breakage == "forget_all":
            terminateds.pop("__all__")
        return obs, rewards, terminateds, truncateds, {a: {} for a in obs}


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(scripts())
def test_well_formed_turn_patterns_give_no_error(script: Script) -> None:
    report = check(lambda: ScriptedEnv(script), episodes=2, strict=True)
    assert report.ok, str(report)
    assert report.findings == []


@SETTINGS
@given(scripts())
def test_missing_reward_of_an_acting_agent_is_always_reported(script: Script) -> None:
    # Only meaningful when some agent acts and then gets an observation in the same step.
    env = ScriptedEnv(script)
    obs, _ = env.reset(seed=0)
    acted_and_observed = False
    for _ in script.plans:
        actors = list(env.actors)
        obs, *_ = env.step({a: 0 for a in actors})
        acted_and_observed |= any(a in obs for a in actors)
    report = check(lambda: ScriptedEnv(script, "drop_reward_of_actor"), episodes=1)
    assert (R.REWARD_PRESENT in report.rules_broken()) == acted_and_observed, str(report)


@SETTINGS
@given(scripts())
def test_missing_all_key_is_always_reported(script: Script) -> None:
    report = check(lambda: ScriptedEnv(script, "forget_all"), episodes=1)
    assert R.DONE_ALL_PRESENT in report.rules_broken(), str(report)
    assert not report.ok
