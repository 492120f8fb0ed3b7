"""Every view carries what its target's base class declares and what learners read.

The table on the compatibility page of the docs ("What each view carries") lists
the same attributes; each row here pins one view against it, on an env whose agents
come and go (``traffic``) and on one with a global state where the row has one.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import marlhub


def test_gymnasium_views_carry_gymnasiums_env_attributes() -> None:
    hub = marlhub.make("traffic")
    for view in (marlhub.convert(hub, to="gymnasium", agent_id="light"),
                 marlhub.make("rock_paper_scissors", to="gymnasium", joint=True)):
        assert isinstance(view, gym.Env)
        assert isinstance(view.observation_space, gym.Space)
        assert isinstance(view.action_space, gym.Space)
        assert view.metadata["render_modes"] == ["ansi"] and view.render_mode == "ansi"
        assert view.unwrapped is view and view.spec is None
        view.reset(seed=0)
        assert view.np_random is not None


def test_rllib_view_carries_multi_agent_envs_attributes() -> None:
    pytest.importorskip("ray")
    from ray.rllib.env.multi_agent_env import MultiAgentEnv

    hub = marlhub.make("traffic")
    view: Any = marlhub.convert(hub, to="rllib")
    assert isinstance(view, MultiAgentEnv)
    assert view.possible_agents == hub.possible_agents
    assert view.observation_spaces == {a: hub.get_observation_space(a) for a in hub.possible_agents}
    assert view.action_spaces == {a: hub.get_action_space(a) for a in hub.possible_agents}
    assert view.max_num_agents == len(hub.possible_agents)
    view.reset(seed=0)
    assert view.num_agents == len(view.agents) > 0
    for agent in hub.possible_agents:
        assert view.get_observation_space(agent) is hub.get_observation_space(agent)
        assert view.get_action_space(agent) is hub.get_action_space(agent)
    assert view.render_mode == "ansi" and view.metadata["render_modes"] == ["ansi"]


def test_torchrl_view_carries_env_bases_specs_and_groups() -> None:
    pytest.importorskip("torchrl")
    from torchrl.envs import EnvBase
    from torchrl.envs.utils import check_env_specs

    view: Any = marlhub.make("traffic", to="torchrl")
    assert isinstance(view, EnvBase) and tuple(view.batch_size) == ()
    assert set(view.group_map) == {"car", "light"}
    for group, agents in view.group_map.items():
        assert (group, "observation") in view.full_observation_spec.keys(True)
        assert (group, "action") in view.full_action_spec.keys(True)
        assert (group, "reward") in view.full_reward_spec.keys(True)
        assert len(agents) == view.full_action_spec[group, "action"].shape[0]
    check_env_specs(view)
