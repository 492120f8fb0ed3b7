"""The array face's expected rows, built from a plain replay of ``marlhub.make(id)``.

:class:`PlainReplay` holds one plain env per copy (copy ``i`` seeded ``seed + i``),
plays seeded random legal actions chosen from the plain envs' own observations,
and says what every row of the array face must hold, from the plain dicts and
the rules the :class:`~marlhub.vector.faces.arrays.ArrayBatch` docstring states, written
here from scratch: no code of the vector layer is used to build them. Tests of
a face step the face with :meth:`PlainReplay.action_arrays` and compare what it
returns with :meth:`PlainReplay.expect` (``assert_rows``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

import marlhub
from marlhub.spaces import ActionSampler, find_action_mask

ALL = "__all__"


class PlainReplay:
    """``num_envs`` plain envs stepped as the vector env's copies should be (see the module).

    Args:
        env_id: the registry id.
        num_envs: how many copies.
        mode: the autoreset mode.
        groups: the array face's groups (group name -> agents), from the env under test.
        seed: copy ``i`` is reset with ``seed + i``.
    """

    def __init__(self, env_id: str, num_envs: int, mode: str,
                 groups: Mapping[str, Sequence[Any]], seed: int = 0) -> None:
        self.envs = [marlhub.make(env_id) for _ in range(num_envs)]
        self.mode = mode
        self.groups = {name: list(agents) for name, agents in groups.items()}
        self.slot = {a: (name, j) for name, agents in self.groups.items()
                     for j, a in enumerate(agents)}
        self.sampler = ActionSampler(seed)
        self.obs: list[dict[Any, Any]] = [{} for _ in range(num_envs)]
        self.infos: list[dict[Any, Any]] = [{} for _ in range(num_envs)]
        self.actors: list[list[Any]] = [[] for _ in range(num_envs)]
        self.alive: list[set[Any]] = [set() for _ in range(num_envs)]
        self.ended = [False] * num_envs
        self.rows: list[dict[str, Any]] = [{} for _ in range(num_envs)]
        self.seed = seed

    # -- what the plain envs do -----------------------------------------------------

    def reset(self, copies: Optional[Sequence[int]] = None, seeded: bool = True) -> None:
        """Reset the copies (all by default), seeded ``seed + i`` or not at all."""
        for i in range(len(self.envs)) if copies is None else copies:
            obs, infos = self.envs[i].reset(seed=self.seed + i if seeded else None)
            self._restart(i, obs, infos)

    def masked_reset(self, copies: Sequence[int]) -> None:
        """A ``reset_mask`` reset of ``copies`` (unseeded); the others show their actors'
        last observations, no rewards and no flags, and go on."""
        for i in range(len(self.envs)):
            if i not in copies:
                actors = self.actors[i]
                self.rows[i] = {"rewards": {}, "terminated": set(), "truncated": set(),
                                "episode": (False, False),
                                "obs": {a: self.obs[i][a] for a in actors if a in self.obs[i]},
                                "acting": set(actors), "alive": set(self.alive[i]),
                                "final_obs": None}
        self.reset(copies, seeded=False)

    def _restart(self, i: int, obs: dict[Any, Any], infos: dict[Any, Any],
                 final: Optional[dict[Any, Any]] = None,
                 step_rows: Optional[dict[str, Any]] = None) -> None:
        self.obs[i], self.infos[i] = obs, infos
        self.actors[i] = list(obs)
        self.alive[i] = set(obs)
        self.ended[i] = False
        rows = step_rows or {"rewards": {}, "terminated": set(), "truncated": set(),
                             "episode": (False, False)}
        self.rows[i] = {**rows, "obs": obs, "acting": set(obs), "alive": set(obs),
                        "final_obs": final}

    def choose(self, copies: Sequence[int]) -> list[dict[Any, Any]]:
        """Random legal actions of the copies' actors, from the plain envs' obs and infos."""
        chosen = []
        for i in copies:
            env, obs, infos = self.envs[i], self.obs[i], self.infos[i]
            chosen.append({a: self.sampler.sample(
                a, env.get_action_space(a),
                find_action_mask(obs.get(a), infos.get(a) if isinstance(infos, dict) else None))
                for a in self.actors[i]})
        return chosen

    def step(self, copies: Sequence[int], actions: Sequence[dict[Any, Any]]) -> None:
        """Step the copies with their action dicts, by the autoreset mode."""
        for i, action_dict in zip(copies, actions):
            if self.ended[i]:
                if self.mode == "next_step":
                    obs, infos = self.envs[i].reset()
                    self._restart(i, obs, infos)
                else:  # disabled: it stays ended, its rows empty
                    self.rows[i] = {"rewards": {}, "terminated": set(), "truncated": set(),
                                    "episode": (False, False), "obs": {}, "acting": set(),
                                    "alive": set(), "final_obs": None}
                continue
            self._step_one(i, action_dict)

    def _step_one(self, i: int, action_dict: dict[Any, Any]) -> None:
        obs, rewards, terminateds, truncateds, infos = self.envs[i].step(action_dict)
        all_t, all_u = bool(terminateds[ALL]), bool(truncateds[ALL])
        done = {a for a, v in [*terminateds.items(), *truncateds.items()] if a != ALL and v}
        seen = self.alive[i] | set(obs)  # alive when the step ended
        term = {a for a, v in terminateds.items() if a != ALL and v}
        trunc = {a for a, v in truncateds.items() if a != ALL and v}
        if all_t:
            term |= seen
        if all_u:
            trunc |= seen
        rows = {"rewards": dict(rewards), "terminated": term, "truncated": trunc,
                "episode": (all_t, all_u)}
        if not (all_t or all_u):
            self.obs[i], self.infos[i] = obs, infos
            self.actors[i] = [a for a in obs if a not in done]
            self.alive[i] = seen - done
            self.rows[i] = {**rows, "obs": obs, "acting": set(self.actors[i]),
                            "alive": set(self.alive[i]), "final_obs": None}
        elif self.mode == "same_step":
            reset_obs, reset_infos = self.envs[i].reset()
            self._restart(i, reset_obs, reset_infos, final=obs, step_rows=rows)
        else:
            self.obs[i], self.infos[i] = obs, infos
            self.actors[i], self.alive[i], self.ended[i] = [], set(), True
            self.rows[i] = {**rows, "obs": obs, "acting": set(), "alive": set(),
                            "final_obs": None}

    # -- the face's side ----------------------------------------------------------------

    def action_arrays(self, copies: Sequence[int], actions: Sequence[dict[Any, Any]],
                      blank: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The action dicts as one array per group, one row per copy of ``copies`` (the
        rows of ``blank``, one group's zero action per slot, where nobody acts)."""
        arrays = {name: np.repeat(value[None], len(copies), axis=0)
                  for name, value in blank.items()}
        for k, action_dict in enumerate(actions):
            for agent, action in action_dict.items():
                name, j = self.slot[agent]
                arrays[name][k, j] = action
        return arrays

    def assert_rows(self, batch: Any, copies: Sequence[int], where: str,
                    flags: bool = True) -> None:
        """Assert that row ``k`` of ``batch`` is what copy ``copies[k]`` must show now
        (``flags``: its rewards and done flags too; a face without episode flags or final
        observations has them None or lacks them)."""
        for k, i in enumerate(copies):
            expected = self.rows[i]
            at = f"{where}, copy {i}"
            if flags and batch.episode_terminated is not None:
                assert (bool(batch.episode_terminated[k]), bool(batch.episode_truncated[k])) \
                    == expected["episode"], at
            for name, agents in self.groups.items():
                for j, agent in enumerate(agents):
                    here = f"{at}, {agent!r}"
                    assert bool(batch.acting[name][k, j]) == (agent in expected["acting"]), here
                    assert bool(batch.alive[name][k, j]) == (agent in expected["alive"]), here
                    if flags:
                        assert bool(batch.terminated[name][k, j]) == \
                            (agent in expected["terminated"]), f"{here}: terminated"
                        assert bool(batch.truncated[name][k, j]) == \
                            (agent in expected["truncated"]), f"{here}: truncated"
                        paid = np.asarray(batch.rewards[name][k, j])  # an array: objectives
                        want = expected["rewards"].get(agent)
                        np.testing.assert_array_equal(
                            paid, np.zeros_like(paid) if want is None else np.asarray(want),
                            err_msg=f"{here}: reward")
                    _assert_slot(batch.obs[name], k, j, expected["obs"].get(agent), here)
                    final = expected["final_obs"]
                    if final is not None and hasattr(batch, "final_obs"):
                        assert batch.final_obs is not None, f"{here}: no final_obs"
                        _assert_slot(batch.final_obs[name], k, j, final.get(agent),
                                     f"{here}: final_obs")
                    if agent in expected["acting"] and name in batch.action_mask:
                        mask = find_action_mask(self.obs[i].get(agent),
                                                self.infos[i].get(agent))
                        if mask is not None:
                            np.testing.assert_array_equal(batch.action_mask[name][k, j], mask,
                                                          err_msg=f"{here}: mask")


def _assert_slot(rows: Any, k: int, j: int, value: Any, where: str) -> None:
    """Slot ``(k, j)`` of a group's observations holds ``value`` (zeros for None)."""
    if isinstance(rows, dict):
        for key, array in rows.items():
            _assert_slot(array, k, j, None if value is None else value[key], f"{where}[{key!r}]")
        return
    got = np.asarray(rows[k, j])
    want = np.zeros_like(got) if value is None else np.asarray(value)
    np.testing.assert_array_equal(got, want, err_msg=where)
