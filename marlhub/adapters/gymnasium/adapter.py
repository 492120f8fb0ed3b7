"""Gymnasium -> hub: single-agent Gymnasium envs as agents of a hub env.

* :func:`make_multi_agent` is RLlib's function of that name: it turns a
  Gymnasium env id or creator into a hub env *class* whose instances run
  ``config["num_agents"]`` independent copies, agents ``0 .. n-1``. Unlike
  RLlib, copy ``i`` is reset with ``seed + i`` (RLlib seeds every copy alike,
  so all copies play the same episode) and the other config keys reach
  ``gymnasium.make`` when an id is given.
* :func:`from_gymnasium` makes one Gymnasium env a one-agent hub env.

Example:
    >>> MultiCartPole = make_multi_agent("CartPole-v1")
    >>> env = MultiCartPole({"num_agents": 2})
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs), bool((obs[0] != obs[1]).any())
    ([0, 1], True)
"""

from __future__ import annotations

import copyreg
import inspect
import re
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union, cast

import gymnasium as gym

from marlhub.adapters.gymnasium.tuple_agents import TupleAgentsEnv, is_tuple_team
from marlhub.context import EnvContext
from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
    is_multi_agent_env,
)
from marlhub.episode.actions import check_action_dict
from marlhub.episode.status import (
    EPISODE_OVER,
    NOT_CARRIED_OVER,
    NOT_RESET,
    require_running,
    restarts_when_pickled,
)
from marlhub.errors import AgentIdError, ConfigError, ProtocolError, UnknownEnvError, closest
from marlhub.spaces import ADVISORY_MASKS

__all__ = [
    "GymnasiumMultiEnv",
    "accepted_config_keys",
    "from_gymnasium",
    "is_gymnasium_env",
    "make_gymnasium_env",
    "make_multi_agent",
]

#: The config key that sets how many copies :func:`make_multi_agent` runs.
NUM_AGENTS = "num_agents"

#: A function that builds one Gymnasium env from the config of a hub env.
EnvCreator = Callable[[EnvContext], gym.Env]


