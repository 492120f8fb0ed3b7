"""PPO's module takes the registry's observations with RLlib's own flattening connector.

PPO's default RLModule takes 1-D Box observations only; the RLlib guide's config
adds RLlib's ``FlattenObservations`` env-to-module connector, which turns Dict
(masked games), Discrete, MultiDiscrete, 2-D Box and image observations into one
float32 vector. One id of each kind is sampled by RLlib's ``MultiAgentEnvRunner``
in this process (no Ray cluster): PPO's module acts on every step.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

pytest.importorskip("ray.rllib")
pytest.importorskip("torch")

from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner  # noqa: E402

import marlhub  # noqa: E402
from tests.adapters.rllib.ray_session import flattening_ppo_config  # noqa: E402


def _runner(config: Any) -> Any:
    return MultiAgentEnvRunner(config=config)


def _needs(module: str) -> Any:
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed")


@pytest.mark.parametrize("env_id", [
    "rock_paper_scissors",                                                   # Discrete
    "traffic",                                                               # MultiDiscrete
    pytest.param("openspiel/kuhn_poker", marks=_needs("pyspiel")),            # Dict, masked
    pytest.param("pettingzoo/butterfly/cooperative_pong-v6",                  # images
                 marks=_needs("pettingzoo")),
])
# PettingZoo's pong renders on reset whatever the render mode: its warning is no concern here.
@pytest.mark.filterwarnings("ignore:.*without specifying any render mode:UserWarning")
def test_ppos_module_acts_on_flattened_observations(env_id: str) -> None:
    runner = _runner(flattening_ppo_config(env_id))
    try:
        episodes = runner.sample(num_timesteps=20)
        module_spaces = runner.get_spaces()
    finally:
        runner.stop()
    assert sum(len(e) for e in episodes) >= 20
    for agent in marlhub.make(env_id).possible_agents:
        space = module_spaces[agent][0]
        assert len(space.shape) == 1 and space.dtype.name == "float32", (agent, space)


def test_without_the_connector_ppos_module_refuses_a_discrete_observation() -> None:
    config = flattening_ppo_config("rock_paper_scissors").env_runners(
        env_to_module_connector=None)
    with pytest.raises(ValueError, match="No default encoder config for obs space=Discrete"):
        _runner(config)
