"""What marlhub's objects show in a notebook (``_repr_html_``): agents, spaces, copies, groups,
and what a view converts, read back from the HTML."""

from __future__ import annotations

import html
import re

import pytest

import marlhub
from marlhub.display import html_table


def cells(page: str) -> list[list[str]]:
    """The table's rows, each a list of its cells' text."""
    return [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", page) if "<td>" in row]


def caption(page: str) -> str:
    return html.unescape(re.search(r"<b>(.*?)</b>", page).group(1))  # type: ignore[union-attr]


def test_a_hub_env_shows_its_agents_their_spaces_and_who_is_live() -> None:
    env = marlhub.make("traffic")
    rows = cells(env._repr_html_())
    assert [r[0] for r in rows] == env.possible_agents
    assert rows[0][2:] == ["MultiDiscrete([7 6 2])", "Discrete(3)"]
    assert rows[-1][2:] == [str(env.get_observation_space("light")), "Discrete(2)"]
    obs, _ = env.reset(seed=0)
    live = {r[0] for r in cells(env._repr_html_()) if r[1] == "yes"}
    assert live == set(env.agents) and live


def test_a_vector_env_shows_its_copies_and_groups() -> None:
    with marlhub.make_vec("traffic", 3, autoreset_mode="same_step") as envs:
        page = envs._repr_html_()
    assert caption(page).startswith("SyncVectorMultiAgentEnv(traffic, num_envs=3)")
    assert "autoreset_mode='same_step'" in caption(page)
    assert cells(page) == [["car", "car_0, car_1, car_2, car_3", "MultiDiscrete([7 6 2])",
                            "Discrete(3)"],
                           ["light", "light", str(marlhub.make("traffic")
                                                  .get_observation_space("light")),
                            "Discrete(2)"]]


def test_views_say_what_they_convert() -> None:
    pytest.importorskip("pettingzoo")
    view = marlhub.make("traffic", to="pettingzoo.parallel", turn_based="pad")
    assert caption(view._repr_html_()) == "PettingZoo ParallelEnv view of Traffic: 5 agents"
    aec = marlhub.make("tic_tac_toe", to="pettingzoo.aec")
    assert caption(aec._repr_html_()).startswith("PettingZoo AECEnv view of TicTacToe")
    gym_view = marlhub.make("rock_paper_scissors", to="gymnasium", agent_id="player1")
    assert caption(gym_view._repr_html_()).startswith("Gymnasium Env of 'player1' view of")
    assert [r[0] for r in cells(gym_view._repr_html_())] == ["player1", "player2"]


def test_the_torchrl_view_names_its_groups() -> None:
    pytest.importorskip("torchrl")
    from marlhub.adapters.torchrl import to_torchrl

    page = to_torchrl(marlhub.make("traffic"))._repr_html_()
    assert caption(page).startswith("TorchRL EnvBase (groups car: car_0, car_1, car_2, car_3; "
                                    "light: light) view of Traffic")


def test_the_sb3_bridge_shows_its_slots() -> None:
    pytest.importorskip("stable_baselines3")
    from marlhub.learners import to_sb3

    venv = to_sb3("traffic", 2, one_space=True)
    page = venv._repr_html_()
    venv.close()
    assert caption(page).startswith("SB3 VecEnv of 10 slots")
    assert [r[1] for r in cells(page)] == ["car_0", "car_1", "car_2", "car_3", "light"]


def test_every_cell_is_escaped() -> None:
    assert "<td>&lt;b&gt;</td>" in html_table("x", ["h"], [["<b>"]])