class GymnasiumMultiEnv(MultiAgentEnv):
    """Independent Gymnasium envs, one per agent, stepped together as one hub env.

    Every agent acts in every step until its own env terminates or truncates;
    it then leaves (with its final observation). ``__all__`` comes when every
    env is done: in ``terminateds`` when every env terminated, in
    ``truncateds`` otherwise. ``reset(seed=s)`` resets env ``i`` with ``s + i``.

    Args:
        envs: the single-agent envs, one per agent.
        agent_ids: the agents' ids, in the order of ``envs``; ``0 .. n-1`` when omitted.

    Attributes:
        envs: the single-agent envs (RLlib's ``MultiEnv.envs``).
        terminateds: agents terminated in this episode (as in RLlib).
        truncateds: agents truncated in this episode (as in RLlib).

    Raises:
        ProtocolError: an element of ``envs`` is not a single-agent ``gymnasium.Env``.
        AgentIdError: ``agent_ids`` has the wrong length, repeats an id or uses a reserved one.

    Example:
        >>> env = GymnasiumMultiEnv([gym.make("FrozenLake-v1")], ["walker"])
        >>> env.reset(seed=0)
        ({'walker': 0}, {'walker': {'prob': 1}})
    """

    # Always set in __init__ (the base class allows None).
    observation_spaces: dict[AgentID, gym.Space]
    action_spaces: dict[AgentID, gym.Space]

    def __init__(self, envs: Sequence[gym.Env], agent_ids: Optional[Sequence[AgentID]] = None) -> None:
        super().__init__()
        envs = list(envs)
        if not envs:
            raise ValueError("GymnasiumMultiEnv needs at least one env, got none.")
        for env in envs:
            _require_single_agent_env(env, "GymnasiumMultiEnv")
        ids: list[AgentID] = list(range(len(envs))) if agent_ids is None else list(agent_ids)
        _check_agent_ids(ids, len(envs))
        self.envs = envs
        self.possible_agents = ids
        self.agents = list(ids)
        self.observation_spaces = {a: e.observation_space for a, e in zip(ids, envs)}
        self.action_spaces = {a: e.action_space for a, e in zip(ids, envs)}
        # Gymnasium's action masks (Taxi's info["action_mask"]) say which actions change the
        # state; every action in the space is still accepted, so they bind nobody.
        self.metadata = {**(getattr(envs[0], "metadata", None) or {}), ADVISORY_MASKS: True}
        self.render_mode = getattr(envs[0], "render_mode", None)
        self.terminateds: set[AgentID] = set()
        self.truncateds: set[AgentID] = set()
        self._env_of = dict(zip(ids, envs))
        self._cannot_step: Optional[str] = NOT_RESET

    @property
    def max_steps(self) -> Optional[int]:
        """The copies' longest time limit (spec ``max_episode_steps``): they step together."""
        limits: list[Any] = [getattr(getattr(e, "spec", None), "max_episode_steps", None)
                             for e in self.envs]
        return max(limits) if all(type(limit) is int for limit in limits) else None

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset every env (env ``i`` with ``seed + i``) and return all agents' observations.

        Args:
            seed: the base seed; None lets each env continue its own generator.
            options: passed to every env's ``reset``.
        """
        super().reset(seed=seed)
        obs: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        for i, (agent, env) in enumerate(zip(self.possible_agents, self.envs)):
            obs[agent], infos[agent] = env.reset(
                seed=None if seed is None else seed + i, options=options
            )
        self.agents = list(self.possible_agents)
        self.terminateds = set()
        self.truncateds = set()
        self._cannot_step = None
        return obs, infos

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the env of every live agent with its action.

        Raises:
            ResetNeededError: before ``reset()`` or after the episode ended.
            ActionError: an action missing, for an unknown or finished agent, or
                outside the agent's action space (nothing is stepped then).
        """
        require_running(type(self).__name__, self._cannot_step)
        action_dict = self._check_actions(action_dict)
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        still: list[AgentID] = []
        for agent in self.agents:
            o, r, term, trunc, info = self._env_of[agent].step(action_dict[agent])
            obs[agent], rewards[agent], infos[agent] = o, float(r), info
            terminateds[agent], truncateds[agent] = bool(term), bool(trunc)
            if term:
                self.terminateds.add(agent)
            if trunc:
                self.truncateds.add(agent)
            if not (term or trunc):
                still.append(agent)
        self.agents = still
        over = not still
        every_env_terminated = len(self.terminateds) == len(self.envs)
        terminateds[ALL] = over and every_env_terminated
        truncateds[ALL] = over and not every_env_terminated
        if over:
            self._cannot_step = EPISODE_OVER
        return obs, rewards, terminateds, truncateds, infos

    def _check_actions(self, action_dict: Any) -> MultiAgentDict:
        return check_action_dict(type(self).__name__, action_dict, actors=self.agents,
                          possible_agents=self.possible_agents,
                          space_of=self.action_spaces.__getitem__,
                          why_not_actor=self._why_not_live)

    def _why_not_live(self, agent: AgentID) -> Optional[str]:
        if agent in self._env_of:
            return "its env already terminated or truncated in this episode"
        return None

    def render(self) -> Any:
        """Render the first env, as RLlib's ``MultiEnv`` does."""
        return self.envs[0].render()

    def close(self) -> None:
        """Close every env."""
        for env in self.envs:
            env.close()

    def __getstate__(self) -> dict[str, Any]:
        """Return what pickles; a copy made in an episode of EzPickle envs must be reset."""
        state = self.__dict__.copy()
        if self._cannot_step is None and any(restarts_when_pickled(e) for e in self.envs):
            state["_cannot_step"] = NOT_CARRIED_OVER
        return state

    def __repr__(self) -> str:
        spec = getattr(self.envs[0], "spec", None)
        inner = spec.id if spec else type(self.envs[0]).__name__
        return f"<{type(self).__name__} {len(self.envs)} x {inner} agents={self.possible_agents!r}>"


