"""One world of a server: a hub env, its episode, and the connections joined to it.

Every reset and step of the env is a :class:`Transition`, handed to each
joined connection's :class:`Inbox`, which keeps that connection's view: its
agents' latest observations, their rewards summed since the connection last
stepped, their done flags. A connection that joined for some of the agents
(dm_env_rpc's one connection per agent) sends its agents' actions; the world
buffers them and steps the env once every actor has one
(:meth:`World.offer`). A connection of marlhub's own client is *direct*: it
drives the env alone, its requests go to ``env.reset`` / ``env.step`` as they
are, so the env's own errors and results come back unchanged.

All methods are called with the world's ``lock`` held (a ``Condition`` that
connections waiting for other agents wait on).

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> world = World("w1", RockPaperScissors(), env_id="rock_paper_scissors", config={})
    >>> inbox = world.join(["player1", "player2"], direct=False)
    >>> with world.lock:
    ...     world.reset(None, None)
    ...     print(world.actors, world.offer(inbox, {"player1": 0}), world.offer(inbox, {"player2": 1}))
    ['player1', 'player2'] False True
    >>> inbox.rewards
    {'player1': -1.0, 'player2': 1.0}
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from marlhub.adapters.remote.codec import UnmappableSpace, describe_space, encode
from marlhub.adapters.remote.layout import Layout, agent_names
from marlhub.core import ALL
from marlhub.episode.actions import check_action
from marlhub.episode.status import actors_of, episode_over, flag
from marlhub.errors import RemoteRequestError
from marlhub.spaces import find_action_mask

__all__ = ["Inbox", "Transition", "World", "describe_world"]


@dataclass
class Transition:
    """What one ``reset`` (``rewards`` etc. None) or ``step`` of the env returned.

    ``raw`` holds the return value itself when it was not the 2-tuple (reset)
    or 5-tuple (step) the protocol asks for; the fields are then empty.
    """

    obs: Any
    infos: Any
    agents: list[Any]
    rewards: Any = None
    terminateds: Any = None
    truncateds: Any = None
    raw: Any = None
    is_reset: bool = False

    @property
    def over(self) -> bool:
        """Whether ``__all__`` is True in either done dict."""
        terminateds, truncateds = self.terminateds, self.truncateds
        if not ((type(terminateds) is dict or isinstance(terminateds, Mapping))
                and (type(truncateds) is dict or isinstance(truncateds, Mapping))):
            return False
        return episode_over(terminateds, truncateds)


@dataclass
class Inbox:
    """One joined connection's view of the world (see the module docstring).

    Attributes:
        agents: the connection's agents.
        direct: the connection drives the env alone (marlhub's client).
        layout: its tensors.
        episode: the world episode the connection last started (-1: none yet).
        generation: the world transition it last saw.
        fresh: its next step starts a sequence (dm_env_rpc's non-RUNNING state).
        ended: it was told the sequence ended (a TERMINATED state).
        interrupted: the world was reset under it; its next step says INTERRUPTED.
    """

    agents: list[Any]
    direct: bool
    layout: Layout
    episode: int = -1
    generation: int = -1
    fresh: bool = True
    ended: bool = False
    interrupted: bool = False
    rewards: dict[Any, float] = field(default_factory=dict)
    obs: dict[Any, Any] = field(default_factory=dict)
    infos: dict[Any, Any] = field(default_factory=dict)
    terminated: dict[Any, bool] = field(default_factory=dict)
    truncated: dict[Any, bool] = field(default_factory=dict)

    def absorb(self, transition: Transition, *, new_episode: bool) -> None:
        """Fold one transition into the view (a new episode clears it first)."""
        if new_episode:
            self.rewards, self.obs, self.infos = {}, {}, {}
            self.terminated, self.truncated = {}, {}
        mine = set(self.agents)
        for table, target in ((transition.obs, self.obs), (transition.infos, self.infos)):
            if isinstance(table, Mapping):
                target.update((a, v) for a, v in table.items() if a in mine)
        if isinstance(transition.rewards, Mapping):
            for agent, reward in transition.rewards.items():
                if agent in mine:
                    try:
                        self.rewards[agent] = self.rewards.get(agent, 0.0) + float(reward)
                    except (TypeError, ValueError):
                        pass  # a reward that is no number: the JSON record still has it
        for table, target in ((transition.terminateds, self.terminated),
                              (transition.truncateds, self.truncated)):
            if isinstance(table, Mapping):
                everyone = flag(table, ALL)
                for agent in self.agents:
                    target[agent] = everyone or flag(table, agent) or target.get(agent, False)

    def take_rewards(self) -> dict[Any, float]:
        """Return the summed rewards and start summing again."""
        rewards, self.rewards = self.rewards, {}
        return rewards


def describe_world(env: Any, env_id: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """Return what a server announces of a world (the ``marlhub.world`` property).

    Raises:
        RemoteRequestError: an agent id or a space has no dm_env_rpc form.
    """
    agents = list(env.possible_agents)
    try:
        agent_names(agents)
        observation = {a: env.get_observation_space(a) for a in agents}
        action = {a: env.get_action_space(a) for a in agents}
        Layout(agents, observation, action)  # every space must map to tensors
        spaces = {"observation_spaces": [describe_space(observation[a]) for a in agents],
                  "action_spaces": [describe_space(action[a]) for a in agents]}
    except UnmappableSpace as exc:
        raise RemoteRequestError(
            "CreateWorld", f"{env_id!r} cannot be served over dm_env_rpc: {exc}",
            code="FAILED_PRECONDITION",
            fix="Serve an env whose spaces are Discrete, Box, MultiDiscrete, MultiBinary, Text "
                "or Dict / Tuple of those, and whose agent ids are str or int.") from exc
    return {"env_id": env_id, "config": encode(dict(config)), "possible_agents": encode(agents),
            **spaces, "metadata": encode(dict(getattr(env, "metadata", {}) or {})),
            "render_mode": encode(getattr(env, "render_mode", None))}


class World:
    """A hub env hosted for dm_env_rpc connections (see the module docstring).

    Args:
        name: the world's name.
        env: the hub env.
        env_id: the registry id it was made from.
        config: the config it was made with.
    """

    def __init__(self, name: str, env: Any, *, env_id: str, config: Mapping[str, Any]) -> None:
        self.name = name
        self.env = env
        self.env_id = env_id
        self.config = dict(config)
        self.description = describe_world(env, env_id, config)
        self.possible_agents = list(env.possible_agents)
        self.observation_spaces = {a: env.get_observation_space(a) for a in self.possible_agents}
        self.action_spaces = {a: env.get_action_space(a) for a in self.possible_agents}
        self.lock = threading.Condition()
        self.inboxes: list[Inbox] = []
        self.episode = -1
        self.generation = 0
        self.last: Optional[Transition] = None
        self._actors: Optional[list[Any]] = []
        self.buffer: dict[Any, Any] = {}
        self.destroyed = False

    @property
    def actors(self) -> list[Any]:
        """The agents that act next: in the last observation dict and not done."""
        if self._actors is None:
            last = self.last
            if last is None or not isinstance(last.obs, Mapping) or last.over:
                self._actors = []
            else:
                terminateds = last.terminateds if isinstance(last.terminateds, Mapping) else {}
                truncateds = last.truncateds if isinstance(last.truncateds, Mapping) else {}
                self._actors = actors_of(last.obs, terminateds, truncateds)
        return self._actors

    @property
    def over(self) -> bool:
        """Whether no episode runs (never reset, or ``__all__`` was True)."""
        return self.last is None or self.last.over

    # -- joining -------------------------------------------------------------------

    def join(self, agents: list[Any], *, direct: bool, prefixed: bool = True) -> Inbox:
        """Add a connection for ``agents``; return its inbox.

        Raises:
            RemoteRequestError: a direct connection where others are joined, or any
                connection where a direct one is.
        """
        if any(inbox.direct for inbox in self.inboxes) or (direct and self.inboxes):
            raise RemoteRequestError(
                "JoinWorld", f"world {self.name!r} is driven directly by one connection "
                "(marlhub's client), which shares it with no other",
                fix="Create a world of your own with CreateWorld.")
        layout = Layout(self.possible_agents, self.observation_spaces, self.action_spaces,
                        agents=agents, prefixed=prefixed)
        inbox = Inbox(layout.agents, direct, layout, fresh=not direct)
        if self.last is not None:
            inbox.absorb(self.last, new_episode=True)
        self.inboxes.append(inbox)
        return inbox

    def leave(self, inbox: Inbox) -> None:
        """Remove a connection; its buffered actions are dropped."""
        if inbox in self.inboxes:
            self.inboxes.remove(inbox)
            for agent in inbox.agents:
                self.buffer.pop(agent, None)
            self.lock.notify_all()

    # -- the env ---------------------------------------------------------------------

    def reset(self, seed: Any, options: Any, *, caller: Optional[Inbox] = None) -> None:
        """Reset the env; connections in the old episode are told it was interrupted."""
        result = self.env.reset(seed=seed, options=options)
        for inbox in self.inboxes:
            if inbox is not caller and not inbox.fresh and not inbox.ended:
                inbox.interrupted = True
        self.episode += 1
        agents = _agents(self.env)
        if isinstance(result, tuple) and len(result) == 2:
            transition = Transition(result[0], result[1], agents, is_reset=True)
        else:
            transition = Transition({}, {}, agents, raw=result, is_reset=True)
        self._record(transition, new_episode=True)

    def step(self, action_dict: Any) -> Transition:
        """Step the env with ``action_dict`` as it is (a direct connection's step)."""
        result = self.env.step(action_dict)
        if isinstance(result, tuple) and len(result) == 5:
            obs, rewards, terminateds, truncateds, infos = result
            transition = Transition(obs, infos, _agents(self.env), rewards, terminateds, truncateds)
        else:
            transition = Transition({}, {}, _agents(self.env), raw=result)
        self._record(transition, new_episode=False)
        return transition

    def _record(self, transition: Transition, *, new_episode: bool) -> None:
        self.last = transition
        self.generation += 1
        self.buffer = {}
        self._actors = None
        waiting = False
        for inbox in self.inboxes:
            if not inbox.direct:  # a direct connection reads the transition itself
                inbox.absorb(transition, new_episode=new_episode)
                waiting = True
        if waiting:  # only connections that are not direct wait for the world
            self.lock.notify_all()

    def mask_of(self, agent: Any) -> Any:
        """The agent's action mask from its last observation or info (None without one)."""
        last = self.last
        if last is None or not isinstance(last.obs, Mapping):
            return None
        info = last.infos.get(agent) if isinstance(last.infos, Mapping) else None
        return find_action_mask(last.obs.get(agent), info if isinstance(info, Mapping) else None)

    def offer(self, inbox: Inbox, actions: Mapping[Any, Any]) -> bool:
        """Buffer a joined connection's actions; step the env once every actor has one.

        Returns whether the env was stepped. Each action is checked against its
        agent's space and mask first, so a bad one is refused alone.

        Raises:
            ActionError: an action for an agent that is not the connection's, not
                an actor now, already has one waiting, or is not legal.
        """
        from marlhub.errors import ActionError

        for agent, action in actions.items():
            why = ("it is not one of this connection's agents" if agent not in inbox.agents
                   else "it does not act now" if agent not in self.actors
                   else "it already has an action waiting" if agent in self.buffer else None)
            if why is not None:
                raise ActionError(agent, action, expected=f"actions only for the actors "
                                  f"{[a for a in self.actors if a not in self.buffer]}",
                                  fix=f"{agent!r}: {why}.")
            check_action(agent, self.action_spaces[agent], action, self.mask_of(agent))
        self.buffer.update(actions)
        if self.actors and all(a in self.buffer for a in self.actors):
            pending, self.buffer = {a: self.buffer[a] for a in self.actors}, {}
            try:
                self.step(pending)
            except Exception:
                self.lock.notify_all()
                raise
            return True
        return False

    def must_act(self, inbox: Inbox) -> list[Any]:
        """The connection's agents that act now and have no action waiting."""
        return [a for a in inbox.agents if a in self.actors and a not in self.buffer]

    def close(self) -> None:
        """Close the env; waiting connections wake up and find the world gone."""
        self.destroyed = True
        self.lock.notify_all()
        try:
            self.env.close()
        except Exception:  # closing is best effort
            pass


def _agents(env: Any) -> Any:
    agents = getattr(env, "agents", None)
    return list(agents) if isinstance(agents, (list, tuple)) else agents
