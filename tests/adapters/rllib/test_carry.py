"""to_rllib shapes steps so that RLlib's episodes keep every reward (marlhub.adapters.rllib.carry).

What RLlib's own sampler makes of these steps is tested in
tests/conformance/test_rllib_sampler.py; here, the steps themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray.rllib")

import marlhub  # noqa: E402
from marlhub import ALL  # noqa: E402
from marlhub.adapters.rllib import to_rllib  # noqa: E402
from marlhub.errors import ResetNeededError  # noqa: E402
from tests.adapters.rllib.paid_envs import Blinds, SilentWinner  # noqa: E402


def test_a_winner_paid_with_its_first_observation_gets_one_step_to_carry_it() -> None:
    env = to_rllib(Blinds())
    env.reset(seed=0)
    # 'a' folds: the hub env ends the hand, 'b' wins 1.0 with its first observation.
    obs, rewards, terminateds, truncateds, _ = env.step({"a": 0})
    assert list(obs) == ["b"] and rewards == {"a": -1.0}
    assert terminateds == {ALL: False} and truncateds == {ALL: False}
    # 'b' acts once (its action is dropped); the deferred end closes both with 1.0 for 'b'.
    obs, rewards, terminateds, truncateds, _ = env.step({"b": 1})
    assert sorted(obs) == ["a", "b"] and rewards == {"b": 1.0, "a": 0.0}
    assert terminateds == {"b": True, ALL: True} and truncateds == {ALL: False}
    with pytest.raises(ResetNeededError):
        env.step({"b": 1})


def test_rewards_before_acting_come_with_the_first_transition() -> None:
    env = to_rllib(Blinds())
    env.reset(seed=0)
    # 'b' pays its blind with its first observation; 'c' is paid 2.0 and leaves unasked.
    obs, rewards, terminateds, truncateds, _ = env.step({"a": 1})
    assert sorted(obs) == ["b", "c"] and rewards == {"a": 0.0}
    assert terminateds == {ALL: False} and truncateds == {ALL: False}
    # The hub env is sent 'b''s action only; 'c' is closed with its 2.0, 'b' gets its blind.
    obs, rewards, terminateds, truncateds, _ = env.step({"b": 1, "c": 0})
    assert sorted(obs) == ["a", "b", "c"]
    assert rewards == {"a": 1.5, "b": -1.5, "c": 2.0}
    assert terminateds == {"c": True, ALL: True}


def test_a_truncation_of_all_names_no_agent_so_rllib_keeps_it_a_truncation() -> None:
    env = to_rllib(Blinds())
    env.reset(seed=0)
    env.step({"a": 1})
    *_, terminateds, truncateds, _ = env.step({"b": 0, "c": 0})
    assert truncateds == {ALL: True} and terminateds == {"c": True, ALL: False}


def test_an_agent_that_acted_and_ends_without_a_final_obs_gets_its_last_one() -> None:
    env = to_rllib(SilentWinner())
    obs, _ = env.reset(seed=0)
    last: dict[Any, Any] = {}
    for field in (0, 3, 1, 4, 2):  # the first mover wins with a row
        (mover,) = obs
        last[mover] = obs[mover]
        obs, rewards, terminateds, *_ = env.step({mover: field})
    assert terminateds[ALL] and rewards[mover] == 5.0
    np.testing.assert_array_equal(obs[mover], last[mover])


def test_without_carry_the_view_shows_the_hub_envs_steps() -> None:
    hub, view = Blinds(), to_rllib(Blinds(), carry_rewards=False)
    hub.reset(seed=0)
    view.reset(seed=0)
    for actions in ({"a": 1}, {"b": 0}):
        mine, theirs = hub.step(actions), view.step(actions)
        assert [sorted(t) for t in mine] == [sorted(t) for t in theirs]
        assert mine[1:4] == theirs[1:4]


@pytest.mark.parametrize("make", [Blinds, lambda: marlhub.make("traffic", {"max_steps": 12}),
                                  lambda: marlhub.make("tic_tac_toe")],
                         ids=["Blinds", "traffic", "tic_tac_toe"])
def test_every_agent_keeps_its_return(make: Any) -> None:
    for seed in range(6):
        hub, view = make(), to_rllib(make())
        returns: list[dict[Any, float]] = []
        for env in (hub, view):
            sums: dict[Any, float] = {}
            obs, _ = env.reset(seed=seed)
            # One generator per agent: a step to act on added by the view shifts nobody's draws.
            rngs = {a: np.random.default_rng([seed, i]) for i, a in enumerate(env.possible_agents)}
            done: set[Any] = set()
            for _ in range(200):
                actors = [a for a in obs if a not in done]
                obs, rewards, terminateds, truncateds, _ = env.step(
                    {a: int(rngs[a].integers(2)) for a in actors})
                for agent, reward in rewards.items():
                    sums[agent] = sums.get(agent, 0.0) + reward
                done |= {a for a, v in {**terminateds, **truncateds}.items() if v}
                if terminateds[ALL] or truncateds[ALL]:
                    break
            returns.append(sums)
        assert returns[0] == pytest.approx(returns[1]), seed
