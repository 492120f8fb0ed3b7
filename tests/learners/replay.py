"""The expected agent slots of a vector env, built from a plain replay of ``marlhub.make(id)``.

Plain envs (copy ``i`` reset with ``seed + i``, reset unseeded when its episode ends) and
the rules :mod:`marlhub.learners.slots` states: no code of ``marlhub.learners`` or of the
vector layer builds them. The SB3 and PufferLib tests compare what their bridges return
with :class:`SlotReplay`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np

import marlhub
from marlhub.spaces import find_action_mask

ALL = "__all__"


class SlotReplay:
    """Plain envs stepped as the slots' copies, and what every slot must show."""

    def __init__(self, env_id: str, num_envs: int, agents: Sequence[Any], one_space: bool,
                 seed: int, config: Optional[dict[str, Any]] = None,
                 seeds: Optional[Sequence[int]] = None,
                 others: Optional[dict[Any, Any]] = None) -> None:
        self.envs = [marlhub.make(env_id, config) for _ in range(num_envs)]
        self.agents = list(agents)
        first = self.envs[0]
        self.obs_space = {a: first.get_observation_space(a) for a in self.agents}
        self.act_space = {a: first.get_action_space(a) for a in self.agents}
        self.one_space = one_space
        kinds: dict[Any, int] = {}
        for a in self.agents:
            key = (repr(self.obs_space[a]), repr(self.act_space[a]))
            kinds.setdefault(key, len(kinds))
        self.kind = {a: kinds[(repr(self.obs_space[a]), repr(self.act_space[a]))]
                     for a in self.agents}
        self.kinds = len(kinds) if len(kinds) > 1 else 0
        self.size = max(gym.spaces.flatdim(without_mask(s, None)[0])
                        for s in self.obs_space.values())
        self.rng = np.random.default_rng(seed)
        # agent -> its action, for the agents without a slot (a group's learner's others)
        self.others = dict(others or {})
        # the first reset's seed of each copy (``seed + i`` unless given)
        self.seeds = list(seeds) if seeds is not None else [seed + i for i in range(num_envs)]
        n = num_envs
        self.obs: list[dict[Any, Any]] = [{} for _ in range(n)]
        self.infos: list[dict[Any, Any]] = [{} for _ in range(n)]
        self.last: list[dict[Any, Any]] = [{} for _ in range(n)]
        self.alive: list[set[Any]] = [set() for _ in range(n)]
        self.returns: list[dict[Any, float]] = [{} for _ in range(n)]
        self.episodes: list[tuple[int, float]] = []  # (slot, return) of each agent episode
        self.expected: dict[str, Any] = {}
        self.expected_rewards = np.zeros(num_envs * len(self.agents))

    # -- the plain envs ---------------------------------------------------------------

    def reset(self) -> None:
        for i, env in enumerate(self.envs):
            self._start(i, *env.reset(seed=self.seeds[i]))
        self.expected = self._slots(set(), {}, {})

    def _start(self, i: int, obs: dict[Any, Any], infos: dict[Any, Any]) -> None:
        self.obs[i], self.infos[i] = obs, infos
        self.alive[i] = set(obs)
        self.last[i] = dict(obs)
        self.returns[i] = {}

    def actors(self, i: int) -> list[Any]:
        return [a for a in self.obs[i] if a in self.alive[i]]

    def slot_actions(self) -> np.ndarray:
        """Random legal actions of the acting slots; junk in the others (to be ignored)."""
        rows = []
        for i in range(len(self.envs)):
            for a in self.agents:
                space = self.act_space[a]
                if a in self.actors(i):
                    mask = find_action_mask(self.obs[i][a], self.infos[i].get(a))
                    if mask is not None:
                        rows.append(int(self.rng.choice(np.flatnonzero(mask))))
                    else:
                        rows.append(space.sample())
                else:  # ignored: any value of the padded space
                    rows.append(int(self.rng.integers(0, self.junk)) if self.junk else
                                space.sample())
        return np.asarray(rows)

    @property
    def junk(self) -> int:
        spaces = list(self.act_space.values())
        if all(isinstance(s, gym.spaces.Discrete) for s in spaces):
            return max(int(s.n) for s in spaces)  # type: ignore[attr-defined]
        return 0

    def step(self, slot_actions: np.ndarray) -> None:
        per_copy = len(self.agents)
        self.expected_rewards = np.zeros(len(self.envs) * per_copy)
        done_slots: set[int] = set()
        finals: dict[int, Any] = {}
        truncated_slots: set[int] = set()
        for i, env in enumerate(self.envs):
            actors = self.actors(i)
            actions = {a: slot_actions[i * per_copy + self.agents.index(a)]
                       if a in self.agents else self.others[a] for a in actors}
            obs, rewards, terms, truncs, infos = env.step(actions)
            for a, r in rewards.items():
                if a not in self.agents:
                    continue
                self.returns[i][a] = self.returns[i].get(a, 0.0) + float(r)
                self.expected_rewards[i * per_copy + self.agents.index(a)] = float(r)
            ended = bool(terms.get(ALL)) or bool(truncs.get(ALL))
            seen = self.alive[i] | set(obs)
            for a in self.agents:
                k = i * per_copy + self.agents.index(a)
                gone = bool(terms.get(a)) or bool(truncs.get(a))
                if a in seen and (gone or ended):
                    done_slots.add(k)
                    terminated = bool(terms.get(a)) or (ended and bool(terms.get(ALL)))
                    truncated = bool(truncs.get(a)) or (ended and bool(truncs.get(ALL)))
                    if truncated and not terminated:
                        truncated_slots.add(k)
                    if a in obs:
                        finals[k] = obs[a]
                    self.episodes.append((k, self.returns[i].pop(a, 0.0)))
            self.obs[i], self.infos[i] = obs, infos
            self.alive[i] = {a for a in seen if not (terms.get(a) or truncs.get(a))}
            self.last[i].update(obs)
            if ended:
                self._start(i, *env.reset())
        self.expected = self._slots(done_slots, finals, {k: k in truncated_slots
                                                         for k in done_slots})

    def _slots(self, done: set[int], finals: dict[int, Any], truncated: dict[int, bool]
               ) -> dict[str, Any]:
        rows, acting, alive = [], [], []
        for i in range(len(self.envs)):
            for a in self.agents:
                if a in self.alive[i]:
                    rows.append(self._shown(a, self.last[i][a]))
                else:
                    rows.append(self._shown(a, None))
                acting.append(a in self.actors(i))
                alive.append(a in self.alive[i])
        return {"obs": rows, "acting": acting, "alive": alive, "done": done,
                "finals": {k: self._shown(self.agents[k % len(self.agents)], v)
                           for k, v in finals.items()}, "truncated": truncated}

    def _shown(self, agent: Any, obs: Any) -> Any:
        space, obs = without_mask(self.obs_space[agent], obs)
        if not self.one_space:
            return obs if obs is not None else None
        row = np.zeros(self.size + self.kinds, np.float32)
        if obs is not None:
            flat = gym.spaces.flatten(space, obs)
            row[:len(flat)] = flat
        if self.kinds:
            row[self.size + self.kind[agent]] = 1.0
        return row

    def masks(self, size: int) -> np.ndarray:
        out = []
        for i in range(len(self.envs)):
            for a in self.agents:
                row = np.zeros(size, bool)
                if a in self.actors(i):
                    mask = find_action_mask(self.obs[i][a], self.infos[i].get(a))
                    n = int(self.act_space[a].n)  # type: ignore[attr-defined]
                    row[:n] = True if mask is None else np.asarray(mask, bool)
                else:
                    row[0] = True
                out.append(row)
        return np.asarray(out)


