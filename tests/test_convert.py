"""marlhub.convert and make(..., to=): every reference env through every target API and back
loses nothing: each agent, fed the same sequence of its own actions, earns the same return."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import marlhub
from marlhub import ProtocolError, convert
from marlhub.conformance import check
from marlhub.contract import rules as R
from marlhub.spaces import ActionSampler, find_action_mask

pytest.importorskip("pettingzoo")
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402

pytest.importorskip("pyspiel")

_names = itertools.count()


def record_actions(env: Any, seed: int) -> dict[Any, list[Any]]:
    """Play one seeded random legal episode; return each agent's actions in order."""
    sampler = ActionSampler(seed=seed)
    queues: dict[Any, list[Any]] = {a: [] for a in env.possible_agents}
    obs, infos = env.reset(seed=seed)
    while True:
        actions = {a: sampler.sample(a, env.get_action_space(a),
                                     find_action_mask(obs[a], infos.get(a))) for a in obs}
        for a, act in actions.items():
            queues[a].append(act)
        obs, _, term, trunc, infos = env.step(actions)
        done = {a for a in obs if term.get(a) or trunc.get(a)}
        obs = {a: o for a, o in obs.items() if a not in done}
        if term["__all__"] or trunc["__all__"]:
            return queues


def returns_when_replayed(env: Any, queues: dict[Any, list[Any]], seed: int) -> dict[Any, float]:
    """Reset with ``seed`` and feed each agent its own queued actions; return its rewards' sum."""
    left = {a: list(q) for a, q in queues.items()}
    totals = {a: 0.0 for a in env.possible_agents}
    obs, _ = env.reset(seed=seed)
    for _ in range(10_000):
        actions = {a: left[a].pop(0) for a in obs}
        obs, rewards, term, trunc, _ = env.step(actions)
        for a, r in rewards.items():
            totals[a] += float(r)
        obs = {a: o for a, o in obs.items() if not (term.get(a) or trunc.get(a))}
        if term["__all__"] or trunc["__all__"]:
            assert all(not q for q in left.values()), f"actions left over: {left}"
            return totals
    raise AssertionError("the converted env did not end")


def pettingzoo_aec(env: Any) -> Any:
    return convert(convert(env, to="pettingzoo.aec"), to="marlhub")


def pettingzoo_parallel(env: Any) -> Any:
    return convert(convert(env, to="pettingzoo.parallel"), to="marlhub")


def openspiel(env: Any) -> Any:
    return convert(convert(env, to="openspiel", short_name=f"roundtrip_{next(_names)}"),
                   to="marlhub")


# Which round trips each reference env takes: parallel needs simultaneous steps,
# OpenSpiel needs a fixed set of players (traffic's cars come and go).
ROUND_TRIPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("rock_paper_scissors", pettingzoo_aec),
    ("rock_paper_scissors", pettingzoo_parallel),
    ("rock_paper_scissors", openspiel),
    ("tic_tac_toe", pettingzoo_aec),
    ("tic_tac_toe", openspiel),
    ("traffic", pettingzoo_aec),
]


@pytest.mark.parametrize(("env_id", "round_trip"), ROUND_TRIPS,
                         ids=[f"{e}-{f.__name__}" for e, f in ROUND_TRIPS])
def test_round_trip_keeps_every_agents_return(env_id: str, round_trip: Callable[[Any], Any]) -> None:
    for seed in range(5):
        original = marlhub.make(env_id)
        queues = record_actions(original, seed)
        want = returns_when_replayed(marlhub.make(env_id), queues, seed)
        got = returns_when_replayed(round_trip(marlhub.make(env_id)), queues, seed)
        assert got == want, f"seed {seed}"


@pytest.mark.parametrize(("env_id", "round_trip"), ROUND_TRIPS,
                         ids=[f"{e}-{f.__name__}" for e, f in ROUND_TRIPS])
def test_round_trip_keeps_the_contract(env_id: str, round_trip: Callable[[Any], Any]) -> None:
    report = check(round_trip(marlhub.make(env_id)), episodes=5, strict=True)
    if round_trip.__name__ == "openspiel":
        # to_openspiel's game is sampled-stochastic (the env draws), and OpenSpiel pickles
        # such a state with the game's RNG state, which a Python game cannot give: its
        # states clone (deep-copy), they do not pickle.
        [finding] = report.by_rule().pop(R.ENV_COPYABLE)
        assert "pickle" in finding.message and "GetRNGState" in finding.message
        assert report.rules_broken() == [R.ENV_COPYABLE], str(report)
        return
    assert report.ok, str(report)


@pytest.mark.parametrize("env_id", ["rock_paper_scissors", "tic_tac_toe", "traffic"])
def test_one_agents_gymnasium_view_earns_what_the_hub_pays_it(env_id: str) -> None:
    env = marlhub.make(env_id)
    agent = env.possible_agents[0] if env_id != "traffic" else "light"
    queues = record_actions(env, 3)
    want = returns_when_replayed(marlhub.make(env_id), queues, 3)[agent]
    others = {a: (lambda q: (lambda obs, agent_id: q.pop(0)))(list(queues[a]))
              for a in env.possible_agents if a != agent}
    view = convert(marlhub.make(env_id), to="gymnasium", agent_id=agent, others=others)
    view.reset(seed=3)
    total, done = 0.0, False
    for action in queues[agent]:
        assert not done
        _, reward, terminated, truncated, _ = view.step(action)
        total += reward
        done = terminated or truncated
    assert done and total == pytest.approx(want)


def test_converting_back_to_the_source_api_unwraps() -> None:

    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    assert convert(native, to="pettingzoo.aec") is native
    hub = marlhub.make("rock_paper_scissors")
    assert convert(convert(hub, to="pettingzoo.parallel"), to="marlhub") is hub
    assert convert(hub, to="marlhub") is hub


@pytest.mark.filterwarnings("ignore:Observation space for each agent probably:UserWarning")
@pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")  # api_test's notes on spaces
@pytest.mark.filterwarnings("ignore:Observation is not a NumPy array:UserWarning")  # dict obs
def test_make_with_to_hands_out_the_requested_api() -> None:
    from pettingzoo.test import api_test

    aec = marlhub.make("openspiel/leduc_poker", to="pettingzoo.aec")
    api_test(aec, num_cycles=50)
    game = marlhub.make("rock_paper_scissors", to="openspiel", short_name="rps_via_make")
    assert game.num_players() == 2
    assert type(marlhub.make("rock_paper_scissors", to="gymnasium", joint=True)).__name__


def test_unknown_sources_and_targets_are_refused_clearly() -> None:
    with pytest.raises(ProtocolError, match="PettingZoo AEC or parallel"):
        convert(object(), to="pettingzoo.aec")
    with pytest.raises(ValueError, match="supported targets are 'marlhub', 'pettingzoo.aec'"):
        convert(marlhub.make("traffic"), to="dm_env")
    with pytest.raises(TypeError, match="takes no options"):
        convert(marlhub.make("traffic"), to="marlhub", agent_id="light")


def test_observations_survive_the_aec_round_trip_of_a_turn_based_env() -> None:
    direct, back = marlhub.make("tic_tac_toe"), pettingzoo_aec(marlhub.make("tic_tac_toe"))
    a, _ = direct.reset(seed=4)
    b, _ = back.reset(seed=4)
    assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) for k in a)
