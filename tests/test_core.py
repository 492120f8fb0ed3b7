"""The protocol: RLlib's names and signatures, derived Dict spaces, duck typing."""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub import MultiAgentEnv, is_multi_agent_env
from marlhub.core import missing_protocol_members

# RLlib's MultiAgentEnv surface (ray.rllib.env.multi_agent_env), as (name, parameters).
RLLIB_METHODS = {
    "reset": ["self", "seed", "options"],
    "step": ["self", "action_dict"],
    "render": ["self"],
    "get_observation_space": ["self", "agent_id"],
    "get_action_space": ["self", "agent_id"],
    "with_agent_groups": ["self", "groups", "obs_space", "act_space"],
    "close": ["self"],
}
RLLIB_ATTRIBUTES = [
    "observation_spaces", "action_spaces", "agents", "possible_agents",
    "observation_space", "action_space", "num_agents", "max_num_agents", "unwrapped", "np_random",
]


class Pair(MultiAgentEnv):
    def __init__(self, config=None):
        super().__init__()
        self.agents = self.possible_agents = ["x", "y"]
        self.observation_spaces = {"x": gym.spaces.Discrete(2), "y": gym.spaces.Box(0, 1, (2,))}
        self.action_spaces = {"x": gym.spaces.Discrete(3), "y": gym.spaces.Discrete(4)}


@pytest.mark.parametrize(("name", "params"), sorted(RLLIB_METHODS.items()))
def test_method_names_and_parameters_match_rllib(name: str, params: list[str]) -> None:
    method = getattr(MultiAgentEnv, name)
    assert list(inspect.signature(method).parameters) == params


def test_reset_takes_seed_and_options_as_keywords_only() -> None:
    kinds = {p.name: p.kind for p in inspect.signature(MultiAgentEnv.reset).parameters.values()}
    assert kinds["seed"] is kinds["options"] is inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", RLLIB_ATTRIBUTES)
def test_attributes_exist(name: str) -> None:
    assert hasattr(Pair(), name)


def test_matches_the_real_rllib_class_when_ray_is_installed() -> None:
    rllib = pytest.importorskip("ray.rllib.env.multi_agent_env")
    for name in RLLIB_METHODS:
        ours = list(inspect.signature(getattr(MultiAgentEnv, name)).parameters)
        theirs = list(inspect.signature(getattr(rllib.MultiAgentEnv, name)).parameters)
        assert ours == theirs, name


def test_per_agent_spaces_and_derived_dict_spaces() -> None:
    env = Pair()
    assert env.get_observation_space("x") is env.observation_spaces["x"]
    assert env.get_action_space("y") is env.action_spaces["y"]
    assert isinstance(env.observation_space, gym.spaces.Dict)
    assert list(env.observation_space.spaces) == ["x", "y"]
    assert env.observation_space is env.observation_space  # built once
    assert env.action_space["y"] == gym.spaces.Discrete(4)
    env.possible_agents = ["y", "x"]
    env.observation_spaces = dict(env.observation_spaces)
    assert list(env.observation_space.spaces) == ["y", "x"]  # possible_agents' order, not sorted
    env.action_spaces = {"x": gym.spaces.Discrete(5), "y": gym.spaces.Discrete(5)}
    assert env.action_space["x"] == gym.spaces.Discrete(5)  # rebuilt when replaced


def test_old_api_stack_dict_space_is_the_fallback_for_per_agent_lookups() -> None:
    class OldStack(MultiAgentEnv):
        def __init__(self):
            super().__init__()
            self.possible_agents = ["a", "b"]
            self.observation_space = gym.spaces.Dict({"a": gym.spaces.Discrete(2),
                                                      "b": gym.spaces.Discrete(3)})
            self.action_space = gym.spaces.Discrete(7)  # shared by all agents

    env = OldStack()
    assert env.get_observation_space("b") == gym.spaces.Discrete(3)
    assert env.get_action_space("a") == gym.spaces.Discrete(7)
    assert env.observation_spaces is None


def test_agent_counts_and_agent_ids_fallback() -> None:
    env = Pair()
    env.agents = ["x"]
    assert (env.num_agents, env.max_num_agents) == (1, 2)

    class Legacy(MultiAgentEnv):
        _agent_ids = {"only"}

    legacy = Legacy()
    assert legacy.agents == ["only"] and legacy.possible_agents == ["only"]
    assert MultiAgentEnv.agents == []  # instances never share the class-level list


def test_reset_seeds_np_random() -> None:
    env = Pair()
    env.reset(seed=3)
    a = env.np_random.integers(1000, size=5)
    env.reset(seed=3)
    assert np.array_equal(a, env.np_random.integers(1000, size=5))


def test_step_of_the_base_class_says_what_to_do() -> None:
    with pytest.raises(NotImplementedError, match="Pair does not implement step"):
        Pair().step({})


def test_duck_typing_accepts_lookalikes_and_rejects_others() -> None:
    class LookAlike:  # e.g. an RLlib MultiAgentEnv subclass, without importing Ray
        possible_agents = ["a"]
        observation_spaces = {"a": gym.spaces.Discrete(2)}

        def reset(self, *, seed=None, options=None): ...
        def step(self, action_dict): ...
        def get_action_space(self, agent_id): ...

    assert is_multi_agent_env(LookAlike())
    assert not is_multi_agent_env(LookAlike)  # a class is not an env
    assert not is_multi_agent_env(gym.make("CartPole-v1"))
    assert missing_protocol_members(object()) == [
        "reset()", "step()", "possible_agents",
        "get_observation_space() or observation_spaces", "get_action_space() or action_spaces",
    ]


def test_pettingzoo_envs_are_not_taken_for_hub_envs() -> None:
    pytest.importorskip("pettingzoo")
    from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make
    assert not is_multi_agent_env(pettingzoo_make("aec", "classic/tictactoe-v3"))
    assert not is_multi_agent_env(pettingzoo_make("parallel", "classic/rps-v2"))


def test_top_level_all_is_sorted_and_honest() -> None:
    assert marlhub.__all__ == sorted(marlhub.__all__)
    for name in marlhub.__all__:
        assert hasattr(marlhub, name), name
    assert isinstance(marlhub.__version__, str)


def test_importing_marlhub_imports_no_backend() -> None:
    import subprocess
    import sys

    code = ("import sys, marlhub; marlhub.make('traffic'); marlhub.registered('t*'); "
            "print(sorted(m for m in ('pettingzoo', 'pyspiel', 'ray', 'supersuit', 'torch') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
