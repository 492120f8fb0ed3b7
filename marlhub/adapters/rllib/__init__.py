"""RLlib <-> hub, and marlhub ids for every env runner of a Ray cluster.

* :func:`to_rllib` gives any hub env (or anything :func:`~marlhub.adapters.to_hub`
  accepts) as an instance of a real ``ray.rllib.env.multi_agent_env.MultiAgentEnv``
  subclass, ``HubRLlibEnv``, so RLlib's own checks and env runners take it.
* :func:`from_rllib` takes an RLlib ``MultiAgentEnv`` (or anything shaped like
  one) to the hub, adding the contract's guarantees (:class:`RLlibEnv`).
* ``register_with_ray`` (in :mod:`marlhub.registry.ray`, importable from here
  too) registers marlhub ids with ``ray.tune.registry.register_env``, so
  ``PPOConfig().environment("marlhub/openspiel/leduc_poker")`` builds the env on
  every env runner; the creators are picklable and resolve the id on the worker.

Converting back unwraps: ``from_rllib(to_rllib(h)) is h`` and
``to_rllib(from_rllib(e)) is e``. Ray is imported only by :func:`to_rllib` and
``register_with_ray`` (pip extra ``rllib``).

Example:
    >>> from marlhub.envs import TicTacToe
    >>> hub = TicTacToe()
    >>> from_rllib(hub) is hub          # hub envs already follow the protocol
    True
    >>> import gymnasium as gym
    >>> class Echo:  # written RLlib's way: static agents, no __all__ in truncateds
    ...     possible_agents = agents = ["a", "b"]
    ...     observation_spaces = action_spaces = {x: gym.spaces.Discrete(2) for x in "ab"}
    ...     def reset(self, *, seed=None, options=None):
    ...         return {"a": 0, "b": 0}, {}
    ...     def step(self, actions):
    ...         obs = {"a": actions["b"], "b": actions["a"]}
    ...         return obs, {"a": 1.0, "b": 1.0}, {"__all__": True}, {}, {}
    >>> env = from_rllib(Echo())   # any RLlib-style env gets the contract's guarantees
    >>> env.step({"a": 0, "b": 1})
    Traceback (most recent call last):
    ...
    marlhub.errors.ResetNeededError: Echo.step() was called but reset() has not been called yet. Call reset() to start a new episode.
    >>> obs, infos = env.reset(seed=0)
    >>> env.step({"a": 0, "b": 1})[3], env.agents
    ({'__all__': False}, [])
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.adapters.apis import to_hub
from marlhub.adapters.rllib.adapter import RLlibEnv, read_possible_agents
from marlhub.adapters.rllib.lockstep import compare_with_native
from marlhub.backends import derives_from, import_backend
from marlhub.core import MultiAgentEnv, is_multi_agent_env, missing_protocol_members
from marlhub.errors import ProtocolError

__all__ = [
    "RLlibEnv",
    "compare_with_native",
    "from_rllib",
    "is_rllib_env",
    "is_rllib_view_of_hub",
    "read_possible_agents",
    "to_rllib",
]

#: Names that moved up to the registry layer (they resolve registry ids), kept
#: importable from here for code written against 0.1.0; see marlhub._renamed.
MOVED_NAMES = {
    "RayEnvCreator": "marlhub.registry.ray",
    "register_with_ray": "marlhub.registry.ray",
    "to_marlhub_context": "marlhub.registry.ray",
}

_RLLIB_BASE = ("ray.rllib.env.multi_agent_env", "MultiAgentEnv")


def is_rllib_env(obj: Any) -> bool:
    """Tell whether ``obj`` is an instance of RLlib's ``MultiAgentEnv`` (never imports Ray).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_rllib_env(TicTacToe())
        False
    """
    return derives_from(obj, [_RLLIB_BASE])


def is_rllib_view_of_hub(obj: Any) -> bool:
    """Tell whether ``obj`` is what :func:`to_rllib` made of a hub env (never imports Ray).

    :func:`marlhub.adapters.to_hub` unwraps such views; other RLlib envs are
    taken as they are, so the conformance suite judges them unrepaired.

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_rllib_view_of_hub(TicTacToe())
        False
    """
    return bool(getattr(type(obj), "_marlhub_view_of_hub", False)) and is_rllib_env(obj)


def to_rllib(env: Any, *, check: bool = True, illegal_action: str = "terminate",
             mask_observation: bool = False, carry_rewards: bool = True) -> Any:
    """Return ``env`` as an instance of RLlib's ``MultiAgentEnv``; :func:`from_rllib` envs unwrap.

    Args:
        env: a hub env, or anything :func:`marlhub.adapters.to_hub` accepts
            (PettingZoo, OpenSpiel, Gymnasium envs go through the hub). An RLlib
            ``MultiAgentEnv`` is returned as it is.
        check: judge every reset and step against the rules whose breach makes
            RLlib raise (done agents that reappear, missing rewards, truncation
            without a last observation, a missing ``__all__``...) and raise
            :class:`~marlhub.errors.EnvContractError` naming the rule at the
            step where it happens, instead of RLlib's assertion deep in an env runner.
        illegal_action: what a masked-out action does, since RLlib (and its env
            checker) samples from the whole action space: ``"terminate"`` (the
            default, as PettingZoo classic: the offender gets -1, the episode ends),
            ``"substitute"`` (a random legal action is played) or ``"raise"``.
            Masks are copied into ``infos[agent]["action_mask"]``.
        mask_observation: observations as ``{"observations", "action_mask"}``, the
            layout of RLlib's action-masking RLModule (Discrete actions only).
        carry_rewards: shape the steps so that RLlib's sampler keeps every reward
            (:mod:`~marlhub.adapters.rllib.carry`): a reward paid before an agent
            acts comes with its first transition, an agent that ends without a final
            observation gets its last one again, and an agent paid at the end but
            never asked to act gets one observation to act on that carries its
            reward (its action is dropped). False shows the hub env's steps as they
            are, and RLlib drops such rewards.

    Returns:
        A ``HubRLlibEnv`` (a subclass of ``ray.rllib.env.multi_agent_env.MultiAgentEnv``)
        whose ``env`` is the hub env, or ``env`` itself when it already is an RLlib env.

    Raises:
        MissingDependencyError: Ray is not installed.
        ProtocolError: ``env`` cannot be turned into a hub env.
    """
    if type(env) is RLlibEnv and is_rllib_env(env.env):
        return env.env
    if is_rllib_env(env):
        return env
    # An RLlibEnv around an env that is no RLlib subclass is wrapped as it is, keeping
    # the guarantees it adds.
    if not isinstance(env, MultiAgentEnv):
        env = to_hub(env)
    return _to_module().hub_rllib_env_class()(env, check=check, illegal_action=illegal_action,
                                              mask_observation=mask_observation,
                                              carry_rewards=carry_rewards)


def from_rllib(env: Any, *, check: bool = True) -> Any:
    """Return an RLlib ``MultiAgentEnv`` as a hub env that keeps the contract; views unwrap.

    Args:
        env: an RLlib ``MultiAgentEnv`` subclass instance, or any object with
            RLlib's ``reset``/``step`` protocol (old-API-stack envs that declare
            agents through ``_agent_ids`` included).
        check: judge every transition against the rules RLlib enforces
            (see :class:`RLlibEnv`).

    Returns:
        The hub env itself when ``env`` came from :func:`to_rllib` or already is a
        marlhub env; otherwise an :class:`RLlibEnv` around ``env``.

    Raises:
        ProtocolError: ``env`` does not follow the protocol (the message lists
            what it lacks).
    """
    if is_rllib_view_of_hub(env):
        return env.env
    if isinstance(env, MultiAgentEnv):
        return env
    if not (is_rllib_env(env) or is_multi_agent_env(env) or _old_stack_env(env)):
        raise ProtocolError(
            env, missing_protocol_members(env), expected="an RLlib MultiAgentEnv"
        )
    return RLlibEnv(env, check=check)


def _old_stack_env(env: Any) -> bool:
    # RLlib's old API stack: agents through `_agent_ids`, one shared or a Dict space.
    return (
        callable(getattr(env, "reset", None))
        and callable(getattr(env, "step", None))
        and bool(getattr(env, "_agent_ids", None))
        and getattr(env, "observation_space", None) is not None
        and getattr(env, "action_space", None) is not None
    )


def _to_module() -> Any:
    """The module of ``HubRLlibEnv``, once Ray is known to be importable."""
    import_backend("ray.rllib.env.multi_agent_env", package="ray", extra="rllib",
                   feature="to_rllib()")
    return importlib.import_module("marlhub.adapters.rllib.view")


def __getattr__(name: str) -> Any:
    if name == "HubRLlibEnv":
        return _to_module().hub_rllib_env_class()
    if name in MOVED_NAMES:
        return getattr(importlib.import_module(MOVED_NAMES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
