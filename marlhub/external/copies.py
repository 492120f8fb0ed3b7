"""One copy of an external env: a hub env whose episodes are played by simulators that call in.

``reset()`` claims the next episode a simulator started that asks for a
decision (waiting up to ``timeout``) and returns the observations of the
agents that asked; ``step(actions)`` hands those actions to the waiting
``get_action`` and returns the simulator's next request:

* observations: exactly the agents that ask for a decision now (or, in the
  step that ends the episode, the final observations);
* rewards: everything ``log_returns`` logged since the last step, summed
  (0.0 for an agent that decides and got none); rewards logged before the
  first decision come with the first step;
* ``terminateds``: the agents ``log_returns`` said are done; at
  ``end_episode`` every agent and ``__all__``. A simulator that disconnects
  or stops answering for ``timeout`` seconds ends the episode truncated,
  with the last observations it sent;
* infos: what ``log_returns`` logged, and ``infos[agent]["off_policy_action"]``
  for the agents whose action the simulator took itself (``log_action``): the
  action the learner sends for them is ignored. Infos logged for agents that
  do not decide now go to ``infos["__common__"]["agents"]``.

External simulators cannot be seeded: ``reset(seed=...)`` is taken and has no
effect (``metadata["reproducible"]`` is False). A reset in the middle of an
episode drops it; the simulator's waiting call raises.

Example:
    >>> import threading, gymnasium as gym
    >>> from marlhub.external.episodes import EpisodeBook
    >>> book = EpisodeBook(["a"], {"a": gym.spaces.Discrete(5)}, {"a": gym.spaces.Discrete(2)})
    >>> def simulator():
    ...     episode = book.start_episode()
    ...     action = book.get_action(episode, {"a": 0})["a"]
    ...     book.log_returns(episode, {"a": 1.0})
    ...     book.end_episode(episode, {"a": 1 + action})
    >>> threading.Thread(target=simulator).start()
    >>> env = ExternalCopy(book, timeout=5.0)
    >>> env.reset()
    ({'a': 0}, {'a': {}})
    >>> env.step({"a": 1})
    ({'a': 2}, {'a': 1.0}, {'a': True, '__all__': True}, {'__all__': False}, {'a': {}})
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Optional

from marlhub.core import ALL, COMMON, AgentID, MultiAgentEnv
from marlhub.episode.actions import ActionChecker, action_masks
from marlhub.episode.prechecked import actions_are_prechecked
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import ExternalTimeoutError
from marlhub.external.episodes import DECIDE, END, LOGGED, Episode, EpisodeBook, Event

__all__ = ["DEFAULT_TIMEOUT", "OFF_POLICY_ACTION", "ExternalCopy"]

#: How long ``reset`` and ``step`` wait for a simulator's request, unless told otherwise.
DEFAULT_TIMEOUT = 60.0
#: The info key of an action the simulator took itself.
OFF_POLICY_ACTION = "off_policy_action"


class ExternalCopy(MultiAgentEnv):
    """A hub env whose episodes come from the simulators writing into ``book``.

    Args:
        book: the episodes (:class:`~marlhub.external.episodes.EpisodeBook`).
        timeout: seconds ``reset`` waits for an episode and ``step`` for a request.
        index: the copy's index in its vector env (for messages).
        name: how the env is named in messages.
        waiting_for: says who should be calling in, for the time-out message.
        on_close: called by :meth:`close` (the single env closes what feeds it).
    """

    metadata = {"render_modes": [], "reproducible": False}
    #: Where the learner listens for simulators (``external/`` ids), else None.
    address: Optional[str] = None

    def __init__(self, book: EpisodeBook, *, timeout: float = DEFAULT_TIMEOUT, index: int = 0,
                 name: str = "ExternalCopy", waiting_for: Callable[[], str] = lambda: "",
                 on_close: Optional[Callable[[], None]] = None) -> None:
        super().__init__()
        self.book = book
        self.timeout = float(timeout)
        self.index = index
        self.name = name
        self.waiting_for = waiting_for
        self.on_close = on_close
        self.possible_agents = list(book.possible_agents)
        self.observation_spaces = dict(book.observation_spaces)
        self.action_spaces = dict(book.action_spaces)
        self.agents = []
        self.episode: Optional[Episode] = None
        self.event: Optional[Event] = None  # the last event returned
        self.answered = False  # its actions were handed over (deliver())
        self.deadline = 0.0
        self._checker = ActionChecker(self.action_spaces.__getitem__)
        self._carry: dict[AgentID, float] = {}
        self._live: set[AgentID] = set()

    @property
    def episode_id(self) -> Optional[str]:
        """The id of the episode this copy plays (None before the first reset)."""
        return None if self.episode is None else self.episode.id

    def reset(self, *, seed: Optional[int] = None,
              options: Optional[dict[str, Any]] = None) -> tuple[dict, dict]:
        """Claim the next episode that asks for a decision; return its first request.

        Raises:
            ExternalTimeoutError: no simulator started an episode that asked within ``timeout``.
        """
        self.let_go(f"the learner reset copy {self.index} in the middle of the episode")
        episode = self.book.claim(self.timeout)
        if episode is None:
            raise self.no_episode_error()
        self.episode, self._carry, self._live = episode, {}, set()
        event = self.book.next_event(episode, time.monotonic(), "")  # claimed: one is in
        obs, _, _, _, infos = self._result(event)
        self._carry = dict(event.rewards)  # logged before the first decision: the next step's
        return obs, infos

    def no_episode_error(self) -> ExternalTimeoutError:
        """The error of a reset for which no episode came in time."""
        hint = self.waiting_for()
        return ExternalTimeoutError(
            f"copy {self.index} of {self.name}", f"no simulator started an episode that asked "
            f"for a decision within timeout={self.timeout:g} s" + (f" ({hint})" if hint else ""),
            "Start simulators that call start_episode() and get_action(), run as many concurrent "
            "episodes as copies (or use recv() to take whichever copies are ready), or raise "
            "'timeout'.")

    def let_go(self, why: str) -> None:
        """Drop the episode if it is still running (its simulator's waiting call raises ``why``)."""
        if self.episode is not None and self.event is not None and self.event.kind != END:
            self.book.drop(self.episode, why)
        self.episode, self.event = None, None

    def deliver(self, action_dict: Any) -> None:
        """Hand the actions to the waiting ``get_action`` (checked unless pre-checked), and
        start the time-out for the simulator's next request."""
        if self.answered:
            return
        event = self.event
        require_running(self.name, NOT_RESET if event is None else
                        EPISODE_OVER if event.kind == END else None)
        assert event is not None and self.episode is not None
        if actions_are_prechecked():  # checked once, by the vector env
            actions = action_dict
        else:
            actors = list(event.obs)
            actions = self._checker.check_dict(
                f"copy {self.index} of {self.name}", action_dict, actors=actors,
                possible_agents=self.possible_agents,
                masks=action_masks(actors, event.obs, event.infos))
        if event.kind == DECIDE:
            self.book.answer(event, dict(actions))
        self.answered = True
        self.deadline = time.monotonic() + self.timeout

    def ready(self, now: Optional[float] = None) -> bool:
        """Whether :meth:`step` returns without waiting (call holding ``book.changed``;
        ``now``: ``time.monotonic()``, when the caller has it)."""
        return self.episode is not None and (bool(self.episode.events) or (
            time.monotonic() if now is None else now) >= self.deadline)

    def step(self, action_dict: Any) -> tuple[dict, dict, dict, dict, dict]:  # type: ignore[override]
        """Answer the request with ``action_dict``; return the simulator's next request."""
        self.deliver(action_dict)
        assert self.episode is not None
        why = (f"the simulator did not answer within timeout={self.timeout:g} s (the learner "
               f"truncated the episode)")
        event = self.book.next_event(self.episode, self.deadline, why)
        return self._result(event)

    def _result(self, event: Event) -> tuple[dict, dict, dict, dict, dict]:
        self.event, self.answered = event, False
        obs = event.obs
        rewards = self._carry
        self._carry = {}
        for agent, reward in event.rewards.items():
            rewards[agent] = rewards.get(agent, 0.0) + reward
        for agent in obs:
            rewards.setdefault(agent, 0.0)
        infos: dict[Any, Any] = {agent: dict(event.infos.get(agent, {})) for agent in obs}
        others = {a: i for a, i in event.infos.items() if a not in obs}
        if others:
            infos[COMMON] = {"agents": others}
        if event.kind == LOGGED:
            assert event.actions is not None
            for agent, action in event.actions.items():
                infos[agent][OFF_POLICY_ACTION] = action
        # Keyed in possible_agents' order (sets have none that holds across processes).
        terminateds: dict[Any, bool] = {a: True for a in self.possible_agents if a in event.done}
        truncateds: dict[Any, bool] = {}
        self._live = (self._live | set(obs)) - event.done
        if event.kind == END:
            ended = truncateds if event.truncated else terminateds
            for agent in self.possible_agents:
                if agent in self._live:
                    ended[agent] = True
            self._live = set()
            if event.truncated:
                infos.setdefault(COMMON, {})["truncated_because"] = event.why
        terminateds[ALL] = event.kind == END and not event.truncated
        truncateds[ALL] = event.kind == END and event.truncated
        self.agents = [a for a in self.possible_agents if a in self._live]
        return dict(obs), rewards, terminateds, truncateds, infos

    def close(self) -> None:
        """Drop the running episode; then call ``on_close``."""
        self.let_go("the learner closed the env")
        if self.on_close is not None:
            on_close, self.on_close = self.on_close, None
            on_close()

    def __repr__(self) -> str:
        return f"ExternalCopy({self.name}, index={self.index})"
