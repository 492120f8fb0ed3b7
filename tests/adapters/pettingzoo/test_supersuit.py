"""SuperSuit interop: wrapped PettingZoo envs convert; hub envs feed SuperSuit's vector envs."""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Callable

import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402

pytest.importorskip("supersuit")

# Names, not the module: supersuit's module __getattr__ raises ImportError for
# unknown names, which trips the doctest collector's inspection of module globals.
from supersuit import (  # noqa: E402
    agent_indicator_v0,
    black_death_v3,
    concat_vec_envs_v1,
    pad_action_space_v0,
    pad_observations_v0,
    pettingzoo_env_to_vec_env_v1,
)

from marlhub.adapters.pettingzoo import (  # noqa: E402
    HubParallelEnv,
    ParallelPettingZooEnv,
    compare_with_native,
    from_pettingzoo,
    to_pettingzoo,
)
from marlhub.conformance import check  # noqa: E402
from marlhub.envs import RockPaperScissors, TicTacToe  # noqa: E402
from tests.adapters.pettingzoo.test_custom_envs import Relay  # noqa: E402
from tests.versions import kaz_dying  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:2])


def kaz(api: str, **kwargs: Any) -> Any:
    return pettingzoo_make(api, "butterfly/knights_archers_zombies", max_cycles=40,
                           **kaz_dying(), **kwargs)


WRAPPED: dict[str, Callable[[], Any]] = {
    # Relay has heterogeneous spaces: padding makes them one.
    "pad_observations+pad_action_space": lambda: pad_action_space_v0(pad_observations_v0(Relay())),
    "agent_indicator(pad_observations)": lambda: agent_indicator_v0(pad_observations_v0(Relay())),
    "agent_indicator(kaz aec)": lambda: agent_indicator_v0(kaz("aec")),
    # black_death keeps dead agents in the parallel env with zero observations.
    "black_death(kaz parallel)": lambda: black_death_v3(kaz("parallel")),
    "black_death(pistonball parallel)": lambda: black_death_v3(
        pettingzoo_make("parallel", "butterfly/pistonball-v6", n_pistons=4, max_cycles=8)),
}


@pytest.mark.parametrize("name", list(WRAPPED))
def test_wrapped_envs_convert_and_match_native(name: str) -> None:
    make = WRAPPED[name]
    findings = compare_with_native(make, episodes=2, seed=0)
    assert findings == [], "\n".join(f.message for f in findings)
    report = check(lambda: from_pettingzoo(make()), episodes=2, seed=0, strict=True)
    assert report.ok, str(report)


def test_padded_spaces_reach_the_hub() -> None:
    env = from_pettingzoo(pad_action_space_v0(pad_observations_v0(Relay())))
    assert env.get_observation_space("coach_0").shape == (4,)
    assert env.get_action_space("coach_0").n == 3
    obs, infos = env.reset(seed=0)
    assert obs["runner_0"].shape == (4,)


def test_black_death_keeps_dead_agents_until_the_end() -> None:
    native = black_death_v3(kaz("parallel"))
    env = from_pettingzoo(native)
    obs, infos = env.reset(seed=3)
    agents = list(obs)
    rng = np.random.default_rng(0)
    while True:
        obs, rewards, terms, truncs, infos = env.step(
            {a: int(rng.integers(env.get_action_space(a).n)) for a in obs})
        if terms["__all__"] or truncs["__all__"]:
            break
        assert list(obs) == agents  # black death: everyone observes until the end


def test_hub_env_feeds_supersuit_vector_envs() -> None:
    vec = pettingzoo_env_to_vec_env_v1(to_pettingzoo(RockPaperScissors({"num_moves": 3}),
                                                        api="parallel"))
    vec = concat_vec_envs_v1(vec, 2, num_cpus=0, base_class="gymnasium")
    obs, infos = vec.reset(seed=0)
    assert obs.tolist() == [0, 0, 0, 0] and len(infos) == 4
    totals = np.zeros(4)
    for step in range(3):
        obs, rewards, terms, truncs, infos = vec.step(np.array([1, 0, 2, 2]))  # paper vs rock; tie
        totals += rewards
    assert totals.tolist() == [3.0, -3.0, 0.0, 0.0]
    assert terms.tolist() == [1, 1, 1, 1]  # the episode ended; the vector env reset itself
    assert obs.tolist() == [0, 0, 0, 0]
    if _version(version("supersuit")) >= (3, 10):  # SuperSuit 3.9 keeps no final obs
        assert "terminal_observation" in infos[0]
    vec.close()


def test_turn_based_hub_env_feeds_supersuit_vector_envs_when_padded() -> None:
    vec = pettingzoo_env_to_vec_env_v1(to_pettingzoo(TicTacToe({"max_steps": 12}), api="parallel",
                                                        turn_based="pad"))
    vec = concat_vec_envs_v1(vec, 3, num_cpus=0, base_class="gymnasium")
    obs, infos = vec.reset(seed=0)
    assert obs.shape == (6, 9)
    acting = [info["is_acting"] for info in infos]
    assert sum(acting) == 3  # one mover per game
    rng = np.random.default_rng(0)
    for _ in range(30):
        obs, rewards, terms, truncs, infos = vec.step(rng.integers(9, size=6))
        assert obs.shape == (6, 9) and rewards.shape == (6,)
    vec.close()


def test_round_trip_of_a_native_env_feeds_supersuit_vector_envs() -> None:
    hub = from_pettingzoo(pettingzoo_make("parallel", "butterfly/pistonball-v6", n_pistons=3,
                                          max_cycles=5))
    par = to_pettingzoo(hub, api="parallel")
    assert par is hub.par_env  # unwrapped: no adapter left in between
    par = HubParallelEnv(ParallelPettingZooEnv(pettingzoo_make(
        "parallel", "butterfly/pistonball-v6", n_pistons=3, max_cycles=5)))
    vec = concat_vec_envs_v1(pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0,
                                base_class="gymnasium")
    obs, infos = vec.reset(seed=0)
    assert obs.shape[0] == 6
    for _ in range(6):
        obs, rewards, terms, truncs, infos = vec.step(np.zeros((6, 1), np.float32))
    vec.close()
