"""What a :class:`~marlhub.external.PolicyClient` logged, kept for its episode's next request.

``log_returns`` needs no answer, and its rewards, infos and done agents only
reach the learner with the episode's next step, so the client keeps each
call (the whole ``LogReturnsRequest``) and sends it inside the episode's next
request (``GetActionRequest.logged`` or ``EndEpisodeRequest.logged``): a
decision and its rewards cost one round trip. :class:`CarriedCalls` is that
store: per episode, in order, thread-safe. It keeps a call only for an
episode the learner is known to run (started by this client, or a call on it
went through since) and only when nothing in it could be refused that the
client can see (an unknown agent, a reward that is no finite number, an info
that is no dict, an agent the client logged done): such a call is sent at
once, so that its error comes at once, as it would from the unary call.

Example:
    >>> calls = CarriedCalls(max_episodes=4, agents=["a"])
    >>> calls.running("e")
    >>> calls.keep("e", "returns 1", rewards={"a": 1.0}), calls.keep("e", "returns 2")
    (True, True)
    >>> calls.keep("other", "returns 3")  # not an episode known to run: send it at once
    False
    >>> calls.take("e"), calls.take("e")
    (['returns 1', 'returns 2'], [])
"""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Optional

from marlhub.core import AgentID

__all__ = ["MAX_CARRIED_BYTES", "MAX_CARRIED_CALLS", "CarriedCalls"]

#: How many calls of one episode are kept before they are sent on their own.
MAX_CARRIED_CALLS = 64
#: How many bytes of infos (as JSON) of one episode are kept before they are sent on their own.
MAX_CARRIED_BYTES = 1 << 20


class _Episode:
    __slots__ = ("calls", "size", "done")

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.size = 0
        self.done: set[AgentID] = set()  # agents logged done: a later call on them may be refused


class CarriedCalls:
    """The calls a client keeps for the next request of each episode it runs.

    Args:
        max_episodes: how many episodes the learner lets the client run at once; past twice
            as many known episodes, the oldest with nothing kept are forgotten (the learner
            let them go: the client's later calls on them are sent at once).
        agents: the client's agents (a call that names another is sent at once).
    """

    def __init__(self, max_episodes: int, agents: Iterable[AgentID] = ()) -> None:
        self._episodes: dict[str, _Episode] = {}
        self._agents = set(agents)
        self._most = 2 * max(1, max_episodes) + 64
        self._lock = threading.Lock()

    def running(self, episode_id: str) -> None:
        """The learner runs ``episode_id`` (it was started, or a call on it went through)."""
        with self._lock:
            if episode_id in self._episodes:
                return
            self._episodes[episode_id] = _Episode()
            if len(self._episodes) > self._most:
                idle = [e for e, kept in self._episodes.items() if not kept.calls]
                for gone in idle[:len(self._episodes) - self._most]:
                    del self._episodes[gone]

    def started(self, episode_id: str) -> None:
        """``episode_id`` was started now: nothing kept for an episode of that id before."""
        with self._lock:
            self._episodes.pop(episode_id, None)
        self.running(episode_id)

    def keep(self, episode_id: str, call: Any, rewards: Mapping[AgentID, float] = {},
             infos: Mapping[AgentID, Any] = {}, done: Collection[AgentID] = (),
             size: int = 0) -> bool:
        """Keep ``call`` (its ``rewards``, ``infos``, ``done`` agents and ``size`` in bytes)
        for the episode's next request; False: send it at once (the episode is not known to
        run, or something in it could be refused)."""
        agents = self._agents
        with self._lock:
            episode = self._episodes.get(episode_id)
            if episode is None:
                return False
            gone = episode.done
            for names in (rewards, infos, done):
                for agent in names:
                    if agent not in agents or agent in gone:
                        return False
            for reward in rewards.values():
                if not math.isfinite(reward):
                    return False
            for info in infos.values():
                if not isinstance(info, Mapping):
                    return False
            episode.calls.append(call)
            episode.size += size
            gone.update(done)
            return True

    def full(self, episode_id: str) -> bool:
        """Whether the episode's kept calls should go now, on their own."""
        episode = self._episodes.get(episode_id)
        return episode is not None and (len(episode.calls) >= MAX_CARRIED_CALLS
                                        or episode.size >= MAX_CARRIED_BYTES)

    def take(self, episode_id: str) -> list[Any]:
        """The calls kept for the episode, in order; the episode keeps none after."""
        episode = self._episodes.get(episode_id)
        if episode is None or not episode.calls:  # (the common case, without the lock)
            return []
        with self._lock:
            calls, episode.calls, episode.size = episode.calls, [], 0
        return calls

    def forget(self, episode_id: str) -> list[Any]:
        """The episode ended, or a call on it was refused: drop it; return what it kept."""
        with self._lock:
            episode: Optional[_Episode] = self._episodes.pop(episode_id, None)
        return [] if episode is None else episode.calls

    def take_all(self) -> dict[str, list[Any]]:
        """Every episode's kept calls (those that keep any); none are kept after."""
        with self._lock:
            kept = {e: episode.calls for e, episode in self._episodes.items() if episode.calls}
            for episode_id in kept:
                self._episodes[episode_id].calls, self._episodes[episode_id].size = [], 0
        return kept
