"""The vmas/ family: VMAS's own catalogue, config to vmas.make_env, lockstep with native VMAS."""

from __future__ import annotations

import subprocess
import sys

import pytest

vmas = pytest.importorskip("vmas")

import marlhub  # noqa: E402
from marlhub.adapters.vmas.family import DEFAULT_MAX_STEPS, VmasFamily  # noqa: E402
from marlhub.adapters.vmas.lockstep import compare_with_native  # noqa: E402
from marlhub.cli import main  # noqa: E402
from marlhub.errors import ConfigError, UnknownEnvError  # noqa: E402

SCENARIOS = sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios})


def test_every_scenario_of_vmas_is_listed_and_nothing_else() -> None:
    listed = marlhub.registered("vmas/*")
    assert sorted(listed) == sorted(f"vmas/{s}" for s in SCENARIOS)
    assert len(listed) >= 40


@pytest.mark.filterwarnings("ignore:Force limits not specified:UserWarning")  # vel_control's
@pytest.mark.parametrize("continuous", [True, False], ids=["continuous", "discrete"])
def test_every_scenario_matches_native_vmas_in_lockstep(continuous: bool) -> None:
    """Each scenario, made by id, against vmas.make_env stepped natively (same seed, actions)."""
    config = {"max_steps": 6, "continuous_actions": continuous}
    failures = {}
    for scenario in SCENARIOS:
        hub = marlhub.make(f"vmas/{scenario}", config)
        findings = compare_with_native(
            hub, lambda: vmas.make_env(scenario, num_envs=1, **config), episodes=1, seed=3)
        if findings:
            failures[scenario] = findings[0].message
    assert failures == {}


def test_config_reaches_vmas_make_env() -> None:
    env = marlhub.make("vmas/navigation", {"n_agents": 2, "continuous_actions": False,
                                           "max_steps": 4})
    assert env.possible_agents == ["agent_0", "agent_1"]
    assert env.vmas_env.max_steps == 4 and not env.vmas_env.continuous_actions
    assert type(env.action_spaces["agent_0"]).__name__ == "Discrete"
    assert marlhub.make("vmas/balance").vmas_env.max_steps == DEFAULT_MAX_STEPS
    assert marlhub.make("vmas/balance", {"max_steps": None}).vmas_env.max_steps is None


def test_bad_ids_and_configs_are_refused_clearly() -> None:
    with pytest.raises(UnknownEnvError, match="Did you mean 'vmas/balance'"):
        marlhub.make("vmas/balanse")
    with pytest.raises(ConfigError, match=r"does not use the keys \['n_agent'\]"):
        marlhub.make("vmas/navigation", {"n_agent": 2})
    with pytest.raises(ConfigError, match="num_envs is not a config key.*make_vec"):
        marlhub.make("vmas/balance", {"num_envs": 4})
    with pytest.raises(ConfigError, match="'wrapper' is set by marlhub"):
        marlhub.make("vmas/balance", {"wrapper": "gymnasium"})


def test_check_against_native_from_the_command_line(capsys: pytest.CaptureFixture) -> None:
    code = main(["check", "vmas/dispersion", "vmas/simple_spread", "--against-native",
                 "--episodes", "2", "--max-steps", "30", "-q"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 passed, 0 failed" in out


def test_a_missing_vmas_names_its_extra() -> None:
    code = ("import sys; sys.modules['vmas'] = None\n"
            "import marlhub\n"
            "try:\n    marlhub.make('vmas/balance')\n"
            "except marlhub.MissingDependencyError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120).stdout
    assert "marlhub[vmas]" in out, out


def test_the_family_describes_itself() -> None:
    family = VmasFamily()
    assert dict(family.ids())["vmas/simple_tag"] == "VMAS MPE scenario 'simple_tag'"


@pytest.mark.parametrize("scenario", ["road_traffic", "wind_flocking"])
def test_known_faults_are_vmas_own(scenario: str) -> None:
    """The same seed and step give other values in a later episode, in VMAS alone."""
    import torch

    from marlhub.contract.rules import SEED_REPRODUCIBLE

    assert SEED_REPRODUCIBLE in VmasFamily().known_faults(scenario)
    assert "target.gymnasium" in VmasFamily().known_faults(scenario)  # check_env replays a seed
    assert SEED_REPRODUCIBLE not in VmasFamily().known_faults("balance")
    env = vmas.make_env(scenario, num_envs=1)
    actions = [torch.full((1, 2), 0.3) for _ in env.agents]
    seen = []
    for _ in range(3):
        env.reset(seed=0)
        obs, rewards, _, _ = env.step(actions)
        seen.append((float(rewards[0][0]), obs[0][0].tolist()))
    assert seen[0] != seen[1]


def test_road_traffic_pays_a_new_episode_by_the_action_before_its_reset() -> None:
    """The same seed and the same actions after reset(seed=0), and another first reward when
    the step before the reset had another action, in VMAS alone: so a batch, which steps a
    copy that ended with zero actions, cannot agree with TorchRL's driver step by step."""
    import torch

    from marlhub.contract.rules import EQUIV_TRAJECTORY

    assert EQUIV_TRAJECTORY in VmasFamily().known_faults("road_traffic")
    assert EQUIV_TRAJECTORY not in VmasFamily().known_faults("balance")

    def first_reward(before_reset: float) -> float:
        env = vmas.make_env("road_traffic", num_envs=1, seed=0)
        env.reset(seed=0)
        for value in (0.2, 0.2, before_reset):
            env.step([torch.full((1, 2), value) for _ in env.agents])
        env.reset(seed=0)
        return float(env.step([torch.full((1, 2), 0.2) for _ in env.agents])[1][0][0])

    assert first_reward(0.0) != first_reward(0.5)  # the day VMAS fixes it, drop the fault


def test_stale_reset_infos_are_vmas_own() -> None:
    """A later reset(seed=0) hands back the last step's reward terms, in VMAS alone."""
    import torch

    assert "target.pettingzoo.parallel" in VmasFamily().known_faults("balance")
    env = vmas.make_env("balance", num_envs=1, seed=0, dict_spaces=True)
    first = env.reset(seed=0, return_info=True)[1]["agent_0"]["pos_rew"].item()
    for _ in range(3):
        env.step({agent.name: torch.tensor([[0.5, 0.5]]) for agent in env.agents})
    later = env.reset(seed=0, return_info=True)[1]["agent_0"]["pos_rew"].item()
    assert first == 0.0 and later != 0.0  # the day VMAS fixes it, drop the known fault
