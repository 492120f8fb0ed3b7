"""A small in-test checker of the contract (DESIGN.md section 2) for the reference envs.

It plays seeded random legal actions and asserts the section-2 rules directly
at every step. It stands in until marlhub/conformance lands; it is not that
suite, only enough to make these tests able to fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from marlhub.core import ALL, COMMON
from marlhub.errors import ResetNeededError
from marlhub.spaces import ActionSampler, find_action_mask, why_not_in_space


@dataclass
class Episode:
    """What one checked episode did, for assertions and for comparing two runs."""

    trajectory: list[tuple[Any, ...]] = field(default_factory=list)
    actor_counts: list[int] = field(default_factory=list)
    returns: dict[Any, float] = field(default_factory=dict)
    ended_by: str = ""


def _freeze(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, value.tobytes())
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    return (type(value).__name__, value)


def check_episode(env: Any, seed: int, max_steps: int = 1000) -> Episode:
    """Play one seeded episode with random legal actions; assert the contract at every step."""
    possible = list(env.possible_agents)
    obs_spaces = {a: env.get_observation_space(a) for a in possible}
    for a in possible:  # space.defined: the same object on every call
        assert env.get_observation_space(a) is obs_spaces[a]
        assert env.get_action_space(a) is env.get_action_space(a)
    sampler = ActionSampler(seed)
    episode = Episode()

    result = env.reset(seed=seed, options=None)
    assert isinstance(result, tuple) and len(result) == 2
    obs, infos = result
    assert isinstance(obs, dict) and isinstance(infos, dict)
    done: set[Any] = set()
    hanging: set[Any] = set()  # acted and not observed since
    episode.trajectory.append(("reset", _freeze(obs), tuple(env.agents)))

    def check_obs_and_agents(
        obs: dict, infos: dict, terminateds: dict, truncateds: dict, over: bool
    ) -> list:
        for a, o in obs.items():
            assert a in possible, f"ids.known: {a!r}"
            assert a not in done, f"done.final: obs for done agent {a!r}"
            why = why_not_in_space(obs_spaces[a], o)
            assert why is None, f"obs.in_space for {a!r}: {why}"
        for a, info in infos.items():
            assert a in obs or a == COMMON, f"info.keys: {a!r} has an info but no obs"
            assert isinstance(info, dict)
        actors = [] if over else [a for a in obs if not (terminateds.get(a) or truncateds.get(a))]
        agents = list(env.agents)
        assert set(agents) <= set(possible), "ids.agents_consistent: agents not in possible_agents"
        assert set(actors) <= set(agents), f"ids.agents_consistent: actors {actors} not in {agents}"
        return actors

    actors = check_obs_and_agents(obs, infos, {}, {}, False)
    assert actors, "turn.actors_exist after reset"
    for step in range(max_steps):
        actions = {
            a: sampler.sample(a, env.get_action_space(a), find_action_mask(obs[a], infos.get(a)))
            for a in actors
        }
        obs, rewards, terminateds, truncateds, infos = env.step(actions)
        episode.trajectory.append(
            (_freeze(obs), _freeze(rewards), _freeze(terminateds), _freeze(truncateds), tuple(env.agents))
        )
        for flags in (terminateds, truncateds):
            assert ALL in flags, "done.all_present"
            for a, flag in flags.items():
                assert a == ALL or a in possible, f"ids.known: {a!r}"
                assert isinstance(flag, (bool, np.bool_)), f"done.flags_bool: {a!r}={flag!r}"
                assert a == ALL or a not in done, f"done.final: done flag for done agent {a!r}"
        for a, r in rewards.items():
            assert a in possible, f"ids.known: reward for {a!r}"
            assert a not in done, f"done.final: reward for done agent {a!r}"
            assert not isinstance(r, (bool, np.bool_)) and isinstance(r, (int, float, np.number))
            assert math.isfinite(r), "reward.scalar"
            episode.returns[a] = episode.returns.get(a, 0.0) + float(r)
        over = bool(terminateds[ALL] or truncateds[ALL])
        hanging |= set(actions)
        for a in hanging:
            if truncateds.get(a) or truncateds[ALL]:
                assert a in obs, f"done.truncation_has_obs: {a!r} acted, is truncated, has no obs"
        for a in actions:
            if a in obs:
                assert a in rewards, f"reward.present: {a!r} acted and got an obs but no reward"
        actors = check_obs_and_agents(obs, infos, terminateds, truncateds, over)
        hanging -= set(obs)
        done |= {a for a in possible if terminateds.get(a) or truncateds.get(a)}
        assert not (set(env.agents) & done), "ids.agents_consistent: a done agent in agents"
        if over:
            assert env.agents == [], "agents must be [] once the episode is over"
            episode.ended_by = "terminated" if terminateds[ALL] else "truncated"
            with pytest.raises(ResetNeededError, match="episode is over"):
                env.step(actions)
            return episode
        if set(done) >= set(possible):
            raise AssertionError("done.all_consistent: every agent done but __all__ is False")
        assert actors, "turn.actors_exist: no actor while the episode is not over"
        episode.actor_counts.append(len(actors))
    raise AssertionError(f"episode.ends: no __all__ within {max_steps} steps")


@pytest.fixture
def contract() -> Callable[[Any, int], Episode]:
    """The in-test contract checker: ``contract(env, seed) -> Episode``."""
    return check_episode
