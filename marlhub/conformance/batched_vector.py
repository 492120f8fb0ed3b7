"""What ``marlhub check ID --vector N`` proves of a natively batched simulator.

A batched simulator (``make_vec("vmas/balance", N)``: ONE VMAS env of ``N``
copies) draws every copy from one generator, so copy ``i`` cannot equal a
separate env seeded ``seed + i``. What holds, and is checked here:

* **one copy is the hub env**: a batch of one, reset with ``seed``, equals the
  separately made hub env reset with ``seed``, step for step, under each
  autoreset mode's rule (the copy-by-copy comparison of
  :mod:`marlhub.conformance.vector_copies`, with the batch as the vector env);
* **the batch is reproducible and its faces agree**: two batches of ``N`` reset
  with ``seed``, one driven through the dict face and one through the array
  face with the same random actions, return the same observations, rewards,
  end flags and actors in every copy, under each autoreset mode;
* **the batch is the native simulator's batch**, where the family can step one
  (``batched_lockstep``: VMAS): the same seed and actions, copies that end at
  different times reset by the simulator's own partial reset, give the same
  observations, rewards and ends in every copy (``equiv.trajectory``);
* **recv/send with** ``batch_size < num_envs`` hands each copy what ``reset``/``step``
  of a twin batch give it (:mod:`marlhub.conformance.batched_cycle`).

The first difference is a :data:`~marlhub.contract.rules.VECTOR_EQUIV` finding.

Example:
    >>> findings, steps, episodes = check_batched("vmas/balance", 2, episodes=1,
    ...                                           config={"max_steps": 5})
    >>> findings, episodes > 0
    ([], True)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from marlhub.conformance.batched_cycle import check_batched_cycle
from marlhub.conformance.report import Finding
from marlhub.conformance.vector_copies import compare_copies
from marlhub.contract.compare import why_different
from marlhub.contract.rules import ENV_RAISED, VECTOR_EQUIV
from marlhub.core import ALL
from marlhub.registry.vector import make_vec
from marlhub.spaces import ActionSampler

__all__ = ["check_batched"]


def check_batched(env_id: str, num_envs: int, *, seed: int = 0, episodes: int = 2,
                  max_steps: int = 1000, autoreset_modes: Sequence[str] = (),
                  config: Optional[Mapping[str, Any]] = None) -> tuple[list[Finding], int, int]:
    """Check the batched vector env of ``env_id`` (see the module).

    Returns:
        ``(findings, vector steps, finished episodes)``.
    """
    from marlhub.vector import AUTORESET_MODES

    findings: list[Finding] = []
    steps = finished = 0
    for amode in autoreset_modes or AUTORESET_MODES:
        try:
            found, n_steps, n_done = compare_copies(
                functools.partial(make_vec, env_id, 1, config, vectorization_mode="batched",
                                  autoreset_mode=amode),
                [lambda: _one(env_id, config)], f"batched/{amode}", amode, seed, episodes,
                max_steps)
        except Exception as exc:
            found, n_steps, n_done = [_raised(f"batched/{amode}", "making the batch of one",
                                              exc)], 0, 0
        findings += found
        steps, finished = steps + n_steps, finished + n_done
        faces = _Faces(env_id, num_envs, amode, seed, config)
        try:
            findings += faces.play(episodes, max_steps)
        finally:
            faces.close()
        steps, finished = steps + faces.steps, finished + faces.finished
        if num_envs > 1:  # recv/send with batch_size < num_envs: the copies step together
            found, n_steps = check_batched_cycle(env_id, num_envs, amode, seed=seed,
                                                 max_steps=min(max_steps, faces.steps + 4),
                                                 config=config)
            findings += found
            steps += n_steps
    findings += _against_native(env_id, num_envs, seed, max_steps, config)
    return findings, steps, finished


def _against_native(env_id: str, num_envs: int, seed: int, max_steps: int,
                    config: Optional[Mapping[str, Any]]) -> list[Finding]:
    """The family's lockstep of the batch with the native simulator's batch, if it has one."""
    from marlhub.registry import default_registry
    from marlhub.registry.vector import RegistryEnvFn

    prefix, _, rest = env_id.partition("/")
    lockstep = getattr(default_registry().families.get(prefix), "batched_lockstep", None)
    if not callable(lockstep):
        return []
    try:
        envs = make_vec(env_id, num_envs, config, vectorization_mode="batched")
    except Exception as exc:
        return [_raised("batched (against the native batch)", "making the batch", exc)]
    try:
        found: list[Finding] = lockstep(rest, RegistryEnvFn(env_id, config).context(), envs,
                                        seed=seed, steps=min(max_steps, 40))
        return found
    except Exception as exc:
        return [_raised("batched (against the native batch)", "the lockstep", exc)]
    finally:
        envs.close()


def _one(env_id: str, config: Optional[Mapping[str, Any]]) -> Any:
    from marlhub.registry import make

    return make(env_id, config)


def _raised(mode: str, where: str, exc: Exception) -> Finding:
    return Finding(ENV_RAISED, "error", f"{mode}: {where} raised {type(exc).__name__}: {exc}")


class _Faces:
    """Two batches of ``num_envs``: one stepped with dicts, one with arrays."""

    def __init__(self, env_id: str, num_envs: int, amode: str, seed: int,
                 config: Optional[Mapping[str, Any]]) -> None:
        self.mode = f"batched/{amode} (dict face vs array face, {num_envs} copies)"
        self.seed = seed
        self.steps = self.finished = 0
        self.dicts: Any = None
        self.arrays: Any = None
        self.dicts = make_vec(env_id, num_envs, config, vectorization_mode="batched",
                              autoreset_mode=amode)
        self.arrays = make_vec(env_id, num_envs, config, vectorization_mode="batched",
                               autoreset_mode=amode)
        self.sampler = ActionSampler(seed)

    def play(self, episodes: int, max_steps: int) -> list[Finding]:
        try:
            obs, _ = self.dicts.reset(seed=self.seed)
            batch = self.arrays.reset_arrays(seed=self.seed)
        except Exception as exc:
            return [_raised(self.mode, "reset", exc)]
        found = self._compare("reset", obs, None, None, batch)
        while not found and self.steps < max_steps and self.finished < episodes * \
                self.arrays.num_envs:
            actions = self._sample(batch)
            per_copy = [{a: actions[g][i, j] for g, members in self.arrays.groups.items()
                         for j, a in enumerate(members) if a in self.dicts.actors[i]}
                        for i in range(self.arrays.num_envs)]
            self.steps += 1
            try:
                obs, rewards, terminateds, truncateds, _ = self.dicts.step(per_copy)
                batch = self.arrays.step_arrays(actions)
            except Exception as exc:
                return [_raised(self.mode, f"step {self.steps}", exc)]
            self.finished += int((batch.episode_terminated | batch.episode_truncated).sum())
            found = self._compare(f"step {self.steps}", obs, rewards, (terminateds, truncateds),
                                  batch)
            ended = np.array(self.dicts._book.ended, dtype=bool)
            if not found and 2 * ended.sum() >= len(ended):  # disabled: restart the ended copies
                try:
                    obs, _ = self.dicts.reset(options={"reset_mask": ended})
                    batch = self.arrays.reset_arrays(options={"reset_mask": ended})
                except Exception as exc:
                    return [_raised(self.mode, "a reset with reset_mask", exc)]
                found = self._compare("a reset with reset_mask", obs, None, None, batch)
        return found

    def _sample(self, batch: Any) -> dict[str, Any]:
        actions = {}
        for name, members in self.arrays.groups.items():
            space = self.arrays.single_action_spaces[members[0]]
            blank = self.arrays._actions.blank(name)
            masks = batch.action_mask.get(name)
            for i in range(self.arrays.num_envs):
                for j in range(len(members)):
                    mask = None if masks is None else np.asarray(masks[i, j], np.int8)
                    blank[i, j] = self.sampler.sample(members[j], space, mask)
            actions[name] = blank
        return actions

    def _compare(self, where: str, obs: Sequence[Any], rewards: Any, flags: Any,
                 batch: Any) -> list[Finding]:
        groups = self.arrays.groups
        for i in range(self.arrays.num_envs):
            acting = {a for g, members in groups.items() for j, a in enumerate(members)
                      if batch.acting[g][i, j]}
            checks: list[tuple[str, Any, Any]] = [("actors", sorted(map(str, self.dicts.actors[i])), sorted(map(str, acting)))]
            for g, members in groups.items():
                for j, agent in enumerate(members):
                    if agent in obs[i]:
                        checks.append((f"obs of {agent!r}", obs[i][agent], _row(batch.obs[g], i, j)))
                    if rewards is not None and agent in rewards[i]:
                        checks.append((f"reward of {agent!r}", rewards[i][agent],
                                       float(batch.rewards[g][i, j])))
            if flags is not None and rewards[i]:
                checks.append(("__all__ flags", (flags[0][i][ALL], flags[1][i][ALL]),
                               (bool(batch.episode_terminated[i]),
                                bool(batch.episode_truncated[i]))))
            for what, got, want in checks:
                reason = why_different(got, want)
                if reason is not None:
                    return [Finding(
                        VECTOR_EQUIV, "error",
                        f"{self.mode}: copy {i}'s {what} at {where} differ ({reason}; dict face "
                        f"vs array face). Two batches reset with seed {self.seed} and given the "
                        "same actions must agree in every copy, whichever face steps them.",
                        step=self.steps)]
        return []

    def close(self) -> None:
        for env in (self.dicts, self.arrays):
            if env is not None:
                env.close()


def _row(value: Any, i: int, j: int) -> Any:
    if isinstance(value, dict):
        return {k: _row(v, i, j) for k, v in value.items()}
    return value[i, j]
