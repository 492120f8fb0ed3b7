"""The one seeded episode of random legal actions, played by check, run, probes and lockstep.

:class:`RandomEpisode` resets an env with a seed, then sends each actor (an
agent of the last observation dict that is not done in it) one random legal
action, drawn by an :class:`~marlhub.spaces.ActionSampler` seeded with the
same seed, within the agent's action mask when its observation or info has
one. It yields a :class:`Step` after the reset and after every step, until
``__all__`` or ``max_steps``. ``marlhub check``, ``marlhub run``, the
lockstep comparisons and the adapters' probes all play it, so under one seed
they all play the same episodes: episode ``i`` of a run seeded ``s`` is
``RandomEpisode(env, episode_seed(s, i))``.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> episode = RandomEpisode(RockPaperScissors(), seed=0)
    >>> steps = list(episode)
    >>> len(steps), steps[-1].over, len(episode.actions)
    (11, True, 10)
    >>> [s.actions for s in RandomEpisode(RockPaperScissors(), seed=0)][1:3] == episode.actions[:2]
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from marlhub.core import AgentID, MultiAgentDict
from marlhub.episode.status import actors_of, episode_over
from marlhub.spaces import ActionSampler, find_action_mask

__all__ = ["Chooser", "RandomEpisode", "Step", "action_space_getter", "episode_seed",
           "random_actions"]

#: ``choose(actors, obs, infos) -> action dict``, to replace the random choice.
Chooser = Callable[[list[AgentID], Mapping[Any, Any], Mapping[Any, Any]], dict[AgentID, Any]]


def episode_seed(seed: Optional[int], episode: int) -> Optional[int]:
    """Return the seed of episode ``episode`` in a run seeded ``seed`` (None stays None).

    Example:
        >>> episode_seed(10, 3), episode_seed(None, 3)
        (13, None)
    """
    return None if seed is None else seed + episode


def action_space_getter(env: Any) -> Callable[[AgentID], Any]:
    """Return ``agent -> action space`` for any hub env (getter, or the ``action_spaces`` dict)."""
    getter = getattr(env, "get_action_space", None)
    if callable(getter):
        return getter
    return env.action_spaces.__getitem__


def random_actions(actors: list[AgentID], obs: Mapping[Any, Any], infos: Mapping[Any, Any],
                   space_of: Callable[[AgentID], Any], sampler: ActionSampler) -> dict[AgentID, Any]:
    """Return one random legal action for each actor (its action mask honoured).

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> random_actions(["a"], {"a": {"action_mask": np.array([0, 1])}}, {},
        ...                {"a": gym.spaces.Discrete(2)}.__getitem__, ActionSampler(0))
        {'a': 1}
    """
    actions = {}
    for agent in actors:
        info = infos.get(agent) if isinstance(infos, Mapping) else None
        mask = find_action_mask(obs.get(agent), info if isinstance(info, Mapping) else None)
        actions[agent] = sampler.sample(agent, space_of(agent), mask)
    return actions


@dataclass
class Step:
    """What one ``reset`` (``index`` 0) or ``step`` of a :class:`RandomEpisode` returned.

    Attributes:
        index: 0 for the reset, then 1, 2, ...
        actions: the action dict sent (None for the reset).
        obs, rewards, terminateds, truncateds, infos: the env's dicts (rewards and
            the done dicts are empty after the reset).
        actors: the agents that act next.
        over: whether ``__all__`` was True.
    """

    index: int
    actions: Optional[dict[AgentID, Any]]
    obs: Mapping[Any, Any]
    rewards: Mapping[Any, Any] = field(default_factory=dict)
    terminateds: Mapping[Any, Any] = field(default_factory=dict)
    truncateds: Mapping[Any, Any] = field(default_factory=dict)
    infos: Mapping[Any, Any] = field(default_factory=dict)
    actors: list[AgentID] = field(default_factory=list)
    over: bool = False


def _read_reset(result: Any) -> tuple[MultiAgentDict, MultiAgentDict]:
    obs, infos = result
    return obs, infos


def _read_step(result: Any) -> tuple[Any, ...]:
    obs, rewards, terminateds, truncateds, infos = result
    return obs, rewards, terminateds, truncateds, infos


class RandomEpisode:
    """One seeded episode of random legal actions; iterate it for its :class:`Step` s.

    Args:
        env: a hub env (or anything that quacks like one).
        seed: the reset's seed, which also seeds the action sampler.
        max_steps: stop after this many steps (``cut`` is then True); None for no limit.
        reset_kwargs: keywords of ``reset`` besides ``seed`` (``{"options": None}`` by
            default; ``{}`` for envs whose reset takes no ``options``).
        choose: replaces the random choice of actions (see :data:`Chooser`).
        read_reset: turns ``reset``'s return into ``(obs, infos)`` (it may raise to
            reject a malformed return).
        read_step: turns ``step``'s return into the 5-tuple, likewise.

    Attributes:
        sampler: the episode's action sampler.
        actions: every action dict sent so far; the last one is appended before
            ``step`` is called, so it is there when ``step`` raises.
        calling: ``"reset"`` or ``"step"``: the env call under way (or last made).
        cut: the episode stopped at ``max_steps`` before ``__all__``.
        stalled: the episode stopped because nobody was left to act before ``__all__``.
    """

    def __init__(
        self,
        env: Any,
        seed: Optional[int],
        *,
        max_steps: Optional[int] = None,
        reset_kwargs: Optional[Mapping[str, Any]] = None,
        choose: Optional[Chooser] = None,
        read_reset: Callable[[Any], tuple[Any, Any]] = _read_reset,
        read_step: Callable[[Any], tuple[Any, ...]] = _read_step,
    ) -> None:
        self.env = env
        self.seed = seed
        self.max_steps = max_steps
        self.sampler = ActionSampler(seed)
        self.actions: list[dict[AgentID, Any]] = []
        self.calling = "reset"
        self.cut = False
        self.stalled = False
        self._reset_kwargs = {"options": None} if reset_kwargs is None else dict(reset_kwargs)
        self._choose = choose or self._random
        self._read_reset = read_reset
        self._read_step = read_step
        self._space_of: Optional[Callable[[AgentID], Any]] = None

    def _random(self, actors: list[AgentID], obs: Mapping[Any, Any],
                infos: Mapping[Any, Any]) -> dict[AgentID, Any]:
        if self._space_of is None:
            self._space_of = action_space_getter(self.env)
        return random_actions(actors, obs, infos, self._space_of, self.sampler)

    def __iter__(self) -> Iterator[Step]:
        self.calling = "reset"
        obs, infos = self._read_reset(self.env.reset(seed=self.seed, **self._reset_kwargs))
        infos = infos if isinstance(infos, Mapping) else {}
        step = Step(0, None, obs, infos=infos, actors=list(obs))
        yield step
        while True:
            if self.max_steps is not None and step.index >= self.max_steps:
                self.cut = True
                return
            if not step.actors:
                self.stalled = True
                return
            actions = self._choose(step.actors, step.obs, step.infos)
            self.actions.append(actions)
            self.calling = "step"
            obs, rewards, terminateds, truncateds, infos = self._read_step(self.env.step(actions))
            infos = infos if isinstance(infos, Mapping) else {}
            over = episode_over(terminateds, truncateds)
            step = Step(step.index + 1, actions, obs, rewards, terminateds, truncateds, infos,
                        actors_of(obs, terminateds, truncateds), over)
            yield step
            if over:
                return
