"""IllegalActionWrapper: raise, terminate with a penalty, or substitute, for masks in obs or infos."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub import ALL, COMMON, ActionError, ConfigError, ResetNeededError
from marlhub.conformance import check
from marlhub.contract.compare import why_different
from marlhub.spaces import find_action_mask
from marlhub.wrappers import IllegalActionWrapper
from tests.versions import gymnasium_id

pytest.importorskip("pyspiel")


def _ttt(**options: Any) -> Any:
    return marlhub.make("openspiel/tic_tac_toe", options)


def _illegal(env: Any, obs: Any, infos: Any, agent: Any) -> int:
    mask = find_action_mask(obs[agent], infos.get(agent))
    return int(np.flatnonzero(mask == 0)[0])


def _play_to_a_taken_square(env: Any) -> tuple[Any, Any, Any]:
    obs, infos = env.reset(seed=0)
    obs, _, _, _, infos = env.step({"player_0": 4})
    return obs, infos, "player_1"


@pytest.mark.parametrize("action_mask", ["obs", "info"])
def test_terminate_ends_the_episode_with_the_penalty(action_mask: str) -> None:
    env = IllegalActionWrapper(_ttt(action_mask=action_mask), "terminate")
    obs, infos, agent = _play_to_a_taken_square(env)
    obs, rewards, terminateds, truncateds, infos = env.step({agent: 4})
    assert rewards == {"player_1": -1.0, "player_0": 0.0}
    assert terminateds == {"player_1": True, "player_0": True, ALL: True}
    assert truncateds[ALL] is False and set(obs) == {"player_0", "player_1"}
    assert infos[agent]["illegal_action"] == 4 and infos[COMMON]["illegal_actions"] == {agent: 4}
    assert env.illegal_actions == 1 and env.agents == []
    with pytest.raises(ResetNeededError):
        env.step({agent: 0})
    env.reset(seed=1)
    assert env.illegal_actions == 0


def test_substitute_plays_a_legal_action_reproducibly() -> None:
    def play(seed: int) -> list[Any]:
        env = IllegalActionWrapper(_ttt(), "substitute")
        obs, infos = env.reset(seed=seed)
        trace = []
        while True:
            (agent,) = obs
            bad = _illegal(env, obs, infos, agent) if len(env.env.state.history()) else 0
            obs, rewards, terminateds, truncateds, infos = env.step({agent: bad})
            trace.append((env.env.state.history()[-1], rewards, infos.get(agent)))
            if terminateds[ALL] or truncateds[ALL]:
                return trace

    first = play(3)
    assert why_different(first, play(3)) is None
    substituted = [info for _, _, info in first if info and "illegal_action" in info]
    assert substituted and all(i["substituted_action"] != i["illegal_action"] for i in substituted)


def test_raise_is_the_hubs_answer_and_changes_nothing() -> None:
    env = IllegalActionWrapper(_ttt(), "raise")
    _play_to_a_taken_square(env)
    with pytest.raises(ActionError, match="masked out"):
        env.step({"player_1": 4})
    assert env.env.state.history() == [4]


@pytest.mark.parametrize("policy", ["terminate", "substitute"])
@pytest.mark.parametrize("bad", [{"player_1": 9}, {"player_1": True}, {"player_0": 1}, {}],
                         ids=["outside", "bool", "not_actor", "missing"])
def test_malformed_dicts_still_raise_under_every_policy(policy: str, bad: Any) -> None:
    env = IllegalActionWrapper(_ttt(), policy)
    _play_to_a_taken_square(env)
    with pytest.raises(ActionError):
        env.step(bad)
    assert env.env.state.history() == [4] and env.illegal_actions == 0


def test_advisory_masks_are_left_alone() -> None:
    taxi = marlhub.make("gymnasium/" + gymnasium_id("Taxi"))
    env = IllegalActionWrapper(taxi, "terminate")
    obs, infos = env.reset(seed=0)
    bad = _illegal(env, obs, infos, 0)
    _, rewards, terminateds, _, _ = env.step({0: bad})  # Taxi accepts it: a no-op move
    assert rewards == {0: -1.0} and not terminateds[ALL] and env.illegal_actions == 0


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="policy='ignore' is not a known policy"):
        IllegalActionWrapper(_ttt(), "ignore")
    with pytest.raises(ConfigError, match="penalty='x' is not a number"):
        IllegalActionWrapper(_ttt(), "terminate", penalty="x")  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["terminate", "substitute"])
@pytest.mark.parametrize("env_id", ["openspiel/tic_tac_toe", "openspiel/leduc_poker",
                                    "tic_tac_toe", "traffic", "rock_paper_scissors"])
def test_wrapped_envs_keep_the_contract(policy: str, env_id: str) -> None:
    report = check(lambda: IllegalActionWrapper(marlhub.make(env_id), policy), episodes=5,
                   strict=True)
    assert report.ok, str(report)
