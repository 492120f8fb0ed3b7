"""TorchRL -> hub: views made by to_torchrl unwrap; single-agent TorchRL envs are refused, clearly."""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

from torchrl.envs import EnvBase  # noqa: E402
from torchrl.envs.libs.gym import GymEnv  # noqa: E402

import marlhub  # noqa: E402
from marlhub.adapters import to_hub  # noqa: E402
from marlhub.adapters.torchrl import (  # noqa: E402
    from_torchrl,
    is_torchrl_env,
    is_torchrl_view_of_hub,
    to_torchrl,
)
from marlhub.envs import TicTacToe  # noqa: E402
from marlhub.errors import ConfigError, ProtocolError  # noqa: E402


def test_views_unwrap() -> None:
    hub = TicTacToe()
    env = to_torchrl(hub)
    assert from_torchrl(env) is hub
    assert to_torchrl(env) is env
    assert to_hub(env) is hub
    assert marlhub.convert(env, to="marlhub") is hub
    assert marlhub.convert(env, to="pettingzoo.aec").hub_env is hub
    assert from_torchrl(hub) is hub  # a hub env already is one


def test_convert_and_make_reach_torchrl() -> None:
    hub = TicTacToe()
    env = marlhub.convert(hub, to="torchrl")
    assert isinstance(env, EnvBase) and env.env is hub
    made = marlhub.make("rock_paper_scissors", to="torchrl", categorical_actions=False)
    assert isinstance(made, EnvBase)
    assert type(made.full_action_spec["agents", "action"]).__name__ == "OneHot"


def test_detection_looks_at_types() -> None:
    env = to_torchrl(TicTacToe())
    assert is_torchrl_env(env) and is_torchrl_view_of_hub(env)
    assert not is_torchrl_env(TicTacToe()) and not is_torchrl_env(type(env))
    native = GymEnv("CartPole-v1")
    assert is_torchrl_env(native) and not is_torchrl_view_of_hub(native)


def test_single_agent_torchrl_envs_are_refused() -> None:
    native = GymEnv("CartPole-v1")
    with pytest.raises(ProtocolError, match="lacks 'group_map'.*from_gymnasium"):
        from_torchrl(native)
    with pytest.raises(ProtocolError, match="lacks 'group_map'"):
        marlhub.convert(native, to="pettingzoo.aec")


def test_bad_options_are_refused() -> None:
    with pytest.raises(ConfigError, match="policy='ignore' is not a known policy"):
        to_torchrl(TicTacToe(), illegal_action="ignore")
    with pytest.raises(ConfigError, match="neither a MarlGroupMapType nor a dict"):
        to_torchrl(TicTacToe(), group_map="agents")
