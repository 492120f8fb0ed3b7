"""One vector env beside its copies as separate envs: :func:`compare_copies`, the oracle.

A vector env of ``n`` copies, reset with ``seed``, and ``n`` separate envs from the
same env_fns, copy ``i`` reset with ``seed + i``, are sent the same seeded random
legal actions. What each copy of the vector env returns must equal what its
separate env returns under the autoreset mode's rule (:mod:`marlhub.vector.copies`),
written out here once more as the oracle:

* ``next_step``: after an end, the next call is the separate env's ``reset()``
  with ``{}`` rewards and ``{"__all__": False}`` done dicts;
* ``same_step``: the ending step's rewards and done dicts, the ``reset()``
  obs, and the reset infos with the final obs and infos under ``"__common__"``;
* ``disabled``: an ended copy returns ``{}`` and its final ``__all__`` flags
  until ``reset(options={"reset_mask": mask})`` resets it (the comparison resets the
  ended copies once half of them have ended, so others run meanwhile).

The first difference is a :data:`~marlhub.contract.rules.VECTOR_EQUIV` finding;
anything raised is an ``env.raised`` finding. :func:`~marlhub.conformance.vector.check_vector`
runs it in every mode pair, and :mod:`~marlhub.conformance.batched_vector` with a
batched simulator's batch of one as the vector env.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> from marlhub.vector import SyncVectorMultiAgentEnv
    >>> env_fns = [RockPaperScissors] * 2
    >>> findings, steps, episodes = compare_copies(
    ...     lambda: SyncVectorMultiAgentEnv(env_fns), env_fns, "sync/next_step", "next_step",
    ...     seed=0, episodes=1, max_steps=100)
    >>> findings, episodes >= 2
    ([], True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

import numpy as np

from marlhub.conformance.report import Finding
from marlhub.contract.compare import why_different
from marlhub.contract.rules import ENV_RAISED, VECTOR_EQUIV, VECTOR_RESET_INFOS
from marlhub.core import ALL
from marlhub.episode.play import action_space_getter, random_actions
from marlhub.episode.status import actors_of, episode_over, flag
from marlhub.spaces import ActionSampler
from marlhub.vector.autoreset import DISABLED, NEXT_STEP, SAME_STEP
from marlhub.vector.copies import same_step_infos

__all__ = ["compare_copies"]

_FIELDS = ("obs", "rewards", "terminateds", "truncateds", "infos")


def compare_copies(make_vector: Callable[[], Any], env_fns: Sequence[Callable[[], Any]],
                   mode: str, amode: str, seed: int, episodes: int,
                   max_steps: int, recv_send: bool = False) -> tuple[list[Finding], int, int]:
    """Step ``make_vector()`` beside one separate env per copy, made by ``env_fns``.

    ``recv_send``: drive the vector env with ``async_reset``, ``recv`` and ``send`` (each
    copy answered as soon as ``recv`` hands it out) instead of ``reset`` and ``step``.

    Returns:
        ``(findings, vector steps, finished episodes)``; a vector env that cannot be
        made is an ``env.raised`` finding.
    """
    try:
        comparison = _Comparison(make_vector, env_fns, mode, amode, seed)
    except Exception as exc:
        return [Finding(ENV_RAISED, "error", f"{mode}: making the vector env and its separate "
                        f"twins raised {type(exc).__name__}: {exc}")], 0, 0
    try:
        found = (comparison.play_ready if recv_send else comparison.play)(episodes, max_steps)
    finally:
        comparison.close()
    return found, comparison.steps, sum(comparison.finished)


class _Comparison:
    """One vector env and its separate twins, stepped together."""

    def __init__(self, make_vector: Callable[[], Any], env_fns: Sequence[Callable[[], Any]],
                 mode: str, amode: str, seed: int) -> None:
        self.mode = mode
        self.amode = amode
        self.seed = seed
        self.n = len(env_fns)
        self.steps = 0
        self.finished = [0] * self.n
        self.ended = [False] * self.n
        self.flags = [(False, False)] * self.n
        self.just_reset = [False] * self.n
        self.reset_infos: Optional[Finding] = None
        self.serial: list[Any] = []
        self.vector: Any = None
        self.vector = make_vector()
        try:
            # A batched simulator compiled apart from one copy may round its floats otherwise.
            self.tol = float(getattr(getattr(self.vector, "source", None), "tolerance", 0.0))
            for fn in env_fns:
                self.serial.append(fn())
            self.samplers = [ActionSampler(seed + i) for i in range(self.n)]
            self.space_of = [action_space_getter(env) for env in self.serial]
        except BaseException:  # a twin that cannot be made, or the time limit: no workers left
            self.close()
            raise

    def play(self, episodes: int, max_steps: int) -> list[Finding]:
        """Play until every copy finished ``episodes`` episodes or ``max_steps`` steps pass."""
        try:
            got = self.vector.reset(seed=self.seed)
        except Exception as exc:
            return [self._raised("the vector env", "reset", exc)]
        want = [self.serial[i].reset(seed=self.seed + i, options=None) for i in range(self.n)]
        found = self._compare("reset", got, want, ("obs", "infos"))
        current = [(w[0], w[1], [*w[0]]) for w in want]  # obs, infos, actors
        while not found and self.steps < max_steps and min(self.finished) < episodes:
            actions = [{} if self.ended[i] else random_actions(
                current[i][2], current[i][0], current[i][1], self.space_of[i], self.samplers[i])
                for i in range(self.n)]
            self.steps += 1
            try:
                got_step = self.vector.step(actions)
            except Exception as exc:
                return [self._raised("the vector env", f"step {self.steps}", exc)]
            want_step = [self._expected_step(i, actions[i]) for i in range(self.n)]
            found = self._compare(f"step {self.steps}", got_step, want_step, _FIELDS)
            current = [(w[0], w[4], self._actors_after(w)) for w in want_step]
            if not found and self.amode == DISABLED and 2 * sum(self.ended) >= self.n:
                found, current = self._reset_ended(current)
        return found + ([self.reset_infos] if self.reset_infos is not None else [])

    def play_ready(self, episodes: int, max_steps: int) -> list[Finding]:
        """:meth:`play` through ``async_reset``, ``recv`` and ``send``: every copy ``recv``
        returns must be its separate env's; under ``disabled`` the ended copies are restarted
        by ``async_reset`` with a ``reset_mask`` once half of them have ended."""
        where = "async_reset"
        try:
            self.vector.async_reset(seed=self.seed)
        except Exception as exc:
            return [self._raised("the vector env", where, exc)]
        want: dict[int, tuple[Any, ...]] = {}
        try:
            for i in range(self.n):
                obs, infos = self.serial[i].reset(seed=self.seed + i, options=None)
                want[i] = (obs, {}, {ALL: False}, {ALL: False}, infos)
        except Exception as exc:
            return [self._raised("a separately made env", "reset", exc)]
        parked: set[int] = set()
        while self.steps < max_steps and min(self.finished) < episodes:
            try:
                got = self.vector.recv()
            except Exception as exc:
                return [self._raised("the vector env", f"recv {self.steps + 1}", exc)]
            self.steps += 1
            rows = [int(i) for i in got.copy_ids]
            found = self._compare_rows(f"recv {self.steps}", got, rows, want)
            if found:
                return found + ([self.reset_infos] if self.reset_infos is not None else [])
            sent, actions = [], []
            for i in rows:
                obs, infos, actors = want[i][0], want[i][4], self._actors_after(want[i])
                if self.amode == DISABLED and self.ended[i]:
                    parked.add(i)
                    continue
                action = {} if self.ended[i] else random_actions(
                    actors, obs, infos, self.space_of[i], self.samplers[i])
                sent.append(i)
                actions.append(action)
                want[i] = self._expected_step(i, action)
            if parked and 2 * len(parked) >= self.n or len(parked) == self.n:
                mask = np.zeros(self.n, dtype=bool)
                mask[sorted(parked)] = True
                where = f"async_reset with reset_mask after recv {self.steps}"
                try:
                    self.vector.async_reset(options={"reset_mask": mask})
                except Exception as exc:
                    return [self._raised("the vector env", where, exc)]
                for i in parked:
                    self.ended[i] = False
                    obs, infos = self.serial[i].reset(seed=None, options=None)
                    want[i] = (obs, {}, {ALL: False}, {ALL: False}, infos)
                parked = set()
            try:
                self.vector.send(actions, np.asarray(sent, dtype=np.int64))
            except Exception as exc:
                return [self._raised("the vector env", f"send {self.steps}", exc)]
        return [self.reset_infos] if self.reset_infos is not None else []

    def _compare_rows(self, where: str, got: Sequence[Any], rows: Sequence[int],
                      want: Mapping[int, tuple[Any, ...]]) -> list[Finding]:
        """:meth:`_compare` of the copies ``rows`` (``got`` holds them in that order)."""
        for k, i in enumerate(rows):
            for f, field in enumerate(_FIELDS):
                reason = why_different(got[f][k], want[i][f], tol=self.tol)
                if reason is not None:
                    return [self._differs(i, field, where, reason)]
        return []

    def _differs(self, i: int, field: str, where: str, reason: str) -> Finding:
        return Finding(
            VECTOR_EQUIV, "error",
            f"{self.mode}: copy {i}'s {field} at {where} differ from those of a separately "
            f"made env seeded {self.seed} + {i} given the same actions ({reason}; vector vs "
            "separate). Each copy must behave as its own env under the autoreset mode's rule.",
            step=self.steps)

    def _expected_step(self, i: int, action: Any) -> tuple[Any, ...]:
        env = self.serial[i]
        if self.ended[i]:
            if self.amode == NEXT_STEP:
                self.ended[i] = False
                self.just_reset[i] = True
                obs, infos = env.reset()
                return obs, {}, {ALL: False}, {ALL: False}, infos
            return {}, {}, {ALL: self.flags[i][0]}, {ALL: self.flags[i][1]}, {}
        self.just_reset[i] = False
        obs, rewards, terminateds, truncateds, infos = env.step(action)
        if episode_over(terminateds, truncateds):
            self.finished[i] += 1
            if self.amode == SAME_STEP:
                reset_obs, reset_infos = env.reset()
                return (reset_obs, rewards, terminateds, truncateds,
                        same_step_infos(obs, infos, reset_infos))
            self.ended[i] = True
            self.flags[i] = (flag(terminateds, ALL), flag(truncateds, ALL))
        return obs, rewards, terminateds, truncateds, infos

    def _actors_after(self, result: tuple[Any, ...]) -> list[Any]:
        obs, _, terminateds, truncateds, _ = result
        if self.amode == SAME_STEP and episode_over(terminateds, truncateds):
            return list(obs)  # already the reset obs
        return actors_of(obs, terminateds, truncateds)

    def _reset_ended(self, current: list[Any]) -> tuple[list[Finding], list[Any]]:
        mask = np.array(self.ended, dtype=bool)
        try:
            got = self.vector.reset(options={"reset_mask": mask})
        except Exception as exc:
            return [self._raised("the vector env", "a reset with reset_mask", exc)], current
        want = []
        for i in range(self.n):
            if mask[i]:
                self.ended[i] = False
                want.append(self.serial[i].reset(seed=None, options=None))
            else:
                obs, infos, actors = current[i]
                want.append(({a: obs[a] for a in actors if a in obs},
                             {a: infos[a] for a in actors if a in infos}))
        found = self._compare("a reset with reset_mask", got, want, ("obs", "infos"))
        return found, [(w[0], w[1], list(w[0])) for w in want]

    def _compare(self, where: str, got: Sequence[Any], want: list[tuple[Any, ...]],
                 fields: Sequence[str]) -> list[Finding]:
        for i in range(self.n):
            for k, field in enumerate(fields):
                reason = why_different(got[k][i], want[i][k], tol=self.tol)
                if reason is not None and field == "infos" and self.just_reset[i]:
                    if self.reset_infos is None:  # noted once; the comparison goes on
                        self.reset_infos = Finding(
                            VECTOR_RESET_INFOS, "error",
                            f"{self.mode}: copy {i}'s infos at {where}, where the vector env "
                            f"reset it, differ from those of the separate env's reset() "
                            f"({reason}; vector vs separate).", step=self.steps)
                    continue
                if reason is not None:
                    return [self._differs(i, field, where, reason)]
        return []

    def _raised(self, who: str, where: str, exc: Exception) -> Finding:
        return Finding(ENV_RAISED, "error",
                       f"{self.mode}: {who} raised {type(exc).__name__} at {where}: {exc}",
                       step=self.steps)

    def close(self) -> None:
        for env in [self.vector, *self.serial]:
            try:
                if env is not None:
                    env.close()
            except Exception:  # closing is best effort here
                pass