def without_mask(space: gym.Space, obs: Any) -> tuple[gym.Space, Any]:
    """The observation space and observation without an action mask entry (the masks go
    apart), unwrapped where one entry is left."""
    if not isinstance(space, gym.spaces.Dict) or "action_mask" not in space.spaces:
        return space, obs
    rest = {k: s for k, s in space.items() if k != "action_mask"}
    if isinstance(obs, dict):
        obs = {k: v for k, v in obs.items() if k != "action_mask"}
    if len(rest) == 1:
        (key,) = rest
        return rest[key], obs[key] if isinstance(obs, dict) else obs
    return gym.spaces.Dict(rest), obs


def check_slots(replay: SlotReplay, obs: Any, rewards: Optional[np.ndarray],
                dones: Optional[np.ndarray], infos: Sequence[dict[str, Any]]) -> None:
    expected = replay.expected
    for k, row in enumerate(expected["obs"]):
        where = f"slot {k} ({replay.agents[k % len(replay.agents)]!r})"
        assert infos[k]["acting"] == expected["acting"][k], where
        assert infos[k]["alive"] == expected["alive"][k], where
        if row is not None:
            np.testing.assert_allclose(np.asarray(obs[k], np.float64),
                                       np.asarray(row, np.float64), err_msg=where)
        elif not replay.one_space:
            assert not np.any(obs[k]), where  # the empty observation
    if dones is None:
        return
    assert set(np.flatnonzero(dones)) == expected["done"]
    np.testing.assert_allclose(rewards, replay.expected_rewards)
    for k in expected["done"]:
        assert infos[k]["TimeLimit.truncated"] == expected["truncated"][k]
        if k in expected["finals"]:
            np.testing.assert_allclose(np.asarray(infos[k]["terminal_observation"], np.float64),
                                       np.asarray(expected["finals"][k], np.float64))
    for k in set(range(len(dones))) - expected["done"]:
        assert "terminal_observation" not in infos[k]
