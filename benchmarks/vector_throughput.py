"""Throughput of marlhub's vector envs: agent-steps/s against the number of copies.

Contestants, for each env and number of copies (1, 2, 4, 8 by default), run
interleaved in one process (round after round, in a rotating order), so
drifts of the machine's speed hit them alike:

* ``native``: one native env (PettingZoo's parallel pistonball), for reference;
* ``serial``: a plain loop over ``N`` hub envs (``marlhub.make``), each reset
  when its episode ends: the baseline of the sync vector env;
* ``sync``: ``marlhub.make_vec(id, N)`` (``next_step`` autoreset: the call after an
  episode's end resets the copy, so short episodes cost one call more);
* ``sync same_step``: the same with ``autoreset_mode="same_step"``, which resets
  in the ending call as the serial loop does;
* ``hand-rolled sync``: the ceiling of ``sync``, the same lists of dicts written by hand
  (:class:`HandRolledSync`): a loop over the ``N`` hub envs stepped inside
  ``actions_prechecked``, ``next_step`` autoreset, and nothing else: no check of the
  actions before the copies move, no copy book, no errors that name the copy;
* ``hand-rolled sync, checked``: the same loop with the one thing ``sync`` must do beyond
  it (:class:`HandRolledCheckedSync`): each copy's action dict checked before any copy
  moves (the actors' keys, each action in its space and mask), written by hand for the
  envs here with a bare ``ValueError``: the ceiling of ``sync`` doing the same work;
* ``async``: ``marlhub.make_vec(id, N, vectorization_mode="async")`` with
  ``min(N, --workers)`` worker processes;
* ``async copy=False``: the same returning views of the shared block instead of
  observations to keep (valid until the next call, as Gymnasium's
  ``AsyncVectorEnv(copy=False)``);
* ``async arrays``: the async env made with ``array_face=True``: its workers write each
  group's arrays (observations, rewards, done flags, ``acting``, masks) into shared memory
  and read the actions from it, one message per worker and call; the actions are drawn
  for all slots at once with numpy, as an array learner does;
* ``async recv/send``: the async env driven by ``recv()``/``send()`` with
  ``batch_size = N // 2``: the learner answers whichever copies are ready first
  (EnvPool's and PufferLib's way);
* ``hand-rolled arrays``: the ceiling of ``async arrays``, the same work written by hand
  with nothing of ``marlhub.vector`` in its calls (``benchmarks/hand_rolled_arrays.py``):
  workers step the hub envs and write observations, masks, rewards and who acts into
  shared arrays, one pipe message per worker and call, and the parent draws the actions
  from the masks (or uniformly from a ``Box``); no checks in the parent, no infos, no
  bookkeeping (envs with one group of ``Discrete`` or ``Box`` actions: Kuhn poker,
  tic-tac-toe and pistonball). On pistonball it is also the ceiling of a synchronous
  ``async``: the same lockstep calls, carrying the same observations to the parent;
* ``serial split``: the serial loop split over ``min(N, --workers)`` processes, each on
  its share of the copies, timed side by side (the sum of their rates): what the cores
  give with no vector env at all, the ceiling of any async vector env on the machine;
* ``supersuit``: SuperSuit's ``concat_vec_envs_v1`` over
  ``pettingzoo_env_to_vec_env_v1`` with ``min(N, --workers)`` processes (only
  PettingZoo parallel envs with one space for all agents and no deaths,
  i.e. pistonball here);
* ``rllib``: RLlib's own ``SyncVectorMultiAgentEnv`` over ``N`` copies made
  with ``marlhub.make(id, to="rllib")``.

The envs: pistonball (a step costs milliseconds), Kuhn poker and tic-tac-toe (a few
microseconds), and ``varied``, rock-paper-scissors whose step computes for 500 us in the
first half of the copies and 50 us in the second (a step time that varies tenfold between
copies; the async env's contiguous split puts the slow half on one worker), where
``async recv/send`` is compared with ``async``, the synchronous call.

PufferLib is not a contestant: its PyPI sdist downloads raylib while it builds, so it
cannot be installed on a machine that reaches only package registries (ours).

Every contestant picks the same kind of action for each actor (a random legal
one from the mask when there is one, a random int of a Discrete space, else
one fixed sample per agent) and counts one agent-step per action sent. Times
are wall-clock (worker processes work outside this process's CPU time); the
build of each vector env and its first reset are not timed. Printed per env:
the median agent-steps/s over the rounds and, in brackets, the median of the
per-round ratios to ``serial`` (and, for pistonball, a table of ratios to
``native``).

``--cpu-copies N`` also prints the CPU time per agent-step of the async env with
``N`` copies, its parent's and its workers' together, against the serial loop's: on
two cores, async can be at most ``2 * serial / async`` times as fast as serial.

``--memory-episodes E`` also plays ``E`` episodes in total with the sync and
the async vector env of kuhn_poker and traffic (the async one three ways: lists of dicts,
the array face, and recv/send with ``batch_size`` 2 of 4) and prints the resident memory
of this process and of the workers after the first tenth and at the end.

Usage::

    python benchmarks/vector_throughput.py                       # ~15 minutes
    python benchmarks/vector_throughput.py --envs kuhn_poker --copies 1 8 --rounds 3
    python benchmarks/vector_throughput.py --envs tic_tac_toe --contestants sync "async arrays"
    python benchmarks/vector_throughput.py --quick                # seconds, a smoke test
    python benchmarks/vector_throughput.py --json out.json        # also write the numbers
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple, Optional

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # hand_rolled_arrays, when imported

from hand_rolled_arrays import fits, run_hand_rolled  # noqa: E402

import marlhub  # noqa: E402
from marlhub.envs import RockPaperScissors  # noqa: E402
from marlhub.episode.prechecked import actions_prechecked  # noqa: E402
from marlhub.registry.vector import env_fns_for  # noqa: E402
from marlhub.spaces import raw_action_mask  # noqa: E402
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv  # noqa: E402
from marlhub.vector.sources.processes import split_copies  # noqa: E402


class EnvSpec(NamedTuple):
    """An env of the benchmark: its registry id and config, and what else can run it."""

    env_id: str
    config: Optional[dict[str, Any]]
    native: Optional[str] = None  # the PettingZoo id of the native parallel env
    supersuit: bool = False
    # copy i's env_fn, for envs made here rather than by the registry
    make: Optional[Callable[[int, int], Callable[[], Any]]] = None


class VariedCost(RockPaperScissors):
    """Rock-paper-scissors (10 moves) whose step also computes for ``cost`` seconds: the
    first half of the copies 10 times as long as the second (``varied``)."""

    def __init__(self, cost: float) -> None:
        super().__init__({"num_moves": 10})
        self.cost = cost

    def step(self, action_dict: Any) -> Any:
        until = time.perf_counter() + self.cost
        while time.perf_counter() < until:
            pass
        return super().step(action_dict)


def varied_cost(i: int, n: int) -> Callable[[], Any]:
    """Copy ``i`` of ``n``: 500 us a step in the first half, 50 us in the second."""
    return functools.partial(VariedCost, 500e-6 if i < n // 2 else 50e-6)


ENVS = {
    "pistonball": EnvSpec("pettingzoo/butterfly/pistonball-v6", {"api": "parallel"},
                          native="butterfly/pistonball-v6", supersuit=True),
    "kuhn_poker": EnvSpec("openspiel/kuhn_poker", None),
    "tic_tac_toe": EnvSpec("tic_tac_toe", None),
    "varied": EnvSpec("varied", None, make=varied_cost),
}
#: Envs measured unless --envs says otherwise (``varied`` is for --recv-send).
DEFAULT_ENVS = ["pistonball", "kuhn_poker", "tic_tac_toe"]


def env_fns(spec: EnvSpec, n: int) -> list[Callable[[], Any]]:
    """The env_fns of ``n`` copies of ``spec``."""
    if spec.make is not None:
        return [spec.make(i, n) for i in range(n)]
    return list(env_fns_for(spec.env_id, n, spec.config))
COPIES = [1, 2, 4, 8]


class Policy:
    """The same action rule for every contestant: cheap, seeded, legal."""

    def __init__(self, seed: int) -> None:
        self.numbers = np.random.default_rng(seed).integers(0, 1 << 30, 1 << 14).tolist()
        self.k = 0
        self.fixed: dict[Any, Any] = {}

    def number(self) -> int:
        self.k = (self.k + 1) & 0x3FFF
        return int(self.numbers[self.k])

    def act(self, agent: Any, obs: Any, info: Any, space: Any) -> Any:
        mask = raw_action_mask(obs, info)
        if mask is not None:
            legal = np.flatnonzero(mask)
            return int(legal[self.number() % legal.size])
        if hasattr(space, "n"):
            return int(space.start) + self.number() % int(space.n)
        if agent not in self.fixed:
            space.seed(self.number())
            self.fixed[agent] = space.sample()
        return self.fixed[agent]

    def actions(self, actors: list[Any], obs: Any, infos: Any,
                space_of: Callable[[Any], Any]) -> dict[Any, Any]:
        return {a: self.act(a, obs[a], infos.get(a), space_of(a)) for a in actors}


def next_actors(obs: Any, terminateds: Any, truncateds: Any) -> list[Any]:
    """The agents that act next, as a user's loop finds them."""
    return [a for a in obs if not (terminateds.get(a) or truncateds.get(a))]


