"""Simulators that drive, in process: subclass :class:`ExternalMultiAgentEnv`, write ``run()``.

RLlib's ``ExternalMultiAgentEnv`` with its names and meanings: the simulator
declares its agents and spaces, and its ``run()`` is its own loop, calling
``start_episode``, ``get_action`` (blocks until the learner answers),
``log_action`` (it acted itself), ``log_returns`` and ``end_episode``.
:func:`from_external` runs ``run()`` on its own thread and gives the learner
a hub env (``num_envs=None``) or a hub vector env whose copies are the
simulator's concurrent episodes (start them from several threads in ``run()``,
or pass ``threads=N`` to run ``run()`` N times side by side).

Example:
    >>> import gymnasium as gym
    >>> class Counter(ExternalMultiAgentEnv):
    ...     possible_agents = ["a"]
    ...     observation_spaces = {"a": gym.spaces.Discrete(10)}
    ...     action_spaces = {"a": gym.spaces.Discrete(2)}
    ...     def run(self):
    ...         while True:
    ...             episode, count = self.start_episode(), 0
    ...             for _ in range(3):
    ...                 count += self.get_action(episode, {"a": count})["a"]
    ...                 self.log_returns(episode, {"a": 1.0})
    ...             self.end_episode(episode, {"a": count})
    >>> env = from_external(Counter(), timeout=5.0)
    >>> env.reset()
    ({'a': 0}, {'a': {}})
    >>> env.step({"a": 1})[:3]
    ({'a': 1}, {'a': 1.0}, {'__all__': False})
    >>> env.close()
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Mapping
from typing import Any, Optional

import gymnasium as gym

from marlhub.core import AgentID
from marlhub.errors import EpisodeDroppedError, ExternalEnvError
from marlhub.external.copies import DEFAULT_TIMEOUT, ExternalCopy
from marlhub.external.episodes import DEFAULT_MAX_EPISODES, EpisodeBook
from marlhub.external.vector import ExternalVectorEnv
from marlhub.vector.autoreset import NEXT_STEP

__all__ = ["ExternalMultiAgentEnv", "from_external"]


class ExternalMultiAgentEnv:
    """A simulator that runs its own loop and asks for actions (RLlib's class of that name).

    Declare ``possible_agents``, ``observation_spaces`` and ``action_spaces``
    (as class attributes, or pass them to the constructor) and write :meth:`run`.

    Args:
        possible_agents: every agent that may appear, in order.
        observation_spaces, action_spaces: each agent's spaces.
    """

    possible_agents: list[AgentID] = []
    observation_spaces: Mapping[AgentID, gym.Space] = {}
    action_spaces: Mapping[AgentID, gym.Space] = {}

    def __init__(self, possible_agents: Optional[list[AgentID]] = None,
                 observation_spaces: Optional[Mapping[AgentID, gym.Space]] = None,
                 action_spaces: Optional[Mapping[AgentID, gym.Space]] = None) -> None:
        if possible_agents is not None:
            self.possible_agents = list(possible_agents)
        if observation_spaces is not None:
            self.observation_spaces = dict(observation_spaces)
        if action_spaces is not None:
            self.action_spaces = dict(action_spaces)
        self._book: Optional[EpisodeBook] = None

    def run(self) -> None:
        """The simulator's loop (override it); :func:`from_external` runs it on a thread."""
        raise NotImplementedError("Override run() with the simulator's own loop.")

    def _episodes(self) -> EpisodeBook:
        book = getattr(self, "_book", None)  # a subclass's __init__ may skip ours
        if book is None:
            raise ExternalEnvError(type(self).__name__, "it is not attached to a learner",
                                   "Pass it to marlhub.external.from_external(sim) first; "
                                   "that runs run() on its own thread.")
        return book

    def start_episode(self, episode_id: Optional[str] = None,
                      training_enabled: bool = True) -> str:
        """Start an episode; return its id (a new one for None)."""
        return self._episodes().start_episode(episode_id, training_enabled)

    def get_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> dict:
        """Return the learner's actions for the agents in ``observation_dict`` (blocks)."""
        return self._episodes().get_action(episode_id, observation_dict)

    def log_action(self, episode_id: str, observation_dict: Mapping[AgentID, Any],
                   action_dict: Mapping[AgentID, Any]) -> None:
        """Record actions the simulator took itself for these observations (off-policy)."""
        self._episodes().log_action(episode_id, observation_dict, action_dict)

    def log_returns(self, episode_id: str, reward_dict: Mapping[AgentID, Any],
                    info_dict: Optional[Mapping[AgentID, Any]] = None,
                    done_dict: Optional[Mapping[AgentID, Any]] = None) -> None:
        """Add rewards (summed into the next step), infos, and agents that are done."""
        self._episodes().log_returns(episode_id, reward_dict, info_dict, done_dict)

    def end_episode(self, episode_id: str, observation_dict: Mapping[AgentID, Any]) -> None:
        """End the episode (terminated) with the agents' final observations."""
        self._episodes().end_episode(episode_id, observation_dict)


class _Runner:
    """Runs ``sim.run()`` on ``threads`` daemon threads; remembers how each one ended.

    A ``run()`` that raises :class:`~marlhub.errors.EpisodeDroppedError` (the learner let go
    of its episode: a reset mid-episode, a time-out) is called again, as a simulator's
    loop would start its next episode.
    """

    def __init__(self, sim: ExternalMultiAgentEnv, book: EpisodeBook, threads: int) -> None:
        self.sim = sim
        self.book = book
        self.ended: list[str] = []
        self.threads = [threading.Thread(target=self._run, name=f"marlhub-external-{k}",
                                         daemon=True) for k in range(threads)]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        try:
            while True:
                try:
                    self.sim.run()
                    break
                except EpisodeDroppedError:  # the learner let go of an episode: run on
                    if self.book.closed:
                        raise
            self.ended.append("run() returned")
        except ExternalEnvError as exc:
            self.ended.append(f"run() raised {exc}")
        except Exception as exc:  # the learner's time-out message says it
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            self.ended.append(f"run() raised {last}")

    def status(self) -> str:
        """Why no request came: the threads that ended and how."""
        if not self.ended:
            return ""
        return f"{len(self.ended)} of {len(self.threads)} threads of the simulator ended: " \
               + "; ".join(self.ended[:3])

    def stop(self) -> None:
        for thread in self.threads:
            thread.join(timeout=1.0)


def from_external(sim: ExternalMultiAgentEnv, num_envs: Optional[int] = None, *,
                  threads: int = 1, timeout: float = DEFAULT_TIMEOUT,
                  max_episodes: int = DEFAULT_MAX_EPISODES, autoreset_mode: Any = NEXT_STEP,
                  batch_size: Optional[int] = None) -> Any:
    """Run ``sim.run()`` on its own thread(s); return the learner's side of it.

    Args:
        sim: the simulator (an :class:`ExternalMultiAgentEnv`).
        num_envs: None for one hub env (one episode at a time), else a hub vector env of
            that many concurrent episodes (:class:`~marlhub.external.vector.ExternalVectorEnv`).
        threads: how many threads run ``sim.run()`` side by side.
        timeout: seconds ``reset``/``step`` wait for a request (then: an error when no
            episode came, a truncated episode when its simulator went silent).
        max_episodes: how many episodes may run at once.
        autoreset_mode, batch_size: the vector env's (see :mod:`marlhub.vector.sources.in_process`).

    Raises:
        ExternalEnvError: ``sim`` declares no agents, or a space that is missing.
    """
    agents = list(getattr(sim, "possible_agents", None) or [])
    missing = [a for a in agents if a not in sim.observation_spaces or a not in sim.action_spaces]
    if not agents or missing:
        raise ExternalEnvError(type(sim).__name__, "it declares no agents" if not agents else
                               f"it declares no spaces for {missing}", "Set possible_agents, "
                               "observation_spaces and action_spaces (class attributes, or "
                               "the constructor's arguments).")
    name = type(sim).__name__
    book = EpisodeBook(agents, sim.observation_spaces, sim.action_spaces,
                       max_episodes=max_episodes, name=name)
    sim._book = book
    runner = _Runner(sim, book, threads)

    def stop() -> None:
        book.close()
        runner.stop()

    if num_envs is None:
        return ExternalCopy(book, timeout=timeout, name=name, waiting_for=runner.status,
                            on_close=stop)
    return ExternalVectorEnv(book, num_envs, timeout=timeout, autoreset_mode=autoreset_mode,
                             batch_size=batch_size, env_id=None, waiting_for=runner.status,
                             on_close=stop)
