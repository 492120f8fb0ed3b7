"""The hub protocol: a dict-based multi-agent env, call-compatible with RLlib's.

:class:`MultiAgentEnv` has the names and signatures of
``ray.rllib.env.multi_agent_env.MultiAgentEnv`` without depending on Ray: an env
written against either runs under the other. ``reset`` and ``step`` return
dicts keyed by agent id; the agents in the observation dict are the ones that
act next; ``"__all__"`` in the done dicts ends the episode for everyone.

Anything that consumes envs (adapters, the conformance suite, the registry)
accepts any object that quacks the same way, see :func:`is_multi_agent_env`.

Example:
    >>> import gymnasium as gym
    >>> class Echo(MultiAgentEnv):
    ...     def __init__(self, config=None):
    ...         super().__init__()
    ...         self.agents = self.possible_agents = ["a", "b"]
    ...         self.observation_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
    ...         self.action_spaces = {a: gym.spaces.Discrete(2) for a in self.agents}
    ...     def reset(self, *, seed=None, options=None):
    ...         super().reset(seed=seed)
    ...         return {"a": 0, "b": 0}, {}
    ...     def step(self, action_dict):
    ...         obs = {"a": action_dict["b"], "b": action_dict["a"]}
    ...         done = {"__all__": True}
    ...         return obs, {"a": 0.0, "b": 0.0}, done, {"__all__": False}, {}
    >>> env = Echo()
    >>> env.get_observation_space("a")
    Discrete(2)
    >>> env.observation_space
    Dict('a': Discrete(2), 'b': Discrete(2))
    >>> env.num_agents, env.max_num_agents, is_multi_agent_env(env)
    (2, 2, True)
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeAlias, Union

import gymnasium as gym

__all__ = [
    "ALL",
    "COMMON",
    "ENV_STATE",
    "AgentID",
    "EnvConfig",
    "MultiAgentDict",
    "MultiAgentEnv",
    "ResetResult",
    "StepResult",
    "is_multi_agent_env",
    "missing_protocol_members",
    "set_grouping_wrapper",
]

#: Key in the terminated and truncated dicts that ends the episode for every agent.
ALL = "__all__"
#: Key in the infos dict for information that belongs to no single agent.
COMMON = "__common__"
#: Key of the global state in a Dict observation space (RLlib's name, used by QMIX).
ENV_STATE = "state"

#: An agent's id: any hashable value (strings in most envs, ints in ``make_multi_agent``'s).
AgentID: TypeAlias = Hashable
#: A dict keyed by agent id: observations, rewards, done flags, infos or actions.
MultiAgentDict: TypeAlias = Dict[AgentID, Any]
#: The config dict an env creator receives (an :class:`~marlhub.context.EnvContext`).
EnvConfig: TypeAlias = Dict[str, Any]
#: What ``reset`` returns: ``(obs, infos)``.
ResetResult: TypeAlias = Tuple[MultiAgentDict, MultiAgentDict]
#: What ``step`` returns: ``(obs, rewards, terminateds, truncateds, infos)``.
StepResult: TypeAlias = Tuple[
    MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict
]


class MultiAgentEnv(gym.Env):
    """An env that hosts several agents, each with its own observations, actions and rewards.

    Subclasses set ``possible_agents`` (every agent that may ever appear),
    ``agents`` (the live ones, kept current during the episode) and either the
    per-agent ``observation_spaces`` / ``action_spaces`` dicts or overrides of
    :meth:`get_observation_space` / :meth:`get_action_space`; then implement
    :meth:`reset` and :meth:`step`.

    ``observation_space`` and ``action_space`` are derived: a ``gym.spaces.Dict``
    keyed by agent, built from the per-agent dicts. Assigning them explicitly
    (RLlib's old API stack) is still supported, and the per-agent getters fall
    back to such a Dict.

    Like RLlib's, this class is a ``gymnasium.Env`` whose ``reset`` and ``step``
    return per-agent dicts instead of one agent's values. mypy checks overrides
    against every base class, so a subclass's ``reset`` and ``step`` carry
    ``# type: ignore[override]`` (the mismatch with ``gymnasium.Env`` is by design).
    """

    # Mappings from every possible agent id to its space (RLlib's names).
    observation_spaces: Optional[Dict[AgentID, gym.Space]] = None
    action_spaces: Optional[Dict[AgentID, gym.Space]] = None
    # Agents whose rewards are arrays (multi-objective envs) -> their reward space; None or
    # an agent left out: one number per step (see marlhub.rewards).
    reward_spaces: Optional[Dict[AgentID, gym.Space]] = None
    # The live agents; may change during an episode. Class-level defaults are
    # replaced by instance lists in __init__ so instances never share them.
    agents: List[AgentID] = []
    # Every agent that may ever appear; fixed for the env's lifetime.
    possible_agents: List[AgentID] = []

    def __init__(self) -> None:
        super().__init__()
        # RLlib's old API stack declared agents through a `_agent_ids` set.
        if not self.agents:
            self.agents = list(getattr(self, "_agent_ids", ()) or ())
        if not self.possible_agents:
            self.possible_agents = list(self.agents)

    # -- the episode --------------------------------------------------------------

    def reset(  # type: ignore[override]
        self,
        *,
        seed: Optional[int] = None,
        options: Optional[dict] = None,
    ) -> ResetResult:
        """Start a new episode and return ``(observations, infos)`` of the first actors.

        The base implementation seeds ``self.np_random`` when a seed is given;
        subclasses call it first and then build their observations.

        Args:
            seed: seeds ``self.np_random``; the same seed and actions must give the
                same episode.
            options: env-specific reset options.
        """
        super().reset(seed=seed, options=options)
        return {}, {}

    def step(self, action_dict: MultiAgentDict) -> StepResult:  # type: ignore[override]
        """Apply one action per actor; return ``(obs, rewards, terminateds, truncateds, infos)``.

        ``action_dict`` holds exactly the agents of the last observation dict.
        The returned obs dict names the agents that act next; rewards may name any
        live agent; the done dicts hold ``"__all__"``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement step(); subclasses of "
            "marlhub.MultiAgentEnv must."
        )

    def render(self) -> Any:
        """Render the env; the base class renders nothing."""
        return None

    # -- spaces -------------------------------------------------------------------

    def get_observation_space(self, agent_id: AgentID) -> gym.Space:
        """Return the observation space of ``agent_id`` (the same object on every call)."""
        return self._space_of(agent_id, "observation_spaces", "_explicit_observation_space")

    def get_action_space(self, agent_id: AgentID) -> gym.Space:
        """Return the action space of ``agent_id`` (the same object on every call)."""
        return self._space_of(agent_id, "action_spaces", "_explicit_action_space")

    def get_reward_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """Return the reward space of ``agent_id``, or None: its reward is one number.

        Multi-objective envs pay an array per agent, one entry per objective, and
        declare its space (``reward_spaces``, or an override of this method); see
        :mod:`marlhub.rewards`.
        """
        return None if self.reward_spaces is None else self.reward_spaces.get(agent_id)

    def _space_of(self, agent_id: AgentID, per_agent: str, explicit: str) -> gym.Space:
        spaces = getattr(self, per_agent)
        if spaces is not None:
            return spaces[agent_id]
        joint = self.__dict__.get(explicit)
        if isinstance(joint, gym.spaces.Dict) and agent_id in joint.spaces:
            return joint[agent_id]
        return joint  # type: ignore[return-value]  # None when no spaces were declared

    @property
    def observation_space(self) -> gym.Space:
        """A ``Dict`` space keyed by agent, unless one was assigned explicitly."""
        return self._joint_space("observation_spaces", "_explicit_observation_space")

    @observation_space.setter
    def observation_space(self, space: gym.Space) -> None:
        self.__dict__["_explicit_observation_space"] = space

    @property
    def action_space(self) -> gym.Space:
        """A ``Dict`` space keyed by agent, unless one was assigned explicitly."""
        return self._joint_space("action_spaces", "_explicit_action_space")

    @action_space.setter
    def action_space(self, space: gym.Space) -> None:
        self.__dict__["_explicit_action_space"] = space

    def _joint_space(self, per_agent: str, explicit: str) -> gym.Space:
        if explicit in self.__dict__:
            return self.__dict__[explicit]
        spaces = getattr(self, per_agent)
        if spaces is None:
            return None  # type: ignore[return-value]  # no spaces declared
        cache_key = f"_joint_{per_agent}"
        cached = self.__dict__.get(cache_key)
        # Rebuild only when the per-agent dict was replaced or resized.
        if cached is None or cached[0] is not spaces or cached[1] != len(spaces):
            # An OrderedDict keeps possible_agents' order (gymnasium sorts a plain dict).
            # Keys are agent ids (any hashable); gymnasium's annotation says str.
            members: OrderedDict[Any, gym.Space] = OrderedDict(
                (a, spaces[a]) for a in self.possible_agents if a in spaces
            )
            joint = gym.spaces.Dict(members)
            cached = (spaces, len(spaces), joint)
            self.__dict__[cache_key] = cached
        return cached[2]

    # -- agents -------------------------------------------------------------------

    @property
    def num_agents(self) -> int:
        """How many agents are live now (``len(agents)``)."""
        return len(self.agents)

    @property
    def max_num_agents(self) -> int:
        """How many agents may ever appear (``len(possible_agents)``)."""
        return len(self.possible_agents)

    def with_agent_groups(
        self,
        groups: Dict[str, List[AgentID]],
        obs_space: Optional[Union[gym.spaces.Tuple, Mapping[Any, gym.spaces.Tuple]]] = None,
        act_space: Optional[Union[gym.spaces.Tuple, Mapping[Any, gym.spaces.Tuple]]] = None,
    ) -> "MultiAgentEnv":
        """Return this env with each group of agents acting as one agent (RLlib's semantics).

        Args:
            groups: group id -> member agent ids; agents in no group stay as they are.
            obs_space: the grouped observation space (a Tuple, or a dict of group id to
                Tuple); inferred when omitted.
            act_space: the grouped action space, likewise.
        """
        if _GROUPING is None:  # pragma: no cover - set whenever marlhub is imported
            raise RuntimeError("marlhub.wrappers.groups was not imported; import marlhub first.")
        return _GROUPING(self, groups, obs_space, act_space)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agents={self.possible_agents!r}>"

    def _repr_html_(self) -> str:
        """In a notebook: the agents and their spaces, as a table."""
        from marlhub.display import env_html

        return env_html(self)


