"""The mamujoco/ family: ids read from MaMuJoCo, config, errors, lockstep, the global state."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mujoco", reason="the mamujoco/ family needs marlhub[mamujoco]")
pytest.importorskip("gymnasium_robotics", reason="the mamujoco/ family needs marlhub[mamujoco]")

from gymnasium_robotics import mamujoco_v1  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, compare_with_native  # noqa: E402
from marlhub.adapters.pettingzoo import from_pettingzoo  # noqa: E402
from marlhub.adapters.pettingzoo.family_mamujoco import MaMuJoCoFamily  # noqa: E402
from marlhub.cli import main  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.context import EnvContext  # noqa: E402
from marlhub.contract.rules import ENV_COPYABLE, EQUIV_TRAJECTORY, SEED_REPRODUCIBLE  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402

#: The partitions MaMuJoCo's own tests build (tests/envs/MaMuJoCo), each an id here.
UPSTREAM = {"Ant-2x4", "Ant-2x4d", "Ant-4x2", "HalfCheetah-2x3", "HalfCheetah-6x1", "Hopper-3x1",
            "Humanoid-9|8", "HumanoidStandup-9|8", "Reacher-2x1", "Swimmer-2x1", "Pusher-3p",
            "Walker2d-2x3", "CoupledHalfCheetah-1p1", "InvertedPendulum", "HalfCheetah"}
#: Short episodes.
SHORT = {"max_episode_steps": 25}


@pytest.fixture(scope="module")
def family() -> MaMuJoCoFamily:
    return MaMuJoCoFamily()


def _actions(env: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {a: rng.uniform(-1, 1, env.action_space(a).shape).astype(np.float32)
            for a in env.possible_agents}


def test_ids_are_every_robot_and_partition_mamujoco_builds(family: MaMuJoCoFamily) -> None:
    ids = dict(family.ids())
    assert {f"mamujoco/{i}" for i in UPSTREAM} <= set(ids)
    assert ids["mamujoco/HalfCheetah-6x1"] == "MaMuJoCo HalfCheetah, 6 agents (agent_conf '6x1')"
    assert "any '<agents>x<segments per agent>'" in ids["mamujoco/ManySegmentAnt-2x3"]
    assert "mamujoco/ManySegmentAnt" not in ids  # MaMuJoCo needs a size for it
    for env_id in ids:  # each id round-trips, and is what MaMuJoCo builds from its two parts
        robot, conf = family.parse(env_id.split("/", 1)[1])
        assert env_id == f"mamujoco/{robot.name}" + (f"-{conf}" if conf else "")
        if conf is not None and not robot.sized:
            parts = mamujoco_v1.get_parts_and_edges(robot.name, conf)[0]
            assert f"{len(parts)} agents" in ids[env_id]


def test_marlhub_list_shows_the_family(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "mamujoco/*"]) == 0
    out = capsys.readouterr().out
    assert "mamujoco/HalfCheetah-6x1" in out and "mamujoco/Humanoid-9|8" in out
    assert "mamujoco/Ant-2x4d" in marlhub.registered("mamujoco/Ant*")


def test_make_gives_mamujocos_env_through_the_parallel_adapter() -> None:
    env = marlhub.make("mamujoco/HalfCheetah-6x1")
    assert type(env) is ParallelPettingZooEnv
    assert env.possible_agents == [f"agent_{i}" for i in range(6)]
    native = marlhub.make("mamujoco/HalfCheetah-6x1", to="pettingzoo.parallel")
    assert type(native) is mamujoco_v1.parallel_env  # converting back hands MaMuJoCo's env
    whole = marlhub.make("mamujoco/InvertedPendulum")
    assert whole.possible_agents == ["agent_0"]


def test_config_reaches_mamujoco_and_the_mujoco_env() -> None:
    env = marlhub.make("mamujoco/HalfCheetah-6x1", {"agent_obsk": 0, "max_episode_steps": 3,
                                                    "ctrl_cost_weight": 0.5})
    native = mamujoco_v1.parallel_env("HalfCheetah", "6x1", agent_obsk=0)
    assert env.get_observation_space("agent_0") == native.observation_space("agent_0")
    assert env.get_sub_environments.single_agent_env.unwrapped._ctrl_cost_weight == 0.5
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs, _, terminateds, truncateds, _ = env.step(_actions(env.get_sub_environments, rng))
    assert truncateds["__all__"] and not terminateds["__all__"]


@pytest.mark.parametrize(("env_id", "message"), [
    ("mamujoco/HalfCheeta-6x1", r"no robot 'HalfCheeta'.*Did you mean 'mamujoco/HalfCheetah-6x1'"),
    ("mamujoco/HalfCheetah-3x2", r"splits HalfCheetah as '2x3' or '6x1' \(mamujoco/HalfCheetah, "
     r"without a partition, is the whole robot\)\. Did you mean 'mamujoco/HalfCheetah-2x3'"),
    ("mamujoco/ManySegmentAnt", r"any '<agents>x<segments per agent>' such as '2x3'; it has no "
     r"whole-robot form\. Did you mean 'mamujoco/ManySegmentAnt-2x3'"),
    ("mamujoco/ManySegmentAnt-2x3x4", r"such as '2x3'"),
    ("mamujoco/InvertedPendulum-2x1", r"MaMuJoCo does not split InvertedPendulum"),
])
def test_unknown_robots_and_partitions_get_suggestions(env_id: str, message: str) -> None:
    with pytest.raises(UnknownEnvError, match=message):
        marlhub.make(env_id)


@pytest.mark.parametrize(("env_id", "config", "message"), [
    ("mamujoco/HalfCheetah-6x1", {"agent_obsks": 2},
     r"unknown key 'agent_obsks'\. Accepted keys: 'agent_factorization', 'agent_obsk', .*"
     r"'max_episode_steps'"),
    ("mamujoco/HalfCheetah-6x1", {"agent_conf": "2x3"},
     r"'agent_conf' is given by the id\. Drop it from the config"),
    ("mamujoco/HalfCheetah-6x1", {"agent_obsk": None},
     r"agent_obsk=None makes MaMuJoCo one agent.*Use the id mamujoco/HalfCheetah"),
    ("mamujoco/HalfCheetah-6x1", {"agent_obsk": -1}, r"agent_obsk must be a whole number"),
    ("mamujoco/HalfCheetah", {"agent_obsk": 1}, r"'agent_obsk' has no effect on the whole robot"),
    ("mamujoco/Hopper-3x1", {"max_episode_steps": 0}, r"max_episode_steps must be a whole number"),
    ("mamujoco/CoupledHalfCheetah-1p1", {"max_episode_steps": 5},
     r"unknown key 'max_episode_steps' \(MaMuJoCo passes no keywords on to the MuJoCo env of "
     r"CoupledHalfCheetah\)"),
    ("mamujoco/ManySegmentSwimmer-2x3", {"xml_file": "my.xml"},
     r"unknown key 'xml_file' \(MaMuJoCo sets 'xml_file' itself\)"),
])
def test_config_errors_name_the_key_and_the_accepted_ones(env_id: str, config: dict,
                                                          message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        marlhub.make(env_id, config)


@pytest.mark.parametrize("rest", ["HalfCheetah-6x1", "Ant-2x4d", "ManySegmentSwimmer-2x3"])
def test_lockstep_with_mamujocos_own_parallel_env(family: MaMuJoCoFamily, rest: str) -> None:
    assert family.lockstep(rest, EnvContext(SHORT), episodes=2, seed=0, max_steps=100) == []


def test_lockstep_compares_the_global_state() -> None:
    def adapt(native: Any) -> Any:
        hub = from_pettingzoo(native)
        hub.state = lambda: np.zeros(11)  # an adapter that loses the state
        return hub

    findings = compare_with_native(
        lambda: marlhub.make("mamujoco/Hopper-3x1", to="pettingzoo.parallel"), episodes=1,
        adapt=adapt, global_state=True)
    assert [f.rule for f in findings] == [EQUIV_TRAJECTORY]
    assert "global state" in findings[0].message


def test_the_global_state_is_mamujocos_and_every_target_carries_it() -> None:
    hub = marlhub.make("mamujoco/Walker2d-2x3", SHORT)
    native = mamujoco_v1.parallel_env("Walker2d", "2x3")
    assert hub.state_space == native.single_agent_env.observation_space
    hub.reset(seed=3)
    native.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        actions = _actions(native, rng)
        hub.step(actions)
        native.step(actions)
        np.testing.assert_array_equal(hub.state(), native.state())
        assert hub.state_space.contains(hub.state())
    torchrl = pytest.importorskip("marlhub.adapters.torchrl")
    pytest.importorskip("torchrl")
    view = torchrl.to_torchrl(marlhub.make("mamujoco/Walker2d-2x3", SHORT))
    td = view.reset(seed=3)
    assert view.full_observation_spec["state"].shape == hub.state_space.shape
    fresh = marlhub.make("mamujoco/Walker2d-2x3", SHORT)
    fresh.reset(seed=3)
    np.testing.assert_array_equal(td["state"].numpy(), fresh.state())
    assert marlhub.convert(hub, to="pettingzoo.parallel").state_space is hub.state_space


def test_skrl_reads_the_global_state() -> None:
    pytest.importorskip("skrl")
    from marlhub.learners import to_skrl

    env = to_skrl("mamujoco/HalfCheetah-2x3", 2, SHORT, seed=5)
    env.reset()
    states = env.state()
    assert states is not None and set(states) == {"agent_0", "agent_1"}
    for copy in range(2):  # copy i is seeded seed + i, as a plain env made from the id
        plain = marlhub.make("mamujoco/HalfCheetah-2x3", SHORT)
        plain.reset(seed=5 + copy)
        np.testing.assert_allclose(states["agent_0"][copy].cpu().numpy(), plain.state(),
                                   rtol=1e-6)
    env.close()


def test_marlhub_check_passes_with_mamujocos_faults_named() -> None:
    report = check("mamujoco/HalfCheetah-6x1", episodes=2, against_native=True, config=SHORT,
                   interop=("pettingzoo.parallel", "gymnasium", "torchrl"))
    assert report.ok, str(report)
    assert not [f for f in report.findings if f.severity == "error"], str(report)
    copy = [f for f in report.findings if f.rule == ENV_COPYABLE]
    assert copy and all(f.message.startswith("Known fault of the native env") for f in copy)
    assert all(c.status == "pass" for c in report.conversions), str(report)


def test_pushers_3p_partition_is_known_not_to_reproduce_across_instances() -> None:
    # Either order comes about as often as the other: of 20 envs (kept, so that none
    # reuses another's address), all but never agree.
    envs = [mamujoco_v1.parallel_env("Pusher", "3p") for _ in range(20)]
    layouts = {tuple(env.reset(seed=0)[0]["agent_0"]) for env in envs}
    assert len(layouts) == 2  # MaMuJoCo's own doing
    one, two = layouts
    assert sorted(one) == sorted(two)  # the same values, in another order
    faults = MaMuJoCoFamily().known_faults("Pusher-3p")
    assert {SEED_REPRODUCIBLE, EQUIV_TRAJECTORY, ENV_COPYABLE, "target.pettingzoo.aec"} \
        <= set(faults)
    report = check("mamujoco/Pusher-3p", episodes=1, against_native=True, config=SHORT,
                   interop=("pettingzoo.aec",))
    assert report.ok, str(report)
    assert all(c.status in ("pass", "known-fault") for c in report.conversions), str(report)


def _build_many_segment_ant(_: int) -> int:
    return len(marlhub.make("mamujoco/ManySegmentAnt-2x3").possible_agents)


def test_robots_of_any_size_build_in_several_processes_at_once() -> None:
    # MaMuJoCo writes each size's model to one file of its package and deletes it after
    # loading it: the family lets one process at a time build, or they delete each other's.
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        assert list(pool.map(_build_many_segment_ant, range(6))) == [2] * 6
