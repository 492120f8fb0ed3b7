"""The episodes of external simulators, between the simulators' calls and the learner's steps.

A simulator runs its own loop and calls, with RLlib's names and meanings:
``start_episode``, ``get_action(episode_id, obs)`` (blocks until the learner
answers), ``log_action`` (it acted itself), ``log_returns`` (rewards, infos
and agents that are done, summed into the next step) and ``end_episode``.
:class:`EpisodeBook` turns each call into an :class:`Event` on its episode's
queue, checked against the declared agents and spaces first, so a bad call
raises in the simulator (:class:`~marlhub.errors.ExternalEnvError`) and never
reaches the learner. The learner's side (one
:class:`~marlhub.external.copies.ExternalCopy` per copy) claims started
episodes, takes their events in order and answers decisions.

Every call is thread-safe: simulators call from their own threads (or from
the gRPC server's), the learner from its own.

Example:
    >>> import gymnasium as gym
    >>> book = EpisodeBook(["a"], {"a": gym.spaces.Discrete(3)}, {"a": gym.spaces.Discrete(2)})
    >>> episode_id = book.start_episode("e1")
    >>> book.log_returns("e1", {"a": 1.0}); book.log_returns("e1", {"a": 0.5})
    >>> book.log_action("e1", {"a": 2}, {"a": 1})
    >>> event = book.claim(timeout=1.0).events[0]
    >>> event.kind, event.obs, event.rewards, event.actions
    ('logged', {'a': 2}, {'a': 1.5}, {'a': 1})
    >>> book.log_action("e1", {"a": 7}, {"a": 1})
    Traceback (most recent call last):
    ...
    marlhub.errors.ExternalEnvError: episode 'e1': log_action() got the observation 7 for agent 'a', which is not in Discrete(3). Send observations inside the agent's observation space (declared when the simulator was made or connected).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import ALL, AgentID
from marlhub.errors import EpisodeDroppedError, ExternalEnvError
from marlhub.external.codec import in_space

__all__ = ["DECIDE", "END", "LOGGED", "Episode", "EpisodeBook", "Event"]

#: An event in which agents ask for actions (``get_action``).
DECIDE = "decide"
#: An event in which the simulator acted itself (``log_action``).
LOGGED = "logged"
#: The end of the episode (``end_episode``; truncated: a disconnect or a time-out).
END = "end"

#: How many episodes may run at once, unless told otherwise.
DEFAULT_MAX_EPISODES = 1024
#: Why an episode takes no more calls after ``end_episode``.
ENDED = "it ended (end_episode)"
#: How many dropped episodes are remembered, to tell a late call on one what happened.
MAX_REMEMBERED_DROPS = 1024


def _key(owner: Any, episode_id: Any) -> tuple[Any, str]:
    """Where the book keeps an episode: ids are the simulator's own, so another simulator's
    episode of the same id is another episode (and no caller learns which ids others use)."""
    return owner, str(episode_id)


def _held_lock() -> Any:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass
class Event:
    """One step's worth of what a simulator said: observations, and what came since the last.

    Attributes:
        kind: :data:`DECIDE`, :data:`LOGGED` or :data:`END`.
        obs: the agents' observations (those who decide, or the final ones).
        rewards: each agent's rewards logged since the last event, summed.
        infos: each agent's infos logged since the last event, merged.
        done: the agents ``log_returns`` said are done since the last event.
        actions: the actions the simulator took itself (:data:`LOGGED`).
        truncated: an :data:`END` by disconnect or time-out (else terminated).
        why: what ended a truncated episode.
        answer: the learner's actions (:data:`DECIDE`), once :meth:`answered` is True.
    """

    kind: str
    obs: dict[AgentID, Any]
    rewards: dict[AgentID, float] = field(default_factory=dict)
    infos: dict[AgentID, dict[str, Any]] = field(default_factory=dict)
    done: set[AgentID] = field(default_factory=set)
    actions: Optional[dict[AgentID, Any]] = None
    truncated: bool = False
    why: str = ""
    answer: Any = None
    # Held until the answer is in: the simulator's call waits by acquiring it (a bare lock
    # hands over quicker than a threading.Event).
    _unanswered: Any = field(default_factory=_held_lock)

    def answered(self) -> bool:
        """Whether the learner answered (or the episode was let go of)."""
        return not self._unanswered.locked()

    def wait_for_answer(self) -> Any:
        """Wait for :attr:`answer`; return it."""
        self._unanswered.acquire()
        self._unanswered.release()
        return self.answer

    def set_answer(self, answer: Any) -> None:
        """Hand ``answer`` to the waiting call (once)."""
        if self._unanswered.locked():
            self.answer = answer
            self._unanswered.release()


class Episode:
    """One episode: its queue of events, and what was logged since the last event."""

    def __init__(self, episode_id: str, owner: Any, training_enabled: bool) -> None:
        self.id = episode_id
        self.owner = owner
        self.training_enabled = training_enabled
        self.events: deque[Event] = deque()
        self.rewards: dict[AgentID, float] = {}
        self.infos: dict[AgentID, dict[str, Any]] = {}
        self.done: set[AgentID] = set()
        self.gone: set[AgentID] = set()  # done in an event already appended
        self.last_obs: dict[AgentID, Any] = {}
        self.taken: Optional[Event] = None  # the last event the learner took
        self.finished = ""  # why the simulator may call no more ("" while it may)
        self.claimed = False

    def __repr__(self) -> str:
        return f"Episode({self.id!r}, {len(self.events)} events{', ' + self.finished if self.finished else ''})"


class EpisodeBook:
    """The episodes of one external env: the simulators' calls in, the learner's answers out.

    Args:
        possible_agents: the agents the simulators may have, in order.
        observation_spaces, action_spaces: each agent's spaces.
        max_episodes: how many episodes may run at once (a start beyond is refused).
        name: how the env is named in messages.

    Attributes:
        changed: the condition every change is announced on (the learner waits on it).
        episodes: the running episodes by id.
        closed: why the book takes no more calls ("" while it does).
    """

    def __init__(self, possible_agents: list[AgentID],
                 observation_spaces: Mapping[AgentID, gym.Space],
                 action_spaces: Mapping[AgentID, gym.Space], *,
                 max_episodes: int = DEFAULT_MAX_EPISODES, name: str = "external env") -> None:
        self.possible_agents = list(possible_agents)
        self.observation_spaces = dict(observation_spaces)
        self.action_spaces = dict(action_spaces)
        self.max_episodes = max_episodes
        self.name = name
        self.changed = threading.Condition()
        self.episodes: dict[tuple[Any, str], Episode] = {}  # by (owner, the owner's id)
        self._waiting: deque[Episode] = deque()
        self._dropped: dict[tuple[Any, str], str] = {}  # recently let go of, and why
        self.closed = ""

    # -- the simulator's side -----------------------------------------------------

    def start_episode(self, episode_id: Optional[str] = None, training_enabled: bool = True,
                      *, owner: Any = None) -> str:
        """Start an episode; return its id (a new one for None).

        Raises:
            ExternalEnvError: an id already running, too many episodes, or a closed env.
        """
        episode_id = uuid.uuid4().hex if episode_id is None else str(episode_id)
        with self.changed:
            self._check_open(f"episode {episode_id!r}")
            if _key(owner, episode_id) in self.episodes:
                raise ExternalEnvError(f"episode {episode_id!r}", "start_episode() got an id "
                                       "that is running already", "Pass a new id, or None for one.")
            if len(self.episodes) >= self.max_episodes:
                raise ExternalEnvError(f"episode {episode_id!r}", f"start_episode() would run "
                                       f"more than max_episodes={self.max_episodes} episodes at "
                                       "once", "End episodes before starting more, or raise "
                                       "the learner's 'max_episodes'.")
            episode = Episode(episode_id, owner, bool(training_enabled))
            self.episodes[_key(owner, episode_id)] = episode
            self._waiting.append(episode)
        return episode_id

    def get_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any], *,
                   in_spaces: bool = False, owner: Any = None) -> dict:
        """Ask the learner for the actions of the agents in ``observation_dict``; wait for them.

        ``in_spaces``: the values were found in their spaces already (the server decoded them).
        ``owner``: the simulator whose episode it is (as :meth:`start_episode` got it).

        Raises:
            ExternalEnvError: a bad observation dict, an unknown or ended episode, or an
                episode the learner dropped or closed while this call waited.
        """
        event = self._append(episode_id, DECIDE, "get_action", observation_dict,
                             in_spaces=in_spaces, owner=owner)
        answer = event.wait_for_answer()
        if isinstance(answer, ExternalEnvError):
            raise answer
        return answer

    def log_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any],
                   action_dict: Mapping[AgentID, Any], *, owner: Any = None) -> None:
        """Record the actions the simulator took itself for these observations (off-policy).

        Raises:
            ExternalEnvError: a bad observation or action dict, or an unknown or ended episode.
        """
        self._append(episode_id, LOGGED, "log_action", observation_dict, action_dict,
                     owner=owner)

    def log_returns(self, episode_id: str, reward_dict: Mapping[AgentID, Any],
                    info_dict: Optional[Mapping[AgentID, Any]] = None,
                    done_dict: Optional[Mapping[AgentID, Any]] = None, *,
                    owner: Any = None) -> None:
        """Add rewards (and infos, and agents that are done) to the episode's next step.

        Raises:
            ExternalEnvError: an unknown or done agent, a reward that is no finite number,
                infos that are no dicts, or an unknown or ended episode.
        """
        with self.changed:
            episode = self._running(episode_id, "log_returns", owner)
            source = f"episode {episode_id!r}"
            rewards = {a: self._reward(source, episode, a, r) for a, r in
                       _mapping(source, "reward_dict", reward_dict).items()}
            infos = _mapping(source, "info_dict", info_dict or {})
            for agent, info in infos.items():
                self._check_agent(source, episode, "log_returns", agent)
                if not isinstance(info, Mapping):
                    raise ExternalEnvError(source, f"log_returns() got the info {info!r:.80} for "
                                           f"agent {agent!r}", "Pass a dict per agent.")
            done = set()
            for agent, flag in _mapping(source, "done_dict", done_dict or {}).items():
                if agent == ALL:
                    if flag:
                        raise ExternalEnvError(source, "log_returns() got done_dict['__all__'] "
                                               "True", "End the episode with end_episode(id, "
                                               "obs) instead.")
                    continue
                self._check_agent(source, episode, "log_returns", agent)
                if flag:
                    done.add(agent)
            for agent, reward in rewards.items():
                episode.rewards[agent] = episode.rewards.get(agent, 0.0) + reward
            for agent, info in infos.items():
                episode.infos.setdefault(agent, {}).update(info)
            episode.done |= done

    def end_episode(self, episode_id: str, observation_dict: Mapping[AgentID, Any], *,
                    owner: Any = None) -> None:
        """End the episode (terminated), with the agents' final observations.

        Raises:
            ExternalEnvError: a bad observation dict, or an unknown or ended episode.
        """
        self._append(episode_id, END, "end_episode", observation_dict, allow_empty=True,
                     owner=owner)

    def disconnect(self, owner: Any, why: str) -> None:
        """End every running episode of ``owner`` as truncated (a simulator went away)."""
        with self.changed:
            for episode in list(self.episodes.values()):
                if episode.owner == owner and not episode.finished:
                    self._truncate(episode, why)

    # -- the learner's side --------------------------------------------------------

    def claim(self, timeout: float, *, wait: bool = True) -> Optional[Episode]:
        """Take the first started episode that has a request, waiting up to ``timeout`` s
        (None: none came, or none is there with ``wait=False``)."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while True:
                self._check_open("the learner")
                episode = self._claimable()
                if episode is not None or not wait:
                    return episode
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)

    def claimable(self) -> int:
        """How many started episodes have a request and wait for a copy (call holding
        ``changed``)."""
        return sum(1 for e in self._waiting if e.events and e.events[0].kind != END)

    def _claimable(self) -> Optional[Episode]:
        for episode in list(self._waiting):
            if not episode.events:
                continue
            self._waiting.remove(episode)
            if episode.events[0].kind == END:  # ended before asking anything: nothing to play
                self._forget(episode)
                continue
            episode.claimed = True
            return episode
        return None

    def next_event(self, episode: Episode, deadline: float, why: str) -> Event:
        """Take the episode's next event, waiting until ``deadline``; past it, end the episode
        as truncated (the simulator stopped answering) and take that end."""
        with self.changed:
            while not episode.events:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._truncate(episode, why)
                    break
                self.changed.wait(left)
            event = episode.events.popleft()
            episode.taken = event
            if event.kind == END:
                self._forget(episode)
            return event

    def answer(self, event: Event, actions: Any) -> None:
        """Hand ``actions`` to the ``get_action`` call that waits for them."""
        event.set_answer(actions)

    def drop(self, episode: Episode, why: str) -> None:
        """Let go of an episode the learner will not play on: its waiting call raises ``why``."""
        with self.changed:
            if not episode.finished:
                episode.finished = why
            self._release(episode, why)
            episode.events.clear()
            self._forget(episode)

    def close(self, why: str = "the learner closed the env") -> None:
        """Refuse every further call; release every waiting ``get_action`` with an error."""
        with self.changed:
            self.closed = why
            for episode in list(self.episodes.values()):
                self.drop(episode, why)
            self._waiting.clear()
            self.changed.notify_all()

    # -- inside --------------------------------------------------------------------

    def _append(self, episode_id: str, kind: str, call: str, observation_dict: Any,
                action_dict: Any = None, allow_empty: bool = False,
                in_spaces: bool = False, owner: Any = None) -> Event:
        source = f"episode {episode_id!r}"
        with self.changed:
            episode = self._running(episode_id, call, owner)
            obs = self._observations(source, episode, call, observation_dict, allow_empty,
                                     in_spaces)
            actions = None if action_dict is None else self._actions(source, obs, action_dict)
            event = Event(kind, obs, episode.rewards, episode.infos, episode.done, actions)
            episode.rewards, episode.infos, episode.gone = {}, {}, episode.gone | episode.done
            episode.done = set()
            episode.last_obs.update(obs)
            for agent in event.done:
                episode.last_obs.pop(agent, None)
            if kind == END:
                episode.finished = ENDED
            episode.events.append(event)
            self._unasked_end(episode)
            self.changed.notify_all()
        return event

    def _truncate(self, episode: Episode, why: str) -> None:
        """Append an end by disconnect or time-out, with the last observations of the live agents."""
        obs = {a: v for a, v in episode.last_obs.items() if a not in episode.done}
        event = Event(END, obs, episode.rewards, episode.infos, episode.done, truncated=True,
                      why=why)
        episode.rewards, episode.infos, episode.done = {}, {}, set()
        episode.finished = why
        self._release(episode, why)
        episode.events.append(event)
        self._unasked_end(episode)
        self.changed.notify_all()

    def _release(self, episode: Episode, why: str) -> None:
        """Make the episode's waiting ``get_action`` raise :class:`EpisodeDroppedError`."""
        for event in [episode.taken, *episode.events]:
            if event is not None and event.kind == DECIDE and not event.answered():
                self.answer(event, EpisodeDroppedError(f"episode {episode.id!r}", why,
                                                       "Start a new episode and go on."))

    def _unasked_end(self, episode: Episode) -> None:
        """An episode that ended before it asked anything, and no copy claimed, has nothing to
        play: forget it now, so that no copy waits for it (call holding ``changed``)."""
        if not episode.claimed and len(episode.events) == 1 and episode.events[0].kind == END:
            self._forget(episode)

    def _forget(self, episode: Episode) -> None:
        key = _key(episode.owner, episode.id)
        if episode.finished and episode.finished != ENDED:  # dropped or truncated
            self._dropped[key] = episode.finished
            while len(self._dropped) > MAX_REMEMBERED_DROPS:
                del self._dropped[next(iter(self._dropped))]
        if self.episodes.get(key) is episode:
            del self.episodes[key]
        if episode in self._waiting:
            self._waiting.remove(episode)
        self.changed.notify_all()

    def _running(self, episode_id: str, call: str, owner: Any = None) -> Episode:
        self._check_open(f"episode {episode_id!r}")
        key = _key(owner, episode_id)
        episode = self.episodes.get(key)
        if episode is None and key in self._dropped:
            raise EpisodeDroppedError(f"episode {episode_id!r}", f"{call}() on an episode the "
                                      f"learner let go of: {self._dropped[key]}",
                                      "Start a new episode and go on.")
        if episode is None:
            raise ExternalEnvError(f"episode {episode_id!r}", f"{call}() names an episode that "
                                   "is not running (never started, or ended)",
                                   "Call start_episode() first and use the id it returns.")
        if episode.finished:
            error = ExternalEnvError if episode.finished == ENDED else EpisodeDroppedError
            raise error(f"episode {episode_id!r}", f"{call}() after the episode "
                                   f"ended: {episode.finished}", "Start a new episode.")
        return episode

    def _check_open(self, source: str) -> None:
        if self.closed:
            raise ExternalEnvError(source, f"{self.name} is closed ({self.closed})",
                                   "Connect to (or make) a new one.")

    def _check_agent(self, source: str, episode: Episode, call: str, agent: AgentID) -> None:
        if agent not in self.observation_spaces:
            raise ExternalEnvError(source, f"{call}() got the unknown agent {agent!r}",
                                   f"Use the declared agents: {self.possible_agents}.")
        if agent in episode.gone:
            raise ExternalEnvError(source, f"{call}() names agent {agent!r}, which is done in "
                                   "this episode", "A done agent takes no part in the rest "
                                   "of its episode.")

    def _observations(self, source: str, episode: Episode, call: str, observation_dict: Any,
                      allow_empty: bool, in_spaces: bool = False) -> dict[AgentID, Any]:
        obs = _mapping(source, "observation_dict", observation_dict)
        if not obs and not allow_empty:
            raise ExternalEnvError(source, f"{call}() got no observation", "Pass the "
                                   "observation of each agent that decides now.")
        for agent, value in obs.items():
            self._check_agent(source, episode, call, agent)
            if agent in episode.done:
                raise ExternalEnvError(source, f"{call}() got an observation of agent "
                                       f"{agent!r}, which log_returns() said is done",
                                       "Leave done agents out of the observation dicts.")
            space = self.observation_spaces[agent]
            if not in_spaces and not in_space(space, value):
                raise ExternalEnvError(source, f"{call}() got the observation {value!r:.80} for "
                                       f"agent {agent!r}, which is not in {space}",
                                       "Send observations inside the agent's observation space "
                                       "(declared when the simulator was made or connected).")
        return dict(obs)

    def _actions(self, source: str, obs: Mapping[AgentID, Any], action_dict: Any) -> dict:
        actions = _mapping(source, "action_dict", action_dict)
        if set(actions) != set(obs):
            raise ExternalEnvError(source, f"log_action() got actions for {sorted(map(str, actions))} "
                                   f"and observations for {sorted(map(str, obs))}",
                                   "Log one action for each agent observed.")
        for agent, action in actions.items():
            space = self.action_spaces[agent]
            if not in_space(space, action):
                raise ExternalEnvError(source, f"log_action() got the action {action!r:.80} for "
                                       f"agent {agent!r}, which is not in {space}",
                                       "Log actions inside the agent's action space.")
        return dict(actions)

    def _reward(self, source: str, episode: Episode, agent: AgentID, reward: Any) -> float:
        self._check_agent(source, episode, "log_returns", agent)
        if isinstance(reward, (bool, np.bool_)) or not isinstance(reward, (int, float, np.number)) \
                or not math.isfinite(float(reward)):
            raise ExternalEnvError(source, f"log_returns() got the reward {reward!r:.80} for agent "
                                   f"{agent!r}", "Pass a finite number per agent.")
        return float(reward)


def _mapping(source: str, what: str, value: Any) -> Mapping[AgentID, Any]:
    if not isinstance(value, Mapping):
        raise ExternalEnvError(source, f"{what} must be a dict keyed by agent, got "
                               f"{type(value).__name__}", "Pass {agent_id: value, ...}.")
    return value
