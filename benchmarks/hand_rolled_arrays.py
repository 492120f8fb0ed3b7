"""The ceiling of the async array face: the same work, written by hand.

``run_hand_rolled`` is the contestant ``hand-rolled arrays`` of
``vector_throughput.py``. Like ``AsyncVectorMultiAgentEnv(array_face=True)``, it splits
``N`` hub envs (``marlhub.make``) over worker processes as that env does
(``split_copies``, the one piece of ``marlhub.vector`` it takes: where the copies go,
not how they run); the workers step them and write each copy's observations, action
masks, rewards, who acts and the episode's end into shared numpy arrays, one pipe
message per worker and call (``next_step`` autoreset: the call after an episode's end
resets the copy); the parent draws every action at once from the masks, writes them into
a shared array, and copies the results out. What it leaves out is everything the vector
env adds: the parent's checks of the actions (the copies step inside
``actions_prechecked`` all the same), the infos, the per-agent done and ``alive`` flags,
the copy book, errors that name the copy, the recv/send cycle. So no synchronous array
face made of worker processes can be faster on the same machine; ``serial split``
(processes that never wait for each other) is the ceiling of any vector env.

It runs envs with one group of agents (one observation space and one ``Discrete`` or
``Box`` action space), whose observations are arrays or dicts of an ``"observation"``
array and an ``"action_mask"``: Kuhn poker, tic-tac-toe and pistonball here
(:func:`fits` says which).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from typing import Any, NamedTuple, Optional

import gymnasium as gym
import numpy as np

import marlhub
from marlhub.episode.prechecked import actions_prechecked
from marlhub.vector.sources.processes import split_copies

__all__ = ["fits", "run_hand_rolled"]

#: How long the parent waits for a worker's answer before it gives up (a hang is an error).
ANSWER_SECONDS = 60.0


class Layout(NamedTuple):
    """What the shared arrays hold for an env: its agents, one observation array each, and
    one action each: ``Discrete(actions)`` (with a mask) or a ``Box`` (``box``)."""

    agents: list[Any]
    obs_shape: tuple[int, ...]
    obs_dtype: Any
    actions: int  # Discrete: how many; a Box: 0
    box: Optional[gym.spaces.Box]


def fits(env_id: str, config: Optional[dict[str, Any]] = None) -> bool:
    """Whether ``env_id``'s envs have the one group and the observations this runs."""
    env = marlhub.make(env_id, config)
    try:
        return _layout(env) is not None
    finally:
        env.close()


def _layout(env: Any) -> Optional[Layout]:
    """The env's :class:`Layout`, or None when the env does not fit."""
    agents = list(env.possible_agents)
    obs_space, act_space = env.get_observation_space(agents[0]), env.get_action_space(agents[0])
    if any(env.get_observation_space(a) != obs_space or env.get_action_space(a) != act_space
           for a in agents):
        return None
    box = act_space if type(act_space) is gym.spaces.Box else None
    if box is None and (type(act_space) is not gym.spaces.Discrete or act_space.start != 0):
        return None
    if isinstance(obs_space, gym.spaces.Dict):
        if set(obs_space.spaces) != {"observation", "action_mask"} or box is not None:
            return None
        obs_space = obs_space["observation"]
    if not isinstance(obs_space, gym.spaces.Box):
        return None
    return Layout(agents, tuple(obs_space.shape), obs_space.dtype,
                  0 if box is not None else int(act_space.n), box)