if TYPE_CHECKING:

    class _MultiEnv(GymnasiumMultiEnv):
        """The classes make_multi_agent builds, as type checkers see them: made from a config."""

        env_name_or_creator: Union[str, EnvCreator]

        def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None: ...


def make_multi_agent(env_name_or_creator: Union[str, EnvCreator]) -> type[_MultiEnv]:
    """Return a hub env class running ``num_agents`` independent copies of a Gymnasium env.

    RLlib's ``make_multi_agent`` with the same call: the class's constructor
    takes a config whose ``num_agents`` (default 1) sets the number of copies;
    agents are ``0 .. num_agents - 1``; each copy's episode ends on its own and
    ``__all__`` comes when every copy is done. Two differences: copy ``i`` is
    reset with ``seed + i``, so the copies play different episodes under one
    seed, and with an id the other config keys go to ``gymnasium.make`` (RLlib
    drops them). The caller's config is never mutated.

    Args:
        env_name_or_creator: a Gymnasium id (``"CartPole-v1"``), or a creator
            ``creator(config) -> gymnasium.Env`` called once per copy with the
            config minus ``num_agents`` (an :class:`~marlhub.registry.EnvContext`).

    Returns:
        A :class:`GymnasiumMultiEnv` subclass named ``MultiEnv``. It and its instances
        pickle (a creator must then be a module-level function); the class loads as
        itself in this process, as ``make_multi_agent(env_name_or_creator)`` in another.

    Raises:
        TypeError: ``env_name_or_creator`` is neither a string nor callable.

    The class's constructor raises :class:`~marlhub.errors.ConfigError` for a
    ``num_agents`` that is not an integer >= 1 or keys ``gymnasium.make``
    rejects, and :class:`~marlhub.errors.UnknownEnvError` for an unknown id.

    Example:
        >>> env = make_multi_agent("CartPole-v1")({"num_agents": 3, "max_episode_steps": 5})
        >>> env.possible_agents
        [0, 1, 2]
        >>> _ = env.reset(seed=0)
        >>> for _ in range(5):
        ...     obs, rewards, terminateds, truncateds, infos = env.step({0: 0, 1: 1, 2: 0})
        >>> truncateds
        {0: True, 1: True, 2: True, '__all__': True}
        >>> import pickle
        >>> pickle.loads(pickle.dumps(type(env))) is type(env)
        True
    """
    if not (isinstance(env_name_or_creator, str) or callable(env_name_or_creator)):
        raise TypeError(
            "make_multi_agent() takes a Gymnasium env id or a creator function "
            f"creator(config) -> gymnasium.Env, got {type(env_name_or_creator).__name__} "
            f"{env_name_or_creator!r:.60}."
        )
    return _build_class(env_name_or_creator, uuid.uuid4().hex)


class _MultiEnvType(type):
    """The type of make_multi_agent's classes: copyreg pickles them with :func:`_reduce_class`."""


#: Every class make_multi_agent built or unpickled in this process, by its token.
_CLASSES: weakref.WeakValueDictionary[str, type] = weakref.WeakValueDictionary()


def _build_class(source: Union[str, EnvCreator], token: str) -> type[_MultiEnv]:
    """Build a class of copies of ``source``, known in this process by ``token``."""

    class MultiEnv(GymnasiumMultiEnv, metaclass=_MultiEnvType):
        """Independent copies of one Gymnasium env; config ``num_agents`` sets how many."""

        env_name_or_creator = source
        _class_token = token

        def __init__(self, config: Optional[Mapping[str, Any]] = None) -> None:
            rest, num = _split_config(_source_name(source), config)
            if isinstance(source, str):
                envs = [make_gymnasium_env(source, rest) for _ in range(num)]
            else:
                envs = [source(rest.copy_with_overrides()) for _ in range(num)]
            super().__init__(envs)

    MultiEnv.__qualname__ = "MultiEnv"
    _CLASSES[token] = MultiEnv
    return cast("type[_MultiEnv]", MultiEnv)  # MultiEnv has _MultiEnv's shape


