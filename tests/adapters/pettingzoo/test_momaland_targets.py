"""MOMAland's vector rewards at the far side: carried by PettingZoo, TorchRL and RLlib, refused
by the consumers of one number per agent until scalarized, as MOMAland's LinearizeReward does."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("momaland")
# The envs the tests play (pygame and Pillow, which the README's commands install beside it).
pytest.importorskip("momaland.envs.item_gathering.moitem_gathering_v0")
pytest.importorskip("momaland.envs.connect4.moconnect4_v0")

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import to_pettingzoo  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.errors import VectorRewardError  # noqa: E402
from marlhub.wrappers import ScalarizeRewards  # noqa: E402

ITEMS = "momaland/moitem_gathering-v0"
PARALLEL = {"api": "parallel"}


def _items() -> Any:
    return marlhub.make(ITEMS, PARALLEL)


def test_momalands_own_api_test_passes_on_the_aec_view_of_a_hub_env() -> None:
    from momaland.test.api_test import api_test
    from pettingzoo.test import seed_test

    for env_id, config in ((ITEMS, PARALLEL), ("momaland/moconnect4-v0", {})):
        view = to_pettingzoo(marlhub.convert(marlhub.make(env_id, config)), api="aec")
        assert view.reward_space(view.possible_agents[0]).shape in ((3,), (9,))
        with warnings.catch_warnings():  # its advice on MOMAland's own obs is not its verdict
            warnings.simplefilter("ignore")
            api_test(view, num_cycles=20)
        view.reset(seed=0)
        assert all(isinstance(r, np.ndarray) for r in view.rewards.values())
        seed_test(lambda: to_pettingzoo(marlhub.make(env_id, config), api="aec"), num_cycles=10)


def test_pettingzoos_parallel_api_test_passes_and_the_arrays_go_through_unchanged() -> None:
    from pettingzoo.test import parallel_api_test

    parallel_api_test(to_pettingzoo(_items(), api="parallel"), num_cycles=20)
    view, native = to_pettingzoo(_items(), api="parallel"), _items().par_env
    for env in (view, native):
        env.reset(seed=3)
    for _ in range(5):
        actions = {a: 1 for a in view.agents}
        mine, theirs = view.step(actions)[1], native.step(actions)[1]
        assert mine.keys() == theirs.keys()
        assert all(np.array_equal(mine[a], theirs[a]) for a in mine)


def test_torchrls_check_env_specs_passes_with_one_reward_per_objective() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs.utils import check_env_specs

    env = marlhub.convert(_items(), to="torchrl")
    assert tuple(env.full_reward_spec["agents", "reward"].shape) == (2, 3)
    check_env_specs(env, seed=0)
    rollout = env.rollout(4)
    assert tuple(rollout["next", "agents", "reward"].shape) == (4, 2, 3)
    turns = marlhub.convert(marlhub.make("momaland/moconnect4-v0"), to="torchrl")
    check_env_specs(turns, seed=0)


def test_rllibs_view_carries_the_arrays() -> None:
    pytest.importorskip("ray.rllib")
    from marlhub.adapters.rllib import to_rllib

    hub, view = _items(), to_rllib(_items())
    assert view.get_reward_space("agent_0") == hub.get_reward_space("agent_0")
    hub.reset(seed=1), view.reset(seed=1)
    for _ in range(4):
        actions = {a: 2 for a in hub.agents}
        want, got = hub.step(actions)[1], view.step(actions)[1]
        assert {a: r.tolist() for a, r in got.items()} == {a: r.tolist() for a, r in want.items()}


@pytest.mark.parametrize(("target", "options", "needs"), [
    ("gymnasium", {"agent_id": "agent_0"}, "a Gymnasium env's reward is one number"),
    ("gymnasium", {"joint": True}, "a Gymnasium env's reward is one number"),
    ("gymnasium.tuple", {}, "the Tuple convention pays one number per agent"),
    ("openspiel", {}, "OpenSpiel's returns and rewards are one number per player"),
])
def test_consumers_of_one_number_refuse_vector_rewards_saying_how_to_scalarize(
        target: str, options: dict, needs: str) -> None:
    if target == "openspiel":
        pytest.importorskip("pyspiel")
    with pytest.raises(VectorRewardError, match=(
            rf"^to_{target.replace('.', '_')}: {needs}, but the env declares vector rewards: "
            r"'agent_0' has the reward space Box\(0.0, 3.0, \(3,\), float32\) \(3 objectives\)\. "
            r"Scalarize them first with explicit weights, one per objective: "
            r"marlhub.wrappers.ScalarizeRewards\(env, weights\) with 3 weights")):
        marlhub.convert(_items(), to=target, **options)


def test_after_the_weights_gymnasiums_own_checker_passes() -> None:
    from gymnasium.utils.env_checker import check_env

    weights = [1.0, 0.5, 0.25]
    check_env(marlhub.convert(ScalarizeRewards(_items(), weights), to="gymnasium",
                              agent_id="agent_1"), skip_render_check=True)
    report = check(lambda: ScalarizeRewards(_items(), weights), episodes=2,
                   interop=["gymnasium", "gymnasium.tuple"])
    assert [c.status for c in report.conversions] == ["pass", "pass"], report.conversions
    pyspiel = pytest.importorskip("pyspiel")
    from marlhub.adapters.openspiel import to_openspiel

    # Not zero-sum: the probe's few episodes may gather nothing and guess it is.
    game = to_openspiel(lambda: ScalarizeRewards(_items(), weights),
                        short_name="marlhub_test_scalarized_items", zero_sum=False)
    pyspiel.random_sim_test(game, num_sims=2, serialize=False, verbose=False)


def test_the_weights_pay_what_momalands_linearize_reward_pays() -> None:
    from momaland.utils.parallel_wrappers import LinearizeReward

    weights = {"agent_0": np.array([0.1, 0.6, 0.3]), "agent_1": np.array([0.5, 0.25, 0.25])}
    ours = ScalarizeRewards(_items(), weights)
    theirs = LinearizeReward(_items().par_env, weights)
    ours.reset(seed=7), theirs.reset(seed=7)
    rng = np.random.default_rng(0)
    paid = 0.0
    for _ in range(20):
        if not theirs.agents:
            break
        actions = {a: int(rng.integers(4)) for a in theirs.agents}
        mine, native = ours.step(actions)[1], theirs.step(actions)[1]
        assert mine == pytest.approx({a: float(r) for a, r in native.items()}, abs=1e-6)
        paid += sum(abs(r) for r in mine.values())
    assert paid > 0  # some item was gathered: the weights were used