def _arrays(buffer: Any, n: int, layout: Layout) -> tuple[dict[str, np.ndarray], int]:
    """The shared arrays over ``buffer`` (None: only their size), and the bytes they take."""
    agents, box = len(layout.agents), layout.box
    fields = (("obs", (n, agents, *layout.obs_shape), layout.obs_dtype),
              ("mask", (n, agents, layout.actions), np.int8),
              ("rewards", (n, agents), np.float64), ("acting", (n, agents), np.bool_),
              ("ended", (n,), np.bool_),
              ("actions", (n, agents) if box is None else (n, agents, *box.shape),
               np.int64 if box is None else box.dtype))
    memory = None if buffer is None else np.frombuffer(buffer, np.uint8)
    views, offset = {}, 0
    for name, shape, dtype in fields:
        size = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if memory is not None:
            views[name] = memory[offset:offset + size].view(dtype).reshape(shape)
        offset += -(-size // 64) * 64
    return views, offset


def _worker(env_id: str, config: Optional[dict[str, Any]], first: int, last: int, n: int,
            buffer: Any, conn: Any, seed: int) -> None:
    envs = [marlhub.make(env_id, config) for _ in range(first, last)]
    layout = _layout(envs[0])
    assert layout is not None
    slot = {agent: j for j, agent in enumerate(layout.agents)}
    discrete = layout.box is None
    views, _ = _arrays(buffer, n, layout)
    obs, mask, rewards, acting, ended = (views[k] for k in ("obs", "mask", "rewards", "acting",
                                                            "ended"))

    def write(i: int, observations: dict[Any, Any]) -> list[Any]:
        if len(observations) < len(slot):  # rows of agents with no observation hold zeros
            obs[i] = 0
        acting[i] = False
        for agent, value in observations.items():
            j = slot[agent]
            if type(value) is dict:
                obs[i, j] = value["observation"]
                mask[i, j] = value["action_mask"]
            else:
                obs[i, j] = value
                mask[i, j] = 1
            acting[i, j] = True
        return list(observations)

    actors = []
    for k, env in enumerate(envs):
        observations, _ = env.reset(seed=seed + first + k)
        actors.append(write(first + k, observations))
    rewards[first:last] = 0
    ended[first:last] = False
    conn.send("ready")
    while conn.recv() is not None:
        chosen = views["actions"][first:last]
        rows = chosen.tolist() if discrete else chosen.copy()
        rewards[first:last] = 0
        with actions_prechecked():
            for k, env in enumerate(envs):
                i = first + k
                if ended[i]:  # next_step: this call resets it
                    observations, _ = env.reset()
                    ended[i] = False
                    actors[k] = write(i, observations)
                    continue
                row = rows[k]
                observations, step_rewards, terminateds, truncateds, _ = env.step(
                    {agent: row[slot[agent]] for agent in actors[k]})
                for agent, reward in step_rewards.items():
                    rewards[i, slot[agent]] = reward
                actors[k] = write(i, observations)
                if terminateds["__all__"] or truncateds["__all__"]:
                    ended[i] = True  # the final observations stay, and nobody acts
                    acting[i] = False
                    actors[k] = []
        conn.send(0)


def run_hand_rolled(env_id: str, n: int, seconds: float, seed: int, workers: int,
                    timed: Callable[[float, Callable[[], int]], float],
                    config: Optional[dict[str, Any]] = None) -> float:
    """Agent-steps/s of ``n`` copies of ``env_id`` (made with ``config``) over ``min(n,
    workers)`` hand-rolled workers, timed by ``timed`` (vector_throughput's)."""
    probe = marlhub.make(env_id, config)
    layout = _layout(probe)
    probe.close()
    assert layout is not None, f"{env_id} does not fit the hand-rolled workers"
    ctx = multiprocessing.get_context("fork" if sys.platform == "linux" else None)
    _, size = _arrays(None, n, layout)
    buffer = ctx.RawArray("B", size)
    views, _ = _arrays(buffer, n, layout)
    conns, processes = [], []
    try:
        for share in split_copies(n, min(n, workers)):  # the async env's split
            here, there = ctx.Pipe()
            process = ctx.Process(target=_worker, args=(env_id, config, share.start, share.stop,
                                                        n, buffer, there, seed), daemon=True)
            process.start()
            conns.append(here)
            processes.append(process)
        for conn in conns:
            _answer(conn)
        rng = np.random.default_rng(seed)
        mask, acting, box = views["mask"], views["acting"], layout.box

        def step() -> int:
            if box is None:
                views["actions"][...] = np.argmax(rng.random(mask.shape) * mask, axis=-1)
            else:
                views["actions"][...] = rng.uniform(box.low, box.high, views["actions"].shape)
            done = int(acting.sum())
            for conn in conns:
                conn.send(1)
            for conn in conns:
                _answer(conn)
            _kept = {name: views[name].copy()  # noqa: F841 (what a learner keeps of the call)
                     for name in ("obs", "mask", "rewards", "acting", "ended")}
            return done

        return timed(seconds, step)
    finally:
        for conn in conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for process in processes:
            process.join(5)
            if process.is_alive():
                process.terminate()
                process.join()


def _answer(conn: Any) -> Any:
    if not conn.poll(ANSWER_SECONDS):
        raise RuntimeError(f"a hand-rolled worker did not answer within {ANSWER_SECONDS:g} s")
    return conn.recv()
