"""PettingZoo -> hub: from_pettingzoo, PettingZooEnv, ParallelPettingZooEnv on real envs."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import pytest

pettingzoo = pytest.importorskip("pettingzoo")
from marlhub.adapters.pettingzoo.catalogue import make as pettingzoo_make  # noqa: E402

try:  # PettingZoo 1.27's registry errors; before it, the registry is marlhub's (LookupError)
    from pettingzoo.env_registry.exceptions import PettingZooRegistryError
except ImportError:
    PettingZooRegistryError = LookupError  # type: ignore[misc,assignment]
from pettingzoo.utils.wrappers import BaseWrapper  # noqa: E402

from marlhub.adapters import to_hub  # noqa: E402
from marlhub.adapters.pettingzoo import (  # noqa: E402
    ParallelPettingZooEnv,
    PettingZooEnv,
    compare_with_native,
    from_pettingzoo,
    is_pettingzoo_env,
    to_pettingzoo,
)
from marlhub.adapters.pettingzoo.adapter import state_holder  # noqa: E402
from marlhub.conformance import check  # noqa: E402
from marlhub.core import ALL  # noqa: E402
from marlhub.envs import TicTacToe  # noqa: E402
from marlhub.errors import ActionError, ProtocolError, ResetNeededError  # noqa: E402
from marlhub.spaces import ActionSampler, find_action_mask  # noqa: E402
from tests.adapters.pettingzoo.test_custom_envs import Herd, Relay  # noqa: E402
from tests.versions import kaz_dying  # noqa: E402

# Third-party noise: gymnasium's logger warns about the spaces some PettingZoo envs build.
pytestmark = pytest.mark.filterwarnings("ignore:.*WARN. :UserWarning")

# KAZ with fast zombies and deadly walls: agents die mid-episode.
DYING = kaz_dying()

# (api, registry id, constructor kwargs, episodes, max hub steps): short episodes
# keep the whole module fast; chess games are long, so only their start is compared.
NATIVE = [
    ("aec", "classic/tictactoe-v3", {}, 4, 100),
    ("aec", "classic/connect_four-v3", {}, 3, 100),
    ("aec", "classic/rps-v2", {"num_actions": 5, "max_cycles": 5}, 2, 100),
    ("aec", "classic/texas_holdem-v4", {}, 4, 100),
    ("aec", "classic/texas_holdem_no_limit-v6", {"num_players": 3}, 3, 100),
    ("aec", "classic/leduc_holdem-v4", {}, 4, 100),
    ("aec", "classic/go-v5", {"board_size": 5}, 1, 60),
    ("aec", "classic/chess-v6", {}, 1, 40),
    ("aec", "classic/hanabi-v5", {"players": 2, "hand_size": 2, "colors": 2, "ranks": 2}, 2, 200),
    ("aec", "butterfly/pistonball-v6", {"n_pistons": 4, "max_cycles": 8}, 2, 200),
    ("aec", "butterfly/cooperative_pong", {"max_cycles": 20}, 2, 200),
    ("aec", "butterfly/knights_archers_zombies", {"max_cycles": 40, **DYING}, 2, 400),
    ("aec", "sisl/pursuit", {"max_cycles": 8, "n_pursuers": 3, "n_evaders": 2}, 1, 200),
    ("parallel", "classic/rps-v2", {"max_cycles": 5}, 2, 100),
    ("parallel", "butterfly/pistonball-v6", {"n_pistons": 4, "max_cycles": 8}, 2, 100),
    ("parallel", "butterfly/cooperative_pong", {"max_cycles": 20}, 2, 100),
    ("parallel", "butterfly/knights_archers_zombies", {"max_cycles": 40, **DYING}, 2, 100),
    ("parallel", "sisl/pursuit", {"max_cycles": 8, "n_pursuers": 3, "n_evaders": 2}, 1, 100),
]


def native_factory(api: str, env_id: str, kwargs: dict[str, Any]) -> Callable[[], Any]:
    """Return a factory for the native env; skip the test when its dependencies are missing."""
    try:
        pettingzoo_make(api, env_id, **kwargs).close()
    except (PettingZooRegistryError, ImportError, LookupError) as exc:
        pytest.skip(f"{env_id} is not in this PettingZoo, or does not import here: "
                    f"{exc.__cause__ or exc}")
    return lambda: pettingzoo_make(api, env_id, **kwargs)


def native_returns(env: Any, seed: int, choose: Callable[[str, Any, Any], Any]) -> dict[str, float]:
    """Play the PettingZoo docs' loop; return each agent's sum of the rewards last() shows it."""
    env.reset(seed=seed)
    returns: dict[str, float] = defaultdict(float)
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        returns[agent] += reward
        env.step(None if term or trunc else choose(agent, obs, info))
    return dict(returns)


def hub_returns(env: Any, seed: int, choose: Callable[[str, Any, Any], Any]) -> dict[str, float]:
    obs, infos = env.reset(seed=seed)
    returns: dict[str, float] = defaultdict(float)
    while True:
        actions = {a: choose(a, o, infos.get(a)) for a, o in obs.items()}
        obs, rewards, terms, truncs, infos = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
        if terms[ALL] or truncs[ALL]:
            return dict(returns)
        obs = {a: o for a, o in obs.items() if not (terms.get(a) or truncs.get(a))}


def first_legal(agent: str, obs: Any, info: Any) -> int:
    return int(np.flatnonzero(find_action_mask(obs, info))[0])


# -- equivalence with the native env ------------------------------------------------


@pytest.mark.parametrize(("api", "env_id", "kwargs", "episodes", "max_steps"), NATIVE,
                         ids=[f"{a}:{i}" for a, i, *_ in NATIVE])
def test_lockstep_with_native(api: str, env_id: str, kwargs: dict, episodes: int,
                              max_steps: int) -> None:
    factory = native_factory(api, env_id, kwargs)
    findings = compare_with_native(factory, episodes=episodes, seed=3, max_steps=max_steps)
    assert findings == [], "\n".join(f.message for f in findings)


@pytest.mark.parametrize("factory", [Relay, Herd], ids=["Relay", "Herd"])
def test_lockstep_with_custom_envs(factory: Callable[[], Any]) -> None:
    assert compare_with_native(factory, episodes=25, seed=0) == []


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_returns_equal_the_pettingzoo_loop_returns(seed: int) -> None:
    native = native_returns(pettingzoo_make("aec", "classic/tictactoe-v3"), seed, first_legal)
    adapted = hub_returns(from_pettingzoo(pettingzoo_make("aec", "classic/tictactoe-v3")), seed,
                          first_legal)
    assert adapted == native and sorted(native.values()) == [-1, 1]


def test_returns_with_rewards_to_idle_and_dying_agents() -> None:
    # Relay pays the coach while runners move, pays runner_1 between its termination
    # and its dead step, and truncates the others: every reward counts exactly once.
    def choose(agent: str, obs: Any, info: Any) -> int:
        return 2 if agent == "runner_1" and obs[1] >= 1 else 1

    native = native_returns(Relay(), 0, choose)
    adapted = hub_returns(from_pettingzoo(Relay()), 0, choose)
    assert adapted == pytest.approx(native) and native["runner_1"] < 0


@pytest.mark.parametrize(("api", "env_id", "kwargs"), [
    ("aec", "classic/tictactoe-v3", {}),
    ("aec", "classic/leduc_holdem-v4", {}),
    ("aec", "butterfly/knights_archers_zombies", {"max_cycles": 30, **DYING}),
    ("parallel", "butterfly/cooperative_pong", {"max_cycles": 15}),
], ids=["tictactoe", "leduc", "kaz", "pong-parallel"])
def test_adapted_envs_conform(api: str, env_id: str, kwargs: dict) -> None:
    factory = native_factory(api, env_id, kwargs)
    report = check(lambda: from_pettingzoo(factory()), episodes=3, seed=0, strict=True)
    assert report.ok, str(report)


@pytest.mark.parametrize("factory", [Relay, Herd], ids=["Relay", "Herd"])
def test_adapted_custom_envs_conform(factory: Callable[[], Any]) -> None:
    report = check(lambda: from_pettingzoo(factory()), episodes=10, seed=0, strict=True)
    assert report.ok, str(report)


# -- semantics ------------------------------------------------------------------------


def test_one_hub_step_per_aec_turn_with_the_selected_agent() -> None:
    env = from_pettingzoo(pettingzoo_make("aec", "classic/connect_four-v3"))
    obs, infos = env.reset(seed=0)
    assert list(obs) == ["player_0"] and list(infos) == ["player_0"]
    obs, rewards, terms, truncs, infos = env.step({"player_0": 3})
    assert list(obs) == ["player_1"]
    assert rewards == {"player_0": 0, "player_1": 0}
    assert terms == {"player_1": False, ALL: False} and truncs == {"player_1": False, ALL: False}
    assert obs["player_1"]["observation"][:, 3, 1].sum() == 1  # player_0's piece, seen by player_1


def test_game_end_gives_final_obs_to_both_players_and_terminates_all() -> None:
    env = from_pettingzoo(pettingzoo_make("aec", "classic/tictactoe-v3"))
    obs, infos = env.reset(seed=0)
    for field in [0, 3, 1, 4]:  # player_1 and player_2 alternate
        (actor,) = obs
        obs, *_ = env.step({actor: field})
    obs, rewards, terms, truncs, infos = env.step({"player_1": 2})  # top row: player_1 wins
    assert set(obs) == {"player_1", "player_2"}
    assert rewards == {"player_1": 1, "player_2": -1}
    assert terms == {"player_1": True, "player_2": True, ALL: True}
    assert truncs == {"player_1": False, "player_2": False, ALL: False}
    assert env.agents == []
    with pytest.raises(ResetNeededError, match="the episode is over"):
        env.step({"player_2": 5})


def test_truncation_is_reported_as_truncation() -> None:
    env = from_pettingzoo(pettingzoo_make("aec", "butterfly/pistonball-v6", max_cycles=2))
    obs, infos = env.reset(seed=0)
    while True:
        (agent,) = [a for a in obs]
        obs, rewards, terms, truncs, infos = env.step({agent: np.zeros(1, np.float32)})
        if truncs[ALL] or terms[ALL]:
            break
        obs = {a: o for a, o in obs.items() if not (terms[a] or truncs[a])}
    assert truncs[ALL] and not terms[ALL]
    assert set(obs) == set(env.possible_agents)  # everyone's final obs
    assert all(truncs[a] and not terms[a] for a in obs)


def test_all_terminated_only_when_every_finished_agent_terminated() -> None:
    env = from_pettingzoo(Relay(max_cycles=2))
    obs, infos = env.reset(seed=0)
    ended: dict[str, str] = {}
    while True:
        (actor,) = [a for a in obs if a not in ended]
        action = 2 if actor == "runner_1" and env.env.cycle >= 1 else 0
        obs, rewards, terms, truncs, infos = env.step({actor: action})
        ended.update({a: "term" for a in terms if a != ALL and terms[a]})
        ended.update({a: "trunc" for a in truncs if a != ALL and truncs[a]})
        if terms[ALL] or truncs[ALL]:
            break
        obs = {a: o for a, o in obs.items() if a not in ended}
    assert ended == {"runner_1": "term", "runner_0": "trunc", "coach_0": "trunc"}
    assert truncs[ALL] and not terms[ALL]


def test_action_masks_pass_through_obs_and_infos() -> None:
    env = from_pettingzoo(pettingzoo_make("aec", "classic/tictactoe-v3"))
    obs, infos = env.reset(seed=0)
    obs, *_ = env.step({"player_1": 4})
    assert obs["player_2"]["action_mask"].tolist() == [1, 1, 1, 1, 0, 1, 1, 1, 1]
    relay = from_pettingzoo(Relay())
    obs, infos = relay.reset(seed=0)
    assert infos["runner_0"]["action_mask"].tolist() == [1, 1, 0]
    with pytest.raises(ActionError, match=r"action 2 is masked out; legal actions are \[0, 1\]"):
        relay.step({"runner_0": 2})


def test_agent_order_and_spaces_come_from_possible_agents() -> None:
    native = Relay()
    env = from_pettingzoo(native)
    assert env.possible_agents == ["runner_0", "runner_1", "coach_0"]
    assert env.get_observation_space("coach_0").shape == (2,)
    assert env.get_action_space("runner_1") == gym.spaces.Discrete(3)
    assert env.get_action_space("coach_0") == gym.spaces.Discrete(2)
    assert env.get_observation_space("runner_0") is native.observation_space("runner_0")
    par = from_pettingzoo(pettingzoo_make("parallel", "butterfly/pistonball-v6", n_pistons=5))
    obs, _ = par.reset(seed=0)
    assert list(obs) == par.possible_agents == [f"piston_{i}" for i in range(5)]


def test_dead_agents_are_stepped_inside_the_adapter() -> None:
    native = Relay(max_cycles=3)
    env = from_pettingzoo(native)
    hub_returns(env, 0, lambda a, o, i: 1)
    assert native.agents == [] and env.agents == []


def test_seeds_pass_through() -> None:
    def trajectory(seed: int) -> list[Any]:
        env = from_pettingzoo(pettingzoo_make("aec", "classic/texas_holdem-v4"))
        obs, infos = env.reset(seed=seed)
        sampler = ActionSampler(0)
        seen = [next(iter(obs.values()))["observation"].tolist()]
        for _ in range(3):
            (agent,) = obs
            obs, rewards, terms, truncs, infos = env.step(
                {agent: sampler.sample(agent, env.get_action_space(agent),
                                       find_action_mask(obs[agent], infos[agent]))})
            if terms[ALL] or truncs[ALL]:
                break
            seen.append(next(iter(obs.values()))["observation"].tolist())
        return seen

    assert trajectory(5) == trajectory(5)
    assert trajectory(5) != trajectory(6)


def test_parallel_drops_entries_of_finished_agents_and_names_common_infos() -> None:
    env = from_pettingzoo(Herd(max_steps=4))
    obs, infos = env.reset(seed=0)
    acts = {"dog_0": np.zeros(2, np.float32), "sheep_0": 1, "sheep_1": 0}
    env.step(acts)
    obs, rewards, terms, truncs, infos = env.step(acts)
    assert terms["sheep_1"] and not terms[ALL]
    assert infos["__common__"] == {"weather": {"wind": pytest.approx(env.par_env.wind)}}
    assert env.agents == ["dog_0", "sheep_0"]
    obs, rewards, terms, truncs, infos = env.step({"dog_0": np.ones(2, np.float32), "sheep_0": 1})
    assert "sheep_1" not in obs and "sheep_1" not in rewards and set(infos) == {"dog_0", "sheep_0",
                                                                               "__common__"}



class Gates(pettingzoo.ParallelEnv):
    """Two agents open gates at once; the env reuses its dicts, masks come in the infos.

    Every step reports both agents with the same dict objects, updated in place
    (the case that takes the adapter's quick path), gate ``t % 3`` is closed to
    both (until ``masks_until`` steps, then no info holds a mask), and after
    ``vanish_at`` steps the env drops everyone from ``agents`` without a done flag.
    """

    metadata = {"name": "gates_v0"}

    def __init__(self, vanish_at: int = 99, masks_until: int = 99) -> None:
        self.possible_agents = ["a", "b"]
        self.vanish_at = vanish_at
        self.masks_until = masks_until
        self.dicts: tuple[dict, ...] = ({}, {}, {}, {}, {})

    def observation_space(self, agent: str) -> gym.Space:
        return gym.spaces.Box(0.0, 100.0, (1,), np.float32)

    def action_space(self, agent: str) -> gym.Space:
        return gym.spaces.Discrete(3)

    def _report(self, rewards: float) -> tuple[dict, ...]:
        obs, rews, terms, truncs, infos = self.dicts
        mask = np.ones(3, np.int8)
        mask[self.t % 3] = 0
        for agent in self.possible_agents:
            obs[agent] = np.array([self.t], np.float32)
            rews[agent] = rewards
            terms[agent] = truncs[agent] = False
            infos[agent] = {"action_mask": mask} if self.t < self.masks_until else {}
        return self.dicts

    def reset(self, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.t = 0
        self.agents = list(self.possible_agents)
        obs, _, _, _, infos = self._report(0.0)
        return obs, infos

    def step(self, actions: dict) -> tuple[dict, ...]:
        self.t += 1
        if self.t >= self.vanish_at:
            self.agents = []
        return self._report(float(sum(actions.values())))


def test_quiet_steps_copy_the_native_dicts_and_read_masks_from_the_infos() -> None:
    native = Gates()
    env = from_pettingzoo(native)
    obs, infos = env.reset()
    first = env.step({"a": 1, "b": 2})  # the adapter learns who is quiet
    second = env.step({"a": 0, "b": 2})  # t=2: gate 2 is closed next
    assert first[0]["a"].tolist() == [1.0] and second[0]["a"].tolist() == [2.0]
    assert first[1] == {"a": 3.0, "b": 3.0} and second[1] == {"a": 2.0, "b": 2.0}
    assert all(mine is not theirs for mine, theirs in zip(second, native.dicts))
    assert second[2] == second[3] == {"a": False, "b": False, ALL: False}
    with pytest.raises(ActionError, match=r"action 2 is masked out; legal actions are \[0, 1\]"):
        env.step({"a": 0, "b": 2})
    assert native.t == 2  # nothing was applied


def test_a_mask_that_leaves_the_infos_binds_no_more() -> None:
    env = from_pettingzoo(Gates(masks_until=2))
    env.reset()
    env.step({"a": 1, "b": 2})
    env.step({"a": 0, "b": 2})  # t=1 masked gate 1; from t=2 on the infos are empty
    obs, rewards, *_ = env.step({"a": 1, "b": 1})
    assert rewards == {"a": 2.0, "b": 2.0}


def test_agents_dropped_without_a_flag_end_the_episode_as_truncated() -> None:
    env = from_pettingzoo(Gates(vanish_at=3))
    env.reset()
    for action in (1, 0):
        assert not env.step({"a": action, "b": action})[3][ALL]
    obs, rewards, terms, truncs, infos = env.step({"a": 1, "b": 1})
    assert truncs[ALL] and not terms[ALL] and env.agents == []


# -- errors -----------------------------------------------------------------------


def test_step_before_reset_raises() -> None:
    for env in (from_pettingzoo(pettingzoo_make("aec", "classic/tictactoe-v3")),
                from_pettingzoo(Herd())):
        with pytest.raises(ResetNeededError, match=r"reset\(\) has not been called yet"):
            env.step({})


@pytest.mark.parametrize(("action_dict", "message"), [
    ([4], r"in the action dict: got \[4\], expected a dict mapping each actor of \['player_1'\]"),
    ({}, r"for 'player_1': got \{\}, expected an action for every actor"),
    ({"player_2": 4}, r"'player_2' did not receive an observation in the last step"),
    ({"player_1": 4, "player_2": 4}, r"'player_2' did not receive an observation"),
    ({"player_9": 4}, r"'player_9' is not an agent of tictactoe_v3; its agents are"),
    ({"player_1": 9}, r"in Discrete\(9\) \(9 \(int\) is not an integer in \[0, 8\]\)"),
    ({"player_1": 4.0}, r"got 4.0, expected an action in Discrete\(9\)"),
    ({"player_1": None}, r"got None"),
], ids=["not-a-dict", "missing", "other-player", "extra-player", "unknown", "out-of-space",
        "float", "none"])
def test_bad_action_dicts_raise_and_leave_the_env_unchanged(action_dict: Any, message: str) -> None:
    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    env = from_pettingzoo(native)
    env.reset(seed=0)
    board = native.unwrapped.board.squares[:]
    with pytest.raises(ActionError, match=message):
        env.step(action_dict)
    assert native.unwrapped.board.squares == board and native.agent_selection == "player_1"
    obs, *_ = env.step({"player_1": 4})  # still usable
    assert list(obs) == ["player_2"]


def test_masked_action_raises_with_the_legal_actions() -> None:
    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    env = from_pettingzoo(native)
    env.reset(seed=0)
    env.step({"player_1": 4})
    with pytest.raises(ActionError, match=r"action 4 is masked out; legal actions are \[0, 1, 2,"):
        env.step({"player_2": 4})
    assert native.unwrapped.board.squares.count(0) == 8


@pytest.mark.parametrize(("action_dict", "message"), [
    ({"dog_0": np.zeros(2, np.float32), "sheep_0": 1}, r"Add an action for 'sheep_1'"),
    ({"dog_0": np.zeros(3, np.float32), "sheep_0": 1, "sheep_1": 0},
     r"shape \(3,\) differs from the space's \(2,\)"),
    ({"dog_0": np.zeros(2, np.float32), "sheep_0": 1, "sheep_1": 0, "wolf_0": 1},
     r"'wolf_0' is not an agent of herd_v0"),
    ({"dog_0": np.zeros(2, np.float32), "sheep_0": 2, "sheep_1": 0}, r"for 'sheep_0': got 2"),
    ({"dog_0": np.array([np.nan, 0], np.float32), "sheep_0": 1, "sheep_1": 0}, "value holds NaN"),
    ({"dog_0": np.array([0.5, 1.5], np.float32), "sheep_0": 1, "sheep_1": 0},
     r"value 1.5 at index \(1,\) is above the high bound 1.0"),
    ({"dog_0": [0.0, 0.0], "sheep_0": 1, "sheep_1": 0}, "expected a numpy array of dtype float32"),
], ids=["missing", "bad-shape", "unknown", "out-of-space", "nan", "above-bound", "list"])
def test_parallel_bad_action_dicts_raise_and_leave_the_env_unchanged(action_dict: dict,
                                                                     message: str) -> None:
    native = Herd()
    env = from_pettingzoo(native)
    env.reset(seed=0)
    with pytest.raises(ActionError, match=message):
        env.step(action_dict)
    assert native.t == 0


def test_not_a_pettingzoo_env_is_refused() -> None:
    with pytest.raises(ProtocolError, match="Expected a PettingZoo AECEnv or ParallelEnv"):
        from_pettingzoo(object())


# -- identity, detection, RLlib compatibility ---------------------------------------


def test_detection_and_to_hub() -> None:
    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    par = pettingzoo_make("parallel", "classic/rps-v2")
    assert is_pettingzoo_env(native) and is_pettingzoo_env(par)
    assert not is_pettingzoo_env(TicTacToe()) and not is_pettingzoo_env(PettingZooEnv)
    assert type(to_hub(native)) is PettingZooEnv and type(to_hub(par)) is ParallelPettingZooEnv
    assert to_pettingzoo(from_pettingzoo(native)) is native
    assert to_pettingzoo(from_pettingzoo(par), api="parallel") is par


def test_detection_does_not_import_pettingzoo() -> None:
    code = (
        "import sys, marlhub\n"
        "from marlhub.adapters import to_hub\n"
        "from marlhub.envs import TicTacToe\n"
        "from marlhub.adapters.pettingzoo import is_pettingzoo_env\n"
        "env = TicTacToe()\n"
        "assert to_hub(env) is env and not is_pettingzoo_env(env)\n"
        "assert 'pettingzoo' not in sys.modules, 'pettingzoo was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_rllib_compatible_constructors_and_attributes() -> None:
    native = pettingzoo_make("aec", "classic/chess-v6", render_mode="ansi")
    env = PettingZooEnv(native)
    assert env.env is native and env.get_sub_environments is native.unwrapped
    env.reset(seed=0)
    assert "r n b q k b n r" in env.render().lower() or "rnbqkbnr" in env.render().lower()
    par_native = pettingzoo_make("parallel", "classic/rps-v2")
    par = ParallelPettingZooEnv(par_native)
    assert par.par_env is par_native and par.get_sub_environments is par_native.unwrapped
    assert isinstance(par.observation_space, gym.spaces.Dict)
    env.close()
    par.close()


def test_envs_without_possible_agents_learn_their_agents() -> None:
    from pettingzoo.test.example_envs import generated_agents_parallel_v0

    env = from_pettingzoo(generated_agents_parallel_v0.env())
    start = list(env.possible_agents)
    obs, infos = env.reset(seed=0)
    sampler = ActionSampler(0)
    for _ in range(60):
        actions = {a: sampler.sample(a, env.get_action_space(a)) for a in obs}
        obs, rewards, terms, truncs, infos = env.step(actions)
        if terms[ALL] or truncs[ALL]:
            break
        obs = {a: o for a, o in obs.items() if not (terms[a] or truncs[a])}
    assert set(env.possible_agents) >= set(start) and len(env.possible_agents) > len(start)


class DoubleRewards(BaseWrapper):
    """A wrapper with its own reward tables (the AEC adapter must read them, not the env's)."""

    def reset(self, seed: Any = None, options: Any = None) -> None:
        super().reset(seed=seed, options=options)
        self._copy()

    def step(self, action: Any) -> None:
        super().step(action)
        self._copy()

    def _copy(self) -> None:
        self.rewards = {a: 2 * r for a, r in self.env.rewards.items()}
        self._cumulative_rewards = {a: 2 * r for a, r in self.env._cumulative_rewards.items()}


def test_state_is_read_past_pettingzoos_forwarding_wrappers_only() -> None:
    native = pettingzoo_make("aec", "classic/tictactoe-v3")
    assert state_holder(native) is native.unwrapped  # three PettingZoo wrappers skipped
    doubled = DoubleRewards(pettingzoo_make("aec", "classic/tictactoe-v3"))
    assert state_holder(doubled) is doubled
    def make() -> Any:
        return DoubleRewards(pettingzoo_make("aec", "classic/tictactoe-v3"))

    assert compare_with_native(make, episodes=3) == []
    returns = hub_returns(from_pettingzoo(doubled), 0, first_legal)
    assert sorted(returns.values()) == [-2, 2]
