"""The momaland/ family: MOMAland's own list of envs, vector rewards in the hub, lockstep."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("momaland")
# The envs the tests play (pygame and Pillow, which the README's commands install beside it).
pytest.importorskip("momaland.envs.item_gathering.moitem_gathering_v0")
pytest.importorskip("momaland.envs.connect4.moconnect4_v0")

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402
from marlhub.adapters.pettingzoo.family_momaland import MomalandFamily  # noqa: E402
from marlhub.cli import main  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.contract import rules as R  # noqa: E402
from marlhub.registry import EnvContext  # noqa: E402

ITEMS = "momaland/moitem_gathering-v0"


def _momalands_own_list() -> set[str]:
    """The keys of ``momaland.utils.all_modules.all_environments``, read, not imported (it
    imports every env module, and the multiwalker needs Box2D, which the tests do not)."""
    spec = importlib.util.find_spec("momaland.utils.all_modules")
    assert spec is not None and spec.origin is not None
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "all_environments":
            return {key.value for key in node.value.keys}  # type: ignore[attr-defined]
    raise AssertionError("all_environments is gone from momaland.utils.all_modules")


def test_the_ids_are_momalands_own_list_of_envs() -> None:
    family = MomalandFamily()
    own = {name.replace("_v", "-v") for name in _momalands_own_list()}
    assert set(family.catalogue()[0]) == own and len(own) >= 13
    # Listed: those whose module imports here (the multiwalker needs Box2D).
    listed = dict(family.ids())
    assert ITEMS in listed and set(listed) <= {f"momaland/{name}" for name in own}
    assert listed[ITEMS] == "MOMAland env (AEC and parallel)"
    assert listed["momaland/moconnect4-v0"] == "MOMAland env (AEC)"
    assert marlhub.registered("momaland/catch*") == ["momaland/catch-v0"]


def test_the_hub_env_declares_the_reward_spaces_and_pays_arrays_in_them() -> None:
    env = marlhub.make(ITEMS, {"api": "parallel"})
    assert isinstance(env, ParallelPettingZooEnv)
    space = env.get_reward_space("agent_0")
    assert space is env.reward_spaces["agent_1"] and space.shape == (3,)
    obs, _ = env.reset(seed=0)
    rewards = env.step({a: 0 for a in obs})[1]
    assert all(isinstance(r, np.ndarray) and r.shape == (3,) for r in rewards.values())
    turns = marlhub.make("momaland/moconnect4-v0")
    assert isinstance(turns, PettingZooEnv) and turns.get_reward_space("player_0").shape == (9,)


@pytest.mark.parametrize(("env_id", "config"), [
    (ITEMS, {}), (ITEMS, {"api": "parallel"}), ("momaland/moconnect4-v0", {}),
])
def test_the_hub_env_is_momalands_env_in_lockstep(env_id: str, config: dict) -> None:
    family, rest = MomalandFamily(), env_id.partition("/")[2]
    assert family.lockstep(rest, EnvContext(config), episodes=2, seed=0, max_steps=200) == []


def test_check_against_native_passes_with_momalands_own_faults_as_warnings(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", ITEMS, "--against-native", "--episodes", "3"]) == 0
    out = capsys.readouterr().out
    assert "identical to the native env" in out
    assert "Known fault of the native env" in out  # it seeds numpy's global generator
    report = check(ITEMS, episodes=3)
    assert report.ok and {f.rule for f in report.findings} <= {R.SEED_GLOBAL_STATE}


def test_the_faults_name_momalands_own_bugs() -> None:
    family = MomalandFamily()
    assert R.REWARD_SCALAR in family.known_faults("momultiwalker_stability-v0")
    assert "NumPy 2" in family.known_faults("mogem_mining_v0")[R.TURN_ACTIONS_ACCEPTED]
    assert family.known_faults("moconnect4-v0") == {}
