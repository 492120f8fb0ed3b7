"""Does an env's memory grow episode over episode? One seeded episode, played again and again.

:func:`memory_growth` plays the same seeded random episode (same seed, hence
the same actions) a few times under :mod:`tracemalloc`: after two warm-up
episodes, the memory still allocated after each further one must stop
growing. Memory that grows by at least ``MIN_GROWTH_PER_EPISODE`` bytes after
every measured episode, still after a full garbage collection, and goes on
growing (at half the rate at least) over as many episodes again, is kept by
the env: a list of frames or observations, a log. A cache that fills up
slows down and is let be. The allocations of Python (numpy arrays included)
are seen; those of native libraries are not.

Example:
    >>> import marlhub
    >>> memory_growth(marlhub.make("tic_tac_toe"), 0, max_steps=100, reset_kwargs={}) is None
    True
"""

from __future__ import annotations

import gc
import linecache
import tracemalloc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from marlhub.conformance.calls import unpack_reset, unpack_step
from marlhub.conformance.trajectories import safe_mask
from marlhub.episode.play import RandomEpisode, action_space_getter
from marlhub.spaces import ActionSampler

__all__ = ["PROBE_EPISODES", "Growth", "memory_growth"]

WARM_UP_EPISODES = 2
MEASURED_EPISODES = 4
#: Less than this per episode is noise (a dict that resized, a cache filling up).
MIN_GROWTH_PER_EPISODE = 4096
#: Steps per probe episode: enough to see what an episode keeps, cheap for long games.
PROBE_MAX_STEPS = 50
#: Probe episodes played when memory grows (fewer when it does not).
PROBE_EPISODES = WARM_UP_EPISODES + 2 * MEASURED_EPISODES


@dataclass
class Growth:
    """Memory an env kept over the measured episodes.

    Attributes:
        per_episode: bytes kept per episode, on average.
        total: bytes kept over ``episodes`` episodes.
        episodes: how many episodes were measured.
        where: the source line that allocated most of it.
    """

    per_episode: float
    total: int
    episodes: int
    where: str


class _Chooser:
    """Random legal actions from its own seeded sampler: no reference back to the episode."""

    def __init__(self, env: Any, seed: Optional[int]) -> None:
        self.space_of = action_space_getter(env)
        self.sampler = ActionSampler(seed)

    def __call__(self, actors: list[Any], obs: Mapping[Any, Any],
                 infos: Mapping[Any, Any]) -> dict[Any, Any]:
        return {a: self.sampler.sample(a, self.space_of(a), safe_mask(obs.get(a), infos.get(a)))
                for a in actors}


def _play(env: Any, seed: Optional[int], max_steps: int, reset_kwargs: Mapping[str, Any]) -> None:
    run = RandomEpisode(env, seed, max_steps=min(max_steps, PROBE_MAX_STEPS),
                        reset_kwargs=reset_kwargs, read_reset=unpack_reset,
                        read_step=unpack_step, choose=_Chooser(env, seed))
    for _ in run:
        pass


def memory_growth(env: Any, seed: Optional[int], *, max_steps: int,
                  reset_kwargs: Mapping[str, Any]) -> Optional[Growth]:
    """Return the memory ``env`` keeps from episode to episode, or None when it keeps none.

    Args:
        env: the env; it is reset and stepped only.
        seed: the seed of every probe episode.
        max_steps: the step budget of one episode (at most ``PROBE_MAX_STEPS`` are played).
        reset_kwargs: keywords of ``reset`` besides ``seed``.

    Raises:
        Exception: whatever the env raises (the caller has seen these episodes play).
    """
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        for _ in range(WARM_UP_EPISODES):
            _play(env, seed, max_steps, reset_kwargs)
        gc.collect(1)
        before = tracemalloc.take_snapshot()
        sizes = _measure(env, seed, max_steps, reset_kwargs)
        if min(b - a for a, b in zip(sizes, sizes[1:])) < MIN_GROWTH_PER_EPISODE:
            return None
        # Rarely reached: confirm with a full collection, then with as many episodes again
        # (a cache that fills up slows down; a leak goes on).
        gc.collect()
        first = tracemalloc.get_traced_memory()[0] - sizes[0]
        _measure(env, seed, max_steps, reset_kwargs)
        gc.collect()
        total = tracemalloc.get_traced_memory()[0] - sizes[0]
        episodes = 2 * MEASURED_EPISODES
        if first < MIN_GROWTH_PER_EPISODE * MEASURED_EPISODES or total - first < first / 2:
            return None
        where = _top_site(tracemalloc.take_snapshot(), before)
        return Growth(total / episodes, total, episodes, where)
    finally:
        if started:
            tracemalloc.stop()


def _measure(env: Any, seed: Optional[int], max_steps: int,
             reset_kwargs: Mapping[str, Any]) -> list[int]:
    """Return the traced memory now and after each of ``MEASURED_EPISODES`` episodes."""
    sizes = [tracemalloc.get_traced_memory()[0]]
    for _ in range(MEASURED_EPISODES):
        _play(env, seed, max_steps, reset_kwargs)
        gc.collect(1)  # the young generations only: cheap, and most garbage is young
        sizes.append(tracemalloc.get_traced_memory()[0])
    return sizes


def _top_site(after: tracemalloc.Snapshot, before: tracemalloc.Snapshot) -> str:
    """Return ``file:line (source)`` of the line whose allocations grew most."""
    ours = {tracemalloc.__file__, __file__}
    for stat in after.compare_to(before, "lineno"):
        frame = stat.traceback[0]
        if stat.size_diff <= 0 or frame.filename in ours:
            continue
        source = linecache.getline(frame.filename, frame.lineno).strip()
        return f"{Path(frame.filename).name}:{frame.lineno}" + (f" ({source})" if source else "")
    return "an unknown line"
