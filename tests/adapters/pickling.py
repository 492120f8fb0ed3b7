"""Pickle a hub env at some point of an episode; what the copy does next is what the original does.

Shared by the adapters' ``test_pickling.py``: :func:`pickled_at` plays an env to
a stage with :class:`~marlhub.episode.RandomEpisode` and pickles it with where
it stands; :func:`play_on` is what an env does from there (the rest of its
episode, then whole episodes, the first reset seeded or not, the rest not, so
the env's own generators are carried over); :func:`play_on_in_fresh_interpreter`
loads a pickle in a new Python process first, as a worker process does.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from marlhub.episode.play import (
    RandomEpisode,
    Step,
    action_space_getter,
    random_actions,
)
from marlhub.episode.status import actors_of
from marlhub.spaces import ActionSampler

REPO = Path(__file__).resolve().parents[2]

#: Where an env is pickled.
STAGES = ("before reset", "mid-episode", "after the end")


def pickled_at(env: Any, stage: str, *, seed: int = 0, steps: int = 1) -> bytes:
    """Play ``env`` to ``stage``; return ``pickle.dumps((env, step))``.

    ``step`` is where the episode stands: the :class:`Step` after ``steps`` steps
    ("mid-episode"; the episode must last longer), None before the first reset
    and after the end.
    """
    last: Optional[Step] = None
    if stage != "before reset":
        for last in RandomEpisode(env, seed):
            if last.over or (stage == "mid-episode" and last.index >= steps):
                break
        assert last is not None and last.over == (stage == "after the end"), (
            f"{env} is at step {last and last.index}, not {stage}")
    return pickle.dumps((env, None if stage == "after the end" else last))


def play_on(env: Any, step: Optional[Step], *, reset_seed: Optional[int] = None,
            episodes: int = 2, max_steps: int = 200, seed: int = 7) -> list[Any]:
    """Return every result of ``env`` from here: the rest of the episode, then ``episodes`` more.

    Args:
        env: a hub env.
        step: where its episode stands (None: not running).
        reset_seed: the seed of the first new episode (the others reset with None).
        episodes: how many new episodes to play.
        max_steps: a cap on each episode.
        seed: seeds the random legal actions.
    """
    sampler = ActionSampler(seed)
    space_of = action_space_getter(env)
    results: list[Any] = []
    for episode in range(episodes + 1):
        if episode == 0:
            if step is None:
                continue
            obs, infos, actors = step.obs, step.infos, step.actors
        else:
            obs, infos = env.reset(seed=reset_seed if episode == 1 else None)
            results.append((obs, infos))
            actors = list(obs)
        for _ in range(max_steps):
            if not actors:
                break
            result = env.step(random_actions(actors, obs, infos, space_of, sampler))
            results.append(result)
            obs, _, terminateds, truncateds, infos = result
            actors = actors_of(obs, terminateds, truncateds)
    return results


def play_on_in_fresh_interpreter(data: bytes, **options: Any) -> list[Any]:
    """Load ``data`` (from :func:`pickled_at`) in a new interpreter, then :func:`play_on` there.

    The pickle is loaded before anything else is imported, as in a worker process.
    """
    code = (
        "import pickle, sys\n"
        "env, step = pickle.loads(sys.stdin.buffer.read())\n"
        "from tests.adapters.pickling import play_on\n"
        f"results = play_on(env, step, **{options!r})\n"
        "sys.stdout.buffer.write(pickle.dumps(results))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                         timeout=120, cwd=REPO)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-2000:]
    results: list[Any] = pickle.loads(run.stdout)
    return results