def _multi_env_class(source: Union[str, EnvCreator], token: str) -> type[_MultiEnv]:
    """Return the class with ``token`` in this process, else build it (pickles call this)."""
    cls = _CLASSES.get(token)
    return cast("type[_MultiEnv]", cls) if cls is not None else _build_class(source, token)


def _reduce_class(cls: _MultiEnvType) -> Union[str, tuple[Any, ...]]:
    token = cls.__dict__.get("_class_token")
    if token is None:  # a subclass written in a module: pickled by name, like any class
        return cls.__qualname__
    return _multi_env_class, (cls.__dict__["env_name_or_creator"], token)


# Pickle looks a metaclass up here before trying a class's name, which a class built
# in a function does not have.
copyreg.pickle(_MultiEnvType, _reduce_class)


def make_gymnasium_env(env_id: str, kwargs: Optional[Mapping[str, Any]] = None, *,
                       own_keys: Sequence[str] = (NUM_AGENTS,)) -> gym.Env:
    """Return ``gymnasium.make(env_id, **kwargs)`` with Gymnasium's errors made marlhub errors.

    Args:
        env_id: a Gymnasium id.
        kwargs: keyword arguments for ``gymnasium.make`` and the env's constructor.
        own_keys: the caller's own config keys, listed among the accepted ones.

    Raises:
        UnknownEnvError: Gymnasium has no env ``env_id`` (with close matches).
        ConfigError: the env or ``gymnasium.make`` rejects a keyword, listing the accepted ones.

    Example:
        >>> make_gymnasium_env("FrozenLake-v1", {"is_slippery": False}).spec.kwargs["is_slippery"]
        False
        >>> make_gymnasium_env("FrozenLake-v1", {"slippery": False})
        Traceback (most recent call last):
        ...
        marlhub.errors.ConfigError: Bad config for 'FrozenLake-v1': gymnasium.make rejected the key 'slippery'. Accepted keys: 'desc', 'disable_env_checker', 'is_slippery', 'map_name', 'max_episode_steps', 'num_agents', 'render_mode', 'reward_schedule', 'success_rate'.
    """
    if env_id not in gym.registry:
        raise UnknownEnvError(
            env_id, closest(env_id, gym.registry),
            "Gymnasium has no env of that id (see gymnasium.pprint_registry()).",
        )
    kwargs = dict(kwargs or {})
    try:
        return gym.make(env_id, **kwargs)
    except TypeError as exc:
        found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
        if not found:
            raise
        key = found.group(1)
        raise ConfigError(
            env_id, f"gymnasium.make rejected the key {key!r}",
            unknown=[key], accepted=accepted_config_keys(env_id, own_keys),
        ) from exc


def accepted_config_keys(env_id: str, own_keys: Sequence[str] = (NUM_AGENTS,)) -> list[str]:
    """Return the config keys a Gymnasium id accepts: ``own_keys``, ``gymnasium.make``'s, the env's.

    Example:
        >>> accepted_config_keys("CartPole-v1")
        ['disable_env_checker', 'max_episode_steps', 'num_agents', 'render_mode', 'sutton_barto_reward']
    """
    keys = set(own_keys) | (_keyword_names(gym.make) - {"id"})
    spec = gym.spec(env_id)
    keys |= set(spec.kwargs)
    try:
        creator: object = spec.entry_point
        if isinstance(creator, str):
            from gymnasium.envs.registration import load_env_creator

            creator = load_env_creator(creator)
        keys |= _keyword_names(creator)
    except Exception:  # an entry point that does not load: gymnasium.make reports it
        pass
    return sorted(keys)


def _keyword_names(func: Any) -> set[str]:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _split_config(env_name: str, config: Optional[Mapping[str, Any]]) -> tuple[EnvContext, int]:
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise ConfigError(
            env_name, f"config must be a dict, got {type(config).__name__} {config!r:.60}",
            fix="Pass a dict such as {'num_agents': 2}, or None for one copy.",
        )
    num = config.get(NUM_AGENTS, 1)
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise ConfigError(
            env_name, f"num_agents must be an integer >= 1, got {num!r}",
            fix="Pass e.g. {'num_agents': 2} for two independent copies.",
        )
    rest = {k: v for k, v in config.items() if k != NUM_AGENTS}
    if isinstance(config, EnvContext):
        return config.copy_with_overrides(env_config=rest), num
    return EnvContext(rest), num


