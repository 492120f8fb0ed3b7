"""``to_skrl``: skrl's IPPO and MAPPO on agent slots, agent by agent, against plain envs.

The slots every agent shows are the ones a plain replay of ``marlhub.make(id)`` gives
(:class:`tests.learners.replay.SlotReplay`, none of the bridges' code); then skrl's own
learners train on a simultaneous env, a turn-based game with masks (skrl has none: the
copies substitute a legal action) and traffic (a mixed team whose cars leave and join),
and what skrl stored in its memories, summed per agent episode, is what the hub paid.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Optional

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.core import ALL
from marlhub.wrappers import IllegalActionWrapper
from marlhub.wrappers.base import HubWrapper
from tests.learners.replay import SlotReplay, without_mask
from tests.skrl_learner import skrl_learner

torch = pytest.importorskip("torch")
pytest.importorskip("skrl")
from skrl.envs.wrappers.torch import MultiAgentEnvWrapper  # noqa: E402

from marlhub.learners import to_skrl  # noqa: E402
from marlhub.vector import SyncVectorMultiAgentEnv  # noqa: E402



@pytest.mark.parametrize("env_id, one_space", [
    ("traffic", True),  # a mixed team whose cars leave and join
    ("openspiel/tic_tac_toe", False),  # turn-based, masks
    ("rock_paper_scissors", False),  # simultaneous
])
def test_every_agent_shows_what_a_plain_replay_gives(env_id: str, one_space: bool) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    env = to_skrl(env_id, 3, one_space=one_space, seed=0)
    assert isinstance(env, MultiAgentEnvWrapper)
    replay = SlotReplay(env_id, 3, env.slots.agents, one_space, seed=0)
    obs, _ = env.reset()
    replay.reset()
    per_agent = len(env.possible_agents)
    for step in range(100):
        expected = replay.expected
        for k, agent in enumerate(env.possible_agents):
            for i in range(3):
                row = expected["obs"][i * per_agent + k]
                if row is not None and not one_space:  # flat, one-hot, as gymnasium has it
                    row = gym.spaces.flatten(without_mask(replay.obs_space[agent], None)[0],
                                             row)
                if row is not None:
                    np.testing.assert_allclose(obs[agent][i].cpu().numpy().reshape(-1),
                                               np.asarray(row, np.float64).reshape(-1),
                                               err_msg=f"step {step}, copy {i}, {agent}")
        actions = replay.slot_actions()
        replay.step(actions)
        table = actions.reshape(3, per_agent)
        obs, rewards, terminated, truncated, infos = env.step(
            {a: torch.as_tensor(table[:, [k]]) for k, a in enumerate(env.possible_agents)})
        done = {i * per_agent + k for k, a in enumerate(env.possible_agents) for i in range(3)
                if terminated[a][i, 0] or truncated[a][i, 0]}
        assert done == replay.expected["done"]
        got = np.stack([rewards[a][:, 0].numpy() for a in env.possible_agents], axis=1)
        np.testing.assert_allclose(got.reshape(-1), replay.expected_rewards)
    assert replay.episodes
    env.close()


def test_every_agent_is_there_with_its_copys_global_state() -> None:
    env = to_skrl("traffic", 2, one_space=True, seed=0)
    plain = [marlhub.make("traffic") for _ in range(2)]
    env.reset()
    for i, copy in enumerate(plain):
        copy.reset(seed=i)
    assert env.agents == env.possible_agents == ["car_0", "car_1", "car_2", "car_3", "light"]
    states = env.state()
    assert env.state_space("light") == plain[0].state_space
    for i, copy in enumerate(plain):
        np.testing.assert_allclose(states["car_2"][i].numpy(), copy.state())
    env.close()


def test_a_missing_agents_actions_are_refused_by_name() -> None:
    env = to_skrl("rock_paper_scissors", 2)
    env.reset()
    with pytest.raises(marlhub.errors.VectorEnvError, match="no actions of 'player2'"):
        env.step({"player1": torch.zeros((2, 1), dtype=torch.int64)})
    env.close()


class PaidReturns(HubWrapper):
    """Record, per finished episode, each agent's return as the hub env paid it (only the
    agents that were in the episode)."""

    def __init__(self, env: Any, log: list[dict[Any, float]]) -> None:
        super().__init__(env)
        self.log = log
        self.returns: dict[Any, float] = {}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        obs, infos = self.env.reset(seed=seed, options=options)
        self.returns = dict.fromkeys(obs, 0.0)
        return obs, infos

    def step(self, action_dict: Any) -> Any:
        result = self.env.step(action_dict)
        for agent in result[0]:
            self.returns.setdefault(agent, 0.0)
        for agent, reward in result[1].items():
            self.returns[agent] = self.returns.get(agent, 0.0) + float(reward)
        if result[2].get(ALL) or result[3].get(ALL):
            self.log.append(dict(self.returns))
        return result


def _copy(env_id: str, log: list[dict[Any, float]], substitute: bool) -> Any:
    env = PaidReturns(marlhub.make(env_id), log)
    return IllegalActionWrapper(env, "substitute") if substitute else env


@pytest.mark.parametrize("env_id, algorithm", [
    ("traffic", "MAPPO"),  # mixed team, agents that come and go, the global state
    ("openspiel/tic_tac_toe", "IPPO"),  # turn-based with masks (substituted)
    ("rock_paper_scissors", "IPPO"),  # simultaneous
])
def test_skrl_trains_and_stores_the_hubs_returns(env_id: str, algorithm: str,
                                                 tmp_path: Any) -> None:
    if env_id.startswith("openspiel"):
        pytest.importorskip("pyspiel")
    from skrl.memories.torch import RandomMemory
    from skrl.trainers.torch import SequentialTrainer

    logging.getLogger("skrl").setLevel(logging.WARNING)
    logs: list[list[dict[Any, float]]] = [[], []]
    substitute = env_id.startswith("openspiel")
    vector_env = SyncVectorMultiAgentEnv(
        [functools.partial(_copy, env_id, log, substitute) for log in logs],
        autoreset_mode="same_step", check_masks=not substitute)
    env = to_skrl(vector_env, one_space=env_id == "traffic")
    agents = env.possible_agents
    memories = {a: RandomMemory(memory_size=32, num_envs=env.num_envs, device=env.device)
                for a in agents}
    stored: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {a: [] for a in agents}
    for a, memory in memories.items():  # what skrl stores, as it stores it
        def add_samples(add: Any = memory.add_samples, a: str = a, **tensors: Any) -> None:
            stored[a].append((tensors["rewards"][:, 0].cpu().numpy().copy(),
                              (tensors["terminated"] | tensors["truncated"])[:, 0].cpu().numpy()))
            add(**tensors)
        memory.add_samples = add_samples  # type: ignore[method-assign]
    learner, models = skrl_learner(env, algorithm, memories, tmp_path)
    torch.manual_seed(0)
    trainer = {"headless": True, "disable_progressbar": True}
    # skrl's models are lazy: their parameters exist after a first step
    SequentialTrainer(env=env, agents=learner, cfg={**trainer, "timesteps": 1}).train()
    before = {a: [p.detach().clone() for p in models[a]["policy"].parameters()]
              for a in agents}
    for a in agents:  # the second trainer resets the copies: their episodes start over
        stored[a].clear()
    assert not any(logs)
    SequentialTrainer(env=env, agents=learner, cfg={**trainer, "timesteps": 64}).train()
    for a in agents:  # every agent's policy was updated
        assert any(not torch.equal(b, p) for b, p in
                   zip(before[a], models[a]["policy"].parameters())), a
    env.close()
    # Each agent's episodes in skrl's memories, copy by copy, are the hub's.
    for i, log in enumerate(logs):
        for a in agents:
            returns, total = [], 0.0
            for rewards, done in stored[a]:
                total += float(rewards[i])
                if done[i]:
                    returns.append(total)
                    total = 0.0
            # (an agent that left is done before its episode ends and the hub logs it)
            paid = [episode[a] for episode in log if a in episode]
            count = min(len(returns), len(paid))
            assert count >= 1 and len(returns) - count <= 1, (i, a)
            assert returns[:count] == pytest.approx(paid[:count], abs=1e-5), (i, a)
        assert len(log) >= 2, i
