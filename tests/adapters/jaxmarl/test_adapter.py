"""JaxMarlHubEnv: JaxMARL's own functions and keys, the true last observation, turns, copies."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

jaxmarl = pytest.importorskip("jaxmarl")
jax = pytest.importorskip("jax")

import marlhub  # noqa: E402
from marlhub.adapters.jaxmarl import from_jaxmarl, is_jaxmarl_env  # noqa: E402
from marlhub.adapters.jaxmarl.lockstep import compare_with_native  # noqa: E402
from marlhub.contract.compare import why_different  # noqa: E402
from marlhub.errors import ActionError  # noqa: E402


def _legal(infos: dict, agent: str, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(infos[agent]["action_mask"])))


def test_an_episode_replays_with_jaxmarl_alone_and_ends_with_its_true_last_observation() -> None:
    env = jaxmarl.make("MPE_simple_spread_v3", max_steps=3)
    hub = from_jaxmarl(env)
    assert is_jaxmarl_env(env) and not is_jaxmarl_env(hub)
    obs, _ = hub.reset(seed=7)
    key = jax.random.PRNGKey(7)  # the documented discipline, with JaxMARL alone
    key, k = jax.random.split(key)
    native_obs, state = env.reset(k)
    assert why_different(obs, jax.device_get(native_obs)) is None
    actions = {a: 1 for a in env.agents}
    while True:
        key, k = jax.random.split(key)
        before = state
        native_obs, state, rewards, dones, _ = env.step(k, state, actions)
        obs, paid, terminateds, truncateds, _ = hub.step(actions)
        assert paid == {a: float(r) for a, r in rewards.items() if a != "__all__"}
        if dones["__all__"]:
            break
        assert why_different(obs, jax.device_get(native_obs)) is None
    # JaxMARL's step hands back the next episode's first observation; the hub the true last.
    final = env.step_env(jax.random.split(k)[0], before, actions)[0]
    assert why_different(obs, jax.device_get(final)) is None
    assert why_different(obs, jax.device_get(native_obs)) is not None
    assert truncateds["__all__"] and not terminateds["__all__"]  # MPE's time limit


@pytest.mark.parametrize("name", ["MPE_simple_speaker_listener_v4", "hanabi", "SMAX"])
def test_lockstep_with_jaxmarls_own_step(name: str) -> None:
    hub = marlhub.make(f"jaxmarl/{name}")
    assert compare_with_native(hub, lambda: jaxmarl.make(name), episodes=2) == []


def test_in_hanabi_only_the_player_whose_turn_it_is_acts() -> None:
    env = marlhub.make("jaxmarl/hanabi")
    obs, infos = env.reset(seed=0)
    rng = np.random.default_rng(0)
    assert len(obs) == 1 and infos[next(iter(obs))]["action_mask"].sum() > 1
    (player,) = obs
    illegal = int(np.flatnonzero(infos[player]["action_mask"] == 0)[0])
    with pytest.raises(ActionError, match="masked out"):
        env.step({player: illegal})
    with pytest.raises(ActionError, match="actions only for the actors"):
        env.step({a: 0 for a in env.possible_agents})
    obs, *_ = env.step({player: _legal(infos, player, rng)})
    assert list(obs) != [player]  # the turn passed


def test_copies_and_pickles_play_on_as_the_original() -> None:
    env = marlhub.make("jaxmarl/coin_game")
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        env.step({a: 1 for a in obs})
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for t in range(10):
        actions = {a: t % 5 for a in env.possible_agents}
        want = env.step(actions)
        for twin in twins:
            assert why_different(twin.step(actions), want) is None