def _source_name(source: Union[str, Callable[..., Any]]) -> str:
    return source if isinstance(source, str) else getattr(source, "__qualname__", repr(source))


def _check_agent_ids(ids: list[AgentID], count: int) -> None:
    if len(ids) != count:
        raise AgentIdError(
            None, f"got {len(ids)} agent ids {ids!r} for {count} envs",
            fix="Give exactly one agent id per env.",
        )
    seen: set[AgentID] = set()
    for agent in ids:
        if agent in (ALL, COMMON):
            raise AgentIdError(agent, f"{agent!r} is reserved in the hub's dicts and cannot be an agent id",
                               fix="Pick another id, e.g. 'agent_0'.")
        if agent in seen:
            raise AgentIdError(agent, f"the agent id {agent!r} is given twice in {ids!r}",
                               fix="Give each env its own agent id.")
        seen.add(agent)


def _require_single_agent_env(env: Any, who: str) -> None:
    if isinstance(env, gym.Env) and not is_multi_agent_env(env):
        return
    kind = "a multi-agent env" if is_multi_agent_env(env) else "not a gymnasium.Env"
    raise ProtocolError(
        env, [f"a single-agent gymnasium.Env ({kind})"],
        expected=f"{who} to get single-agent gymnasium.Env instances",
    )


def is_gymnasium_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a single-agent Gymnasium env (wrapped or not), not a hub env.

    Example:
        >>> from marlhub.envs import RockPaperScissors
        >>> is_gymnasium_env(gym.make("CartPole-v1")), is_gymnasium_env(RockPaperScissors())
        (True, False)
    """
    return not isinstance(obj, type) and isinstance(obj, gym.Env) and not is_multi_agent_env(obj)


def from_gymnasium(env: Any, agent_id: AgentID = "agent_0") -> MultiAgentEnv:
    """Return a single-agent Gymnasium env as a one-agent hub env.

    A view made by :func:`to_gymnasium` unwraps to its hub env when nothing is
    lost by it: a joint view, or the view of the only agent of an env (the hub
    env then keeps its own agent id). One agent's view of a several-agent env
    is wrapped like any Gymnasium env, the other agents still driven by the
    view's policies. A hub env is returned as it is. An env of the Tuple
    convention (lbforaging, rware: :func:`~marlhub.adapters.gymnasium.is_tuple_team`)
    is a team: :func:`~marlhub.adapters.gymnasium.from_gymnasium_tuple` (no ``agent_id``).

    Args:
        env: a ``gymnasium.Env``, wrapped or not.
        agent_id: the id of the one agent.

    Returns:
        A :class:`GymnasiumMultiEnv` with one agent (``envs[0] is env``), or the
        hub env behind a view.

    Raises:
        ProtocolError: ``env`` is not a Gymnasium env.
        AgentIdError: ``agent_id`` is reserved (``"__all__"``, ``"__common__"``).

    Example:
        >>> hub = from_gymnasium(gym.make("CartPole-v1"), agent_id="pole")
        >>> obs, infos = hub.reset(seed=1)
        >>> list(obs), hub.get_action_space("pole")
        (['pole'], Discrete(2))
    """
    lossless = getattr(env, "lossless_hub_env", None)  # a view made by to_gymnasium
    if callable(lossless) and lossless() is not None:
        return lossless()
    if isinstance(env, MultiAgentEnv) or (is_multi_agent_env(env) and not isinstance(env, type)):
        return env
    _require_single_agent_env(env, "from_gymnasium()")
    if is_tuple_team(env):
        return TupleAgentsEnv(env)
    return GymnasiumMultiEnv([env], [agent_id])