def timed(seconds: float, step: Callable[[], int], warm_up: int = 20) -> float:
    """Call ``step`` (it returns the agent-steps it made) for ``seconds``; return agent-steps/s.

    The first ``warm_up`` calls are not timed (caches, lazily built checks).
    """
    for _ in range(warm_up):
        step()
    done, start = 0, time.perf_counter()
    while True:
        for _ in range(4):
            done += step()
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


# -- contestants -------------------------------------------------------------------------


def run_serial(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int, *,
               ready: Optional[Callable[[], Any]] = None) -> float:
    """``ready``: called once the envs are built and reset, before the timing."""
    envs = [fn() for fn in env_fns(spec, n)]
    policy = Policy(seed)
    space_of = [e.get_action_space for e in envs]
    state = [list(e.reset(seed=seed + i)) for i, e in enumerate(envs)]
    actors = [list(s[0]) for s in state]

    def step() -> int:
        count = 0
        for i, env in enumerate(envs):
            obs, infos = state[i]
            acts = policy.actions(actors[i], obs, infos, space_of[i])
            count += len(acts)
            obs, _, terminateds, truncateds, infos = env.step(acts)
            if terminateds["__all__"] or truncateds["__all__"]:
                obs, infos = env.reset()
                actors[i] = list(obs)
            else:
                actors[i] = next_actors(obs, terminateds, truncateds)
            state[i] = [obs, infos]
        return count

    try:
        if ready is not None:
            ready()
        return timed(seconds, step)
    finally:
        for env in envs:
            env.close()


