"""Clones of to_openspiel's states: snapshot copies game state kept in pygame's sprites, groups
and rects (Knights-Archers-Zombies), shares only what an env draws with, and an env whose state
lives outside Python (a Box2D world) is refused with UncopyableEnvError."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")
pygame = pytest.importorskip("pygame")

import marlhub  # noqa: E402
from marlhub.adapters.openspiel import to_openspiel  # noqa: E402
from marlhub.adapters.openspiel.view_copy import snapshot  # noqa: E402
from marlhub.errors import ConfigError, UncopyableEnvError  # noqa: E402

#: The newest Knights-Archers-Zombies this PettingZoo has (v10 at 1.25, v11 since).
KAZ = max(marlhub.registered("pettingzoo/butterfly/knights_archers_zombies-*"),
          key=lambda env_id: int(env_id.rpartition("-v")[2]))


#: Tests of KAZ's own state as v11 keeps it: v10 (PettingZoo 1.25) has no agent_map, and its
#: state holds pygame Surfaces that do not deep-copy natively.
needs_v11 = pytest.mark.skipif(int(KAZ.rpartition("-v")[2]) < 11,
                               reason=f"{KAZ} keeps its game state otherwise than v11")


def _kaz_mid_episode(steps: int = 40) -> Any:
    """A native Knights-Archers-Zombies env (AEC) after ``steps`` seeded random steps."""
    pytest.importorskip("pettingzoo")
    import pettingzoo.butterfly

    version = KAZ.rpartition("-")[2]
    env = getattr(pettingzoo.butterfly, f"knights_archers_zombies_{version}").env()
    env.reset(seed=0)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        env.step(int(rng.integers(6)))
    return env


def _play_both(env: Any, twin: Any, steps: int = 60) -> None:
    """Step ``env`` and ``twin`` with the same actions; their observations must stay equal."""
    rng = np.random.default_rng(2)
    for step in range(steps):
        agent = env.agent_selection
        done = env.terminations[agent] or env.truncations[agent]
        action = None if done else int(rng.integers(6))
        env.step(action)
        twin.step(action)
        for agent in env.agents:
            assert np.array_equal(env.observe(agent), twin.observe(agent)), (step, agent)


def _copy_attributes(env: Any) -> Any:
    """copy.deepcopy of each layer's attributes as they are, innermost first, without marlhub.

    ``copy.deepcopy(env)`` itself is no copy of the episode: PettingZoo's envs are
    EzPickle, which deep-copies as a new, never reset env.
    """
    layers = [env]
    while hasattr(layers[-1], "env"):
        layers.append(layers[-1].env)
    memo: dict[int, Any] = {}
    for layer in reversed(layers):
        twin = object.__new__(type(layer))
        memo[id(layer)] = twin
        twin.__dict__.update(copy.deepcopy(layer.__dict__, memo))
    return memo[id(env)]


@needs_v11
def test_knights_archers_zombies_copies_natively_so_its_clones_must_go_on_alike() -> None:
    """The native env keeps its players, zombies and arrows in pygame sprite groups; plain
    copy.deepcopy of its state goes on step for step as the original does."""
    env = _kaz_mid_episode()
    _play_both(env, _copy_attributes(env))


@needs_v11
def test_a_snapshot_of_knights_archers_zombies_owns_its_sprites_and_goes_on_alike() -> None:
    env = _kaz_mid_episode()
    twin = snapshot(env)
    native, copied = env.unwrapped, twin.unwrapped
    assert copied.zombie_list is not native.zombie_list  # pygame.sprite.Group: game state
    archer, its_twin = native.agent_map["archer_0"], copied.agent_map["archer_0"]
    assert its_twin.rect is not archer.rect and its_twin.rect == archer.rect  # pygame.Rect
    assert its_twin.weapons is not archer.weapons
    assert its_twin.image is archer.image  # a Surface: drawn with only, shared
    _play_both(env, twin)


@pytest.mark.parametrize(("make", "shared"), [
    pytest.param(lambda: pygame.Surface((2, 2)), True, id="Surface"),
    pytest.param(lambda: pygame.time.Clock(), True, id="Clock"),
    pytest.param(lambda: pygame.mask.Mask((2, 2)), True, id="Mask"),
    pytest.param(lambda: pygame.Rect(1, 2, 3, 4), False, id="Rect"),
    pytest.param(lambda: pygame.Color(1, 2, 3), False, id="Color"),
    pytest.param(lambda: pygame.math.Vector2(1, 2), False, id="Vector2"),
    pytest.param(lambda: pygame.sprite.Sprite(), False, id="Sprite"),
    pytest.param(lambda: pygame.sprite.Group(), False, id="Group"),
])
def test_snapshot_shares_only_pygames_objects_that_do_not_pickle(make: Any, shared: bool) -> None:
    value = make()
    clone = snapshot({"x": value})["x"]
    assert (clone is value) == shared
    if not shared:
        assert type(clone) is type(value)


def test_clones_of_a_knights_archers_zombies_game_equal_their_state() -> None:
    game = to_openspiel(lambda: marlhub.make(KAZ, {"max_cycles": 30}), probe_episodes=1,
                        short_name="marlhub_test_kaz_clones")
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)
    state = game.new_initial_state()
    for _ in range(12):
        state.apply_action(state.legal_actions()[0])
    twin = state.clone()
    for current in (state, twin):  # a clone goes on from where its state was, apart from it
        while not current.is_terminal():
            current.apply_action(current.legal_actions()[-1])
    assert twin.returns() == state.returns() and str(twin) == str(state)


def _lunar_lander() -> Any:
    with warnings.catch_warnings():  # SWIG's types announce they lack __module__ on import
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip("Box2D")
    return marlhub.make("gymnasium/LunarLander-v3")


def test_an_env_whose_world_is_not_pythons_is_refused_with_what_would_not_copy() -> None:
    """Box2D keeps LunarLander's world in C++ (SWIG pointers): pickle refuses it, and
    copy.deepcopy of the native env is a new, never reset env (EzPickle)."""
    env = _lunar_lander()
    with pytest.raises(UncopyableEnvError, match=r"a copy of the env in the middle of an episode "
                       r"starts over \(TypeError: cannot pickle 'SwigPyObject' object\), and "
                       r"OpenSpiel clones states") as caught:
        to_openspiel(lambda: env, short_name="marlhub_test_lunar")
    assert isinstance(caught.value, ConfigError) and caught.value.env_id == "marlhub_test_lunar"
    assert caught.value.what == "TypeError: cannot pickle 'SwigPyObject' object"


def test_knights_archers_zombies_passes_openspiels_checker_and_round_trip() -> None:
    """The interop row ``marlhub check ... --targets openspiel`` for Knights-Archers-Zombies."""
    from marlhub.conformance.interop import check_targets

    result = check_targets(lambda: marlhub.make(KAZ, {"max_cycles": 30}), ["openspiel"])[0]
    assert result.status == "pass", result
