"""Where a reset in the middle of an episode is most likely to find state left over.

``reset.mid_episode`` resets a recorded episode midway and plays it again from its
seed. A reset halfway finds counters and boards that only an episode's end clears; an
env that forgets its dead (or its late joiners) in ``step`` at the episode's end
instead of in ``reset`` only shows it when the reset comes after a death (a join).

Example:
    >>> from marlhub.conformance.trajectories import Recording
    >>> ref = Recording(0, 0, actions=[{"a": 0, "b": 0}] * 5, snapshots=[
    ...     ({"a": 0, "b": 0}, {}, {}, {}),
    ...     ({"a": 1, "b": 1}, {}, {"b": True, "__all__": False}, {}),  # b dies at step 1
    ...     ({"a": 2}, {}, {}, {}),
    ...     ({"a": 3, "c": 1}, {}, {}, {}),                             # c joins at step 3
    ...     ({"a": 4, "c": 2}, {}, {}, {}),
    ...     ({"a": 5, "c": 3}, {}, {"__all__": True}, {})])
    >>> cut_points(ref)
    [2, 4]
"""

from __future__ import annotations

from marlhub.conformance.trajectories import Recording
from marlhub.core import ALL
from marlhub.episode.status import truthy

__all__ = ["cut_points"]


def cut_points(ref: Recording) -> list[int]:
    """The numbers of steps after which to reset: after the first death, after the first
    late join (each while the episode goes on), else halfway; empty for one-step episodes."""
    steps = len(ref.actions)
    if steps < 2:
        return []
    seen: dict[object, int] = {}  # observations so far, by agent
    death = join = None
    for k, (obs, _, terminateds, truncateds) in enumerate(ref.snapshots[:steps]):
        done = [a for flags in (terminateds, truncateds) for a, v in flags.items()
                if a != ALL and truthy(v)]
        if death is None and done:
            death = k + 1  # one step after the death, so the dead agent is gone
        # A late joiner first shows once another agent has been seen twice (in turn-based
        # games every player shows in its first round).
        if join is None and k and any(a not in seen for a in obs) and max(seen.values()) >= 2:
            join = k + 1
        for agent in obs:
            seen[agent] = seen.get(agent, 0) + 1
    cuts = sorted({c for c in (death, join) if c is not None and c < steps})
    return cuts or [steps // 2]