def run_split(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
    """The serial loop split over ``min(n, workers)`` processes as the async env splits its
    copies, timed side by side: what the cores give with no vector env at all (no pipes,
    no shared memory, no parent at work), the ceiling of any async vector env here."""
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    shares = split_copies(n, min(n, workers))
    limit = seconds + 300.0  # a share that fails raises here instead of hanging the run
    barrier, rates = ctx.Barrier(len(shares), timeout=limit), ctx.Queue()
    processes = [ctx.Process(target=_split_share, args=(spec, len(share), seconds,
                                                        seed + share.start, barrier, rates))
                 for share in shares]
    for process in processes:
        process.start()
    try:
        return sum(rates.get(timeout=limit) for _ in processes)
    finally:
        for process in processes:
            process.join(10)
            if process.is_alive():
                process.terminate()
                process.join()


def _split_share(spec: EnvSpec, n: int, seconds: float, seed: int, barrier: Any,
                 rates: Any) -> None:
    rates.put(run_serial(spec, n, seconds, seed, 1, ready=barrier.wait))


def drive_vector(venv: Any, seconds: float, seed: int) -> float:
    """Agent-steps/s of a vector env of lists of dicts (ours or RLlib's), next_step autoreset."""
    return timed(seconds, vector_stepper(venv, seed))


def vector_stepper(venv: Any, seed: int, ended: Optional[list[int]] = None) -> Callable[[], int]:
    """Reset ``venv``; return a function that makes one call with the policy's actions and
    returns the agent-steps sent (next_step or same_step autoreset). ``ended``: a one-item
    list that counts the episodes that end (the memory run's)."""
    policy = Policy(seed)
    space_of = [c.unwrapped.get_action_space for c in venv.envs]
    obs, infos = venv.reset(seed=seed)
    actors = [list(o) for o in obs]
    n = len(obs)
    same_step = venv.metadata.get("autoreset_mode") == "same_step"

    def step() -> int:
        nonlocal obs, infos
        acts = [policy.actions(actors[i], obs[i], infos[i], space_of[i]) for i in range(n)]
        obs, _, terminateds, truncateds, infos = venv.step(acts)
        for i in range(n):
            if terminateds[i]["__all__"] or truncateds[i]["__all__"]:
                # next_step: reset in the next call (its action dict is ignored);
                # same_step: obs is the reset's already.
                actors[i] = list(obs[i]) if same_step else []
                if ended is not None:
                    ended[0] += 1
            else:
                actors[i] = next_actors(obs[i], terminateds[i], truncateds[i])
        return sum(map(len, acts))

    return step


def run_sync(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
    """``make_vec(id, n)``: the sync vector env."""
    with SyncVectorMultiAgentEnv(env_fns(spec, n), env_id=spec.env_id) as venv:
        return drive_vector(venv, seconds, seed)


class HandRolledSync:
    """``hand-rolled sync``: the five lists of ``sync`` (``next_step`` autoreset) made by a
    bare loop over the copies, with none of the vector env's checks or bookkeeping: what a
    sync vector env of lists of dicts costs at the least."""

    metadata = {"autoreset_mode": "next_step"}

    def __init__(self, fns: list[Callable[[], Any]]) -> None:
        self.envs = [fn() for fn in fns]
        self.ended = [False] * len(self.envs)

    def reset(self, seed: int) -> tuple[list[Any], list[Any]]:
        pairs = [env.reset(seed=seed + i) for i, env in enumerate(self.envs)]
        self.ended = [False] * len(self.envs)
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def step(self, actions: list[Any]) -> tuple[list[Any], ...]:
        results = []
        ended = self.ended
        with actions_prechecked():
            for i, env in enumerate(self.envs):
                if ended[i]:
                    obs, infos = env.reset()
                    ended[i] = False
                    results.append((obs, {}, {"__all__": False}, {"__all__": False}, infos))
                    continue
                result = env.step(actions[i])
                ended[i] = result[2]["__all__"] or result[3]["__all__"]
                results.append(result)
        obs, rewards, terminateds, truncateds, infos = map(list, zip(*results))
        return obs, rewards, terminateds, truncateds, infos


class HandRolledCheckedSync(HandRolledSync):
    """``hand-rolled sync, checked``: :class:`HandRolledSync` plus the one thing ``sync`` must
    do beyond it: every copy's action dict checked before any copy moves (the actors' keys,
    each action in its space and mask), written by hand for the envs here, with a bare
    ``ValueError``. The ceiling of ``sync`` doing the same work."""

    def __init__(self, fns: list[Callable[[], Any]]) -> None:
        super().__init__(fns)
        self.spaces = [{a: env.get_action_space(a) for a in env.possible_agents}
                       for env in self.envs]
        self.last: list[tuple[Any, Any, list[Any]]] = []  # each copy's obs, infos, actors

    def reset(self, seed: int) -> tuple[list[Any], list[Any]]:
        obs, infos = super().reset(seed)
        self.last = [(ob, info, list(ob)) for ob, info in zip(obs, infos)]
        return obs, infos

    def check(self, actions: list[Any]) -> None:
        ended, last, all_spaces = self.ended, self.last, self.spaces
        for i, action_dict in enumerate(actions):
            if ended[i]:  # reset in this call, its action dict ignored
                continue
            obs, infos, actors = last[i]
            if list(action_dict) != actors and sorted(action_dict) != sorted(actors):
                raise ValueError(f"copy {i}: actions for {list(action_dict)}, not {actors}")
            spaces = all_spaces[i]
            for agent, action in action_dict.items():
                space = spaces[agent]
                if type(space) is gym.spaces.Discrete:
                    ob = obs[agent]
                    mask = ob.get("action_mask") if type(ob) is dict else \
                        (infos.get(agent) or {}).get("action_mask")
                    index = action - space.start if type(action) is int else -1
                    if 0 <= index < space.n and (mask is None or mask[index]):
                        continue
                elif space.contains(action):
                    continue
                raise ValueError(f"copy {i}: bad action {action!r} for {agent!r}")

    def step(self, actions: list[Any]) -> tuple[list[Any], ...]:
        self.check(actions)
        result = super().step(actions)
        obs, _, terminateds, truncateds, infos = result
        self.last = [(ob, info, list(ob) if len(t) == 1 and len(u) == 1 else
                      next_actors(ob, t, u))
                     for ob, t, u, info in zip(obs, terminateds, truncateds, infos)]
        return result


def run_hand_rolled_sync(spec: EnvSpec, n: int, seconds: float, seed: int,
                         workers: int, *, checked: bool = False) -> float:
    """``hand-rolled sync``: the ceiling of ``sync`` (see :class:`HandRolledSync`); with
    ``checked``, of ``sync`` doing the same work (:class:`HandRolledCheckedSync`)."""
    venv = (HandRolledCheckedSync if checked else HandRolledSync)(env_fns(spec, n))
    try:
        return drive_vector(venv, seconds, seed)
    finally:
        for env in venv.envs:
            env.close()


def run_sync_same_step(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
    with SyncVectorMultiAgentEnv(env_fns(spec, n), autoreset_mode="same_step",
                                 env_id=spec.env_id) as venv:
        return drive_vector(venv, seconds, seed)


def run_async(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int, *,
              copy: bool = True) -> float:
    """``copy=False``: observations are views of the shared block, valid until the next call
    (as with Gymnasium's ``AsyncVectorEnv(copy=False)``)."""
    with AsyncVectorMultiAgentEnv(env_fns(spec, n), num_workers=min(n, workers), copy=copy,
                                  env_id=spec.env_id) as venv:
        return drive_vector(venv, seconds, seed)


def array_actions(spaces: dict[str, Any], batch: Any, rng: np.random.Generator) -> dict[str, Any]:
    """One action per slot of ``batch``, drawn for all slots at once (a random legal one from
    the mask), as an array learner does."""
    actions = {}
    for name, space in spaces.items():
        mask = batch.action_mask.get(name)
        if mask is not None:
            actions[name] = np.argmax(rng.random(mask.shape) * mask, axis=-1)
        elif hasattr(space, "n"):
            actions[name] = int(space.start) + rng.integers(0, int(space.n),
                                                            batch.acting[name].shape)
        else:  # a Box
            shape = batch.acting[name].shape + space.shape
            actions[name] = rng.uniform(space.low, space.high, shape).astype(space.dtype)
    return actions


def run_async_arrays(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int, *,
                     autoreset_mode: str = "next_step") -> float:
    """The async env with ``array_face=True``: the workers write each group's arrays into
    shared memory; the actions are drawn for all slots at once; one agent-step per acting
    slot."""
    with AsyncVectorMultiAgentEnv(env_fns(spec, n), num_workers=min(n, workers),
                                  array_face=True, env_id=spec.env_id,
                                  autoreset_mode=autoreset_mode) as venv:
        return timed(seconds, arrays_stepper(venv, seed))


def arrays_stepper(venv: Any, seed: int, ended: Optional[list[int]] = None) -> Callable[[], int]:
    """Reset ``venv``'s array face; return a function that makes one ``step_arrays`` call and
    returns the acting slots it stepped (``ended``: as :func:`vector_stepper` takes it)."""
    rng = np.random.default_rng(seed)
    spaces = {name: venv.get_action_space(members[0]) for name, members in venv.groups.items()}
    batch = venv.reset_arrays(seed=seed)

    def step() -> int:
        nonlocal batch
        actions = array_actions(spaces, batch, rng)
        done = sum(int(acting.sum()) for acting in batch.acting.values())
        batch = venv.step_arrays(actions)
        if ended is not None:
            ended[0] += int(np.sum(batch.episode_terminated | batch.episode_truncated))
        return done

    return step


def run_arrays_recv_send(spec: EnvSpec, n: int, seconds: float, seed: int,
                         workers: int) -> float:
    """The array face driven by ``recv_arrays()``/``send_arrays()`` with ``batch_size = n // 2``:
    the learner draws actions for the copies that are ready while the others step."""
    with AsyncVectorMultiAgentEnv(env_fns(spec, n), num_workers=min(n, workers),
                                  array_face=True, batch_size=max(1, n // 2),
                                  env_id=spec.env_id) as venv:
        rng = np.random.default_rng(seed)
        spaces = {name: venv.get_action_space(members[0])
                  for name, members in venv.groups.items()}
        venv.async_reset_arrays(seed=seed)

        def step() -> int:
            batch, copy_ids = venv.recv_arrays()
            venv.send_arrays(array_actions(spaces, batch, rng), copy_ids)
            return sum(int(acting.sum()) for acting in batch.acting.values())

        return timed(seconds, step)


def fits_hand_rolled(spec: EnvSpec) -> bool:
    return _fits_hand_rolled(spec.env_id, json.dumps(spec.config))


@functools.lru_cache(maxsize=None)
def _fits_hand_rolled(env_id: str, config: str) -> bool:
    return fits(env_id, json.loads(config))


def run_hand_rolled_arrays(spec: EnvSpec, n: int, seconds: float, seed: int,
                           workers: int) -> float:
    """``hand-rolled arrays``: the ceiling of ``async arrays`` (see hand_rolled_arrays.py)."""
    return run_hand_rolled(spec.env_id, n, seconds, seed, workers, timed, spec.config)


def run_recv_send(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
    """The async env driven by ``recv()``/``send()`` with ``batch_size = n // 2``: the learner
    answers whichever copies are ready first."""
    with AsyncVectorMultiAgentEnv(env_fns(spec, n), num_workers=min(n, workers),
                                  batch_size=max(1, n // 2), env_id=spec.env_id) as venv:
        return timed(seconds, recv_send_stepper(venv, seed))


def recv_send_stepper(venv: Any, seed: int,
                      ended: Optional[list[int]] = None) -> Callable[[], int]:
    """Start ``venv``'s copies; return a function that makes one ``recv()`` and ``send()`` of
    the ready copies and returns the agent-steps sent (``ended``: as :func:`vector_stepper`
    takes it)."""
    policy = Policy(seed)
    space_of = [c.unwrapped.get_action_space for c in venv.envs]
    venv.async_reset(seed=seed)

    def step() -> int:
        obs, _, terminateds, truncateds, infos, copy_ids = venv.recv()
        acts = []
        for k, i in enumerate(copy_ids.tolist()):
            if terminateds[k]["__all__"] or truncateds[k]["__all__"]:
                acts.append({})  # next_step: the next send resets it
                if ended is not None:
                    ended[0] += 1
            else:
                acts.append(policy.actions(next_actors(obs[k], terminateds[k], truncateds[k]),
                                           obs[k], infos[k], space_of[i]))
        venv.send(acts, copy_ids)
        return sum(map(len, acts))

    return step


def rllib_runner() -> Optional[Callable[..., float]]:
    """RLlib's SyncVectorMultiAgentEnv, or None when Ray is not installed."""
    try:
        from ray.rllib.env.vector.sync_vector_multi_agent_env import (
            SyncVectorMultiAgentEnv,
        )
    except Exception:  # ImportError, or Ray failing to import here
        return None

    def run(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
        fns = [lambda: marlhub.make(spec.env_id, spec.config, to="rllib") for _ in range(n)]
        venv = SyncVectorMultiAgentEnv(fns)
        try:
            return drive_vector(venv, seconds, seed)
        finally:
            venv.close()

    return run


def native_runner(spec: EnvSpec) -> Optional[Callable[..., float]]:
    """One native PettingZoo parallel env (``n`` is ignored), or None."""
    if spec.native is None:
        return None
    try:
        import pettingzoo
    except ImportError:
        return None

    def run(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
        env = pettingzoo.make("parallel", spec.native)
        policy = Policy(seed)
        env.reset(seed=seed)

        def step() -> int:
            acts = {a: policy.act(a, None, None, env.action_space(a)) for a in env.agents}
            env.step(acts)
            if not env.agents:
                env.reset()
            return len(acts)

        try:
            return timed(seconds, step)
        finally:
            env.close()

    return run


def supersuit_runner(spec: EnvSpec) -> Optional[Callable[..., float]]:
    """SuperSuit's concat_vec_envs over the native parallel env, or None."""
    if not spec.supersuit or spec.native is None:
        return None
    try:
        import pettingzoo
        import supersuit as ss
    except ImportError:
        return None

    def run(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> float:
        native = pettingzoo.make("parallel", spec.native)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(native), n,
                                         num_cpus=min(n, workers), base_class="gymnasium")
        try:
            venv.reset(seed=seed)
            space = venv.action_space  # SuperSuit's: one agent's space
            space.seed(seed)
            actions = np.stack([space.sample() for _ in range(venv.num_envs)])

            def step() -> int:
                venv.step(actions)
                return venv.num_envs

            return timed(seconds, step)
        finally:
            venv.close()

    return run


# -- measuring ----------------------------------------------------------------------------


def contestants_for(spec: EnvSpec) -> tuple[dict[str, Callable[..., float]], list[str]]:
    runners: dict[str, Callable[..., float]] = {}
    missing = []
    native = native_runner(spec)
    if native is not None:
        runners["native"] = native
    if spec.make is not None:  # varied: the recv/send cycle against the synchronous call
        return {"serial": run_serial, "sync": run_sync, "async": run_async,
                "async recv/send": run_recv_send, "async arrays": run_async_arrays,
                "arrays recv/send": run_arrays_recv_send, "serial split": run_split}, []
    runners.update({"serial": run_serial, "sync": run_sync, "sync same_step": run_sync_same_step,
                    "hand-rolled sync": run_hand_rolled_sync,
                    "hand-rolled sync, checked": functools.partial(run_hand_rolled_sync,
                                                                   checked=True),
                    "async": run_async,
                    "async copy=False": functools.partial(run_async, copy=False),
                    "async recv/send": run_recv_send,
                    "async arrays": run_async_arrays,
                    "async arrays same_step": functools.partial(run_async_arrays,
                                                                autoreset_mode="same_step"),
                    "arrays recv/send": run_arrays_recv_send,
                    "serial split": run_split})
    if fits_hand_rolled(spec):
        runners["hand-rolled arrays"] = run_hand_rolled_arrays
    for name, factory in (("supersuit", lambda: supersuit_runner(spec)), ("rllib", rllib_runner)):
        runner = factory()
        if runner is not None:
            runners[name] = runner
        elif name == "rllib" or spec.supersuit:
            missing.append(name)
    return runners, missing


def measure(args: argparse.Namespace) -> tuple[dict[tuple[str, int, str], list[float]], list[str]]:
    results: dict[tuple[str, int, str], list[float]] = {}
    missing: set[str] = set()
    for round_index in range(args.rounds):
        for env_name in args.envs:
            spec = ENVS[env_name]
            runners, absent = contestants_for(spec)
            if args.contestants:
                runners = {name: run for name, run in runners.items()
                           if name in args.contestants or name == "serial"}
            missing.update(absent)
            for n in args.copies:
                order = list(runners)
                shift = (round_index + n) % len(order)
                for name in order[shift:] + order[:shift]:
                    if name == "native" and n != args.copies[0]:
                        continue  # one native env: measured once per round
                    rate = runners[name](spec, n, args.seconds, args.seed + round_index,
                                         args.workers)
                    results.setdefault((env_name, n, name), []).append(rate)
            print(f"round {round_index + 1}/{args.rounds}: {env_name} done", file=sys.stderr)
    return results, sorted(missing)


def table(results: dict[tuple[str, int, str], list[float]], env_name: str,
          copies: list[int], base: str) -> list[str]:
    names = list(dict.fromkeys(k[2] for k in results if k[0] == env_name and k[2] != "native"))
    width = max([16, *map(len, names)])
    lines = [f"{env_name}: agent-steps/s (median paired ratio to {base})",
             f"{'contestant':<{width}}" + "".join(f"{f'{n} copies':>22}" for n in copies)]
    native = results.get((env_name, copies[0], "native"))
    if native:
        lines.append(f"{'native (1 env)':<{width}}{statistics.median(native):>22,.0f}")
    for name in names:
        cells = []
        for n in copies:
            rates = results.get((env_name, n, name))
            base_rates = native if base == "native" else results.get((env_name, n, base))
            if not rates or not base_rates:
                cells.append(f"{'-':>22}")
                continue
            ratio = statistics.median(r / b for r, b in zip(rates, base_rates))
            cells.append(f"{statistics.median(rates):>13,.0f} ({ratio:5.2f})")
        lines.append(f"{name:<{width}}" + "".join(f"{c:>22}" for c in cells))
    return lines


def rss_kb(pid: int) -> int:
    """Resident memory of process ``pid`` in KiB (Linux), 0 elsewhere."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user and system) of process ``pid`` (Linux), 0 elsewhere."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_run(spec: EnvSpec, n: int, seconds: float, seed: int, workers: int) -> dict[str, Any]:
    """CPU microseconds per agent-step of the async env (parent and workers) and of serial."""
    with marlhub.make_vec(spec.env_id, n, spec.config, vectorization_mode="async",
                          num_workers=min(n, workers)) as venv:
        pids = [p.pid for p in venv.processes()]
        step = vector_stepper(venv, seed)
        done, parent, others, start = 0, time.process_time(), sum(map(cpu_seconds, pids)), \
            time.perf_counter()
        while time.perf_counter() - start < seconds:
            done += step()
        parent = time.process_time() - parent
        others = sum(map(cpu_seconds, pids)) - others
    serial = run_serial(spec, n, seconds, seed, workers)
    return {"env": spec.env_id, "copies": n, "serial_us": round(1e6 / serial, 2),
            "async_parent_us": round(parent / done * 1e6, 2),
            "async_workers_us": round(others / done * 1e6, 2),
            "async_total_us": round((parent + others) / done * 1e6, 2)}


#: The ways ``--memory-episodes`` plays: the dict face of both vector envs, the array face,
#: and the recv/send cycle (``batch_size`` 2 of 4).
MEMORY_MODES = ("sync", "async", "async arrays", "async recv/send")


def memory_run(env_id: str, mode: str, episodes: int, seed: int) -> dict[str, Any]:
    """Play ``episodes`` episodes over 4 copies in ``mode`` (one of :data:`MEMORY_MODES`);
    resident memory after a tenth and at the end."""
    options: dict[str, Any] = {} if mode == "sync" else {"num_workers": 2}
    if mode == "async arrays":
        options["array_face"] = True
    elif mode == "async recv/send":
        options["batch_size"] = 2
    with marlhub.make_vec(env_id, 4, vectorization_mode=mode.split()[0], **options) as venv:
        pids = [os.getpid()] + [p.pid for p in getattr(venv, "processes", lambda: [])()]
        stepper = {"async arrays": arrays_stepper,
                   "async recv/send": recv_send_stepper}.get(mode, vector_stepper)
        finished = [0]
        step = stepper(venv, seed, finished)
        marks = {}
        while finished[0] < episodes:
            step()
            if "tenth" not in marks and finished[0] >= episodes // 10:
                marks["tenth"] = [rss_kb(p) for p in pids]
        marks["end"] = [rss_kb(p) for p in pids]
    growth = [end - start for start, end in zip(marks["tenth"], marks["end"])]
    return {"env": env_id, "mode": mode, "episodes": finished[0],
            "rss_kb_after_tenth": marks["tenth"],
            "rss_kb_at_end": marks["end"], "growth_kb": growth}


def write_json(path: str, args: argparse.Namespace, results: dict[tuple[str, int, str], list[float]],
               missing: list[str], memory: list[dict[str, Any]], load: Any,
               cpu: list[dict[str, Any]]) -> None:
    document = {
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "load_average_before": load},
        "command": " ".join(["python", "benchmarks/vector_throughput.py", *sys.argv[1:]]),
        "unit": "agent-steps/s, wall time",
        "rounds": args.rounds, "seconds_per_measurement": args.seconds, "workers": args.workers,
        "not_measured": missing,
        "results": [{"env": e, "copies": n, "contestant": c, "rates": [round(r, 1) for r in rates],
                     "median": round(statistics.median(rates), 1)}
                    for (e, n, c), rates in sorted(results.items())],
        "memory": memory,
        "cpu_per_agent_step": cpu,
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


def main(argv: Optional[list[str]] = None) -> int:
    """Measure, print the tables, optionally write JSON; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", nargs="+", default=DEFAULT_ENVS + ["varied"],
                        choices=list(ENVS))
    parser.add_argument("--copies", nargs="+", type=int, default=COPIES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="worker processes of async and supersuit (at most the copies)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--contestants", nargs="+", metavar="NAME",
                        help="measure only these (and serial, the reference), e.g. sync "
                        "'async arrays'")
    parser.add_argument("--memory-episodes", type=int, default=0, metavar="E")
    parser.add_argument("--cpu-copies", type=int, default=0, metavar="N",
                        help="also the CPU time per agent-step of async with N copies")
    parser.add_argument("--quick", action="store_true", help="1 round of 0.1 s, copies 1 and 2")
    parser.add_argument("--json", metavar="PATH", help="also write the measurements to PATH")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.seconds, args.copies = 1, 0.1, [1, 2]
    load = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    results, missing = measure(args)
    print(f"wall-time agent-steps/s, median of {args.rounds} interleaved rounds of "
          f"{args.seconds:g} s each; load average before: {load}")
    for env_name in args.envs:
        print()
        print("\n".join(table(results, env_name, args.copies, "serial")))
        if (env_name, args.copies[0], "native") in results:
            print("\n".join(table(results, env_name, args.copies, "native")[1:]))
    if missing:
        print(f"\nnot installed, not measured: {', '.join(missing)}")
    memory = []
    if args.memory_episodes:
        print(f"\nresident memory (KiB: this process, then each worker) over "
              f"{args.memory_episodes} episodes of 4 copies")
        for env_id in ("openspiel/kuhn_poker", "traffic"):
            for mode in MEMORY_MODES:
                row = memory_run(env_id, mode, args.memory_episodes, args.seed)
                memory.append(row)
                print(f"  {env_id:<22} {mode:<15} after a tenth {row['rss_kb_after_tenth']}, "
                      f"at the end {row['rss_kb_at_end']}, growth {row['growth_kb']}")
    cpu = []
    if args.cpu_copies:
        print(f"\nCPU us per agent-step, {args.cpu_copies} copies: async (parent + workers) "
              "against serial")
        for env_name in args.envs:
            row = cpu_run(ENVS[env_name], args.cpu_copies, max(args.seconds, 2.0), args.seed,
                          args.workers)
            cpu.append(row)
            print(f"  {env_name:<12} serial {row['serial_us']:>7.2f}   async "
                  f"{row['async_total_us']:>7.2f} (parent {row['async_parent_us']:.2f}, "
                  f"workers {row['async_workers_us']:.2f})")
    if args.json:
        write_json(args.json, args, results, missing, memory, load, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