#: Builds the env that ``with_agent_groups`` returns. The wrapper lives a layer
#: above the protocol (marlhub.wrappers.groups) and registers itself here when
#: imported, which ``import marlhub`` does.
_GROUPING: Optional[Callable[..., "MultiAgentEnv"]] = None


def set_grouping_wrapper(factory: Callable[..., "MultiAgentEnv"]) -> None:
    """Set what :meth:`MultiAgentEnv.with_agent_groups` builds (marlhub.wrappers.groups calls this)."""
    global _GROUPING
    _GROUPING = factory


#: Members an object needs to be driven as a MultiAgentEnv.
_REQUIRED_CALLABLES = ("reset", "step")


def missing_protocol_members(obj: Any) -> list[str]:
    """Return the protocol members ``obj`` lacks (empty when it follows the protocol).

    The check is structural, so RLlib ``MultiAgentEnv`` subclasses and hand-written
    classes count as long as they have ``reset``, ``step``, ``possible_agents`` and
    a way to look up per-agent spaces.

    Example:
        >>> missing_protocol_members(object())  # doctest: +NORMALIZE_WHITESPACE
        ['reset()', 'step()', 'possible_agents', 'get_observation_space() or observation_spaces',
         'get_action_space() or action_spaces']
    """
    missing = [f"{name}()" for name in _REQUIRED_CALLABLES if not callable(getattr(obj, name, None))]
    if getattr(obj, "possible_agents", None) is None:
        missing.append("possible_agents")
    for kind in ("observation", "action"):
        has_getter = callable(getattr(obj, f"get_{kind}_space", None))
        has_dict = isinstance(getattr(obj, f"{kind}_spaces", None), dict)
        if not (has_getter or has_dict):
            missing.append(f"get_{kind}_space() or {kind}_spaces")
    return missing


def is_multi_agent_env(obj: Any) -> bool:
    """Tell whether ``obj`` follows the MultiAgentEnv protocol (by duck typing).

    Example:
        >>> import gymnasium as gym
        >>> is_multi_agent_env(gym.make("CartPole-v1"))
        False
    """
    if isinstance(obj, MultiAgentEnv):
        return True
    if isinstance(obj, type) or _has_per_agent_space_methods(obj):
        return False
    return not missing_protocol_members(obj)


def _has_per_agent_space_methods(obj: Any) -> bool:
    """Tell whether ``obj`` follows PettingZoo's API, where ``observation_space(agent)`` is a method.

    Such envs have reset, step, possible_agents and per-agent spaces too, but
    return differently shaped results; the hub's ``observation_space`` is a
    property or a Space. Decided by structure, so no backend is named here.
    """
    return inspect.isfunction(inspect.getattr_static(type(obj), "observation_space", None))
