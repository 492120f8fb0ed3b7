"""``gymnasium.make("marlhub/<name>")``: registry ids in Gymnasium's registry, as Tuple envs.

Learners that load envs by key with ``gym.make`` (EPyMARL's ``gymma``, PyMARL2)
reach any hub env this way, as a
:class:`~marlhub.adapters.gymnasium.TupleView` (``Tuple`` spaces over the agents,
rewards a list, ``n_agents``; see ``to_gymnasium_tuple``). The plain names of
the default registry (``rock_paper_scissors``, ``tic_tac_toe``, ``traffic`` and
what :func:`~marlhub.registry.register_env` adds) are registered when marlhub is
imported, so ``gym.make("marlhub/traffic")`` works in a process that imported
marlhub, and ``gym.make("marlhub:marlhub/traffic")`` (Gymnasium imports the module
before the ``:``) in any. Each registration is a spec with a string entry point:
nothing is made until ``gym.make`` is called.

Any other id (a family's: ``lbforaging/Foraging-8x8-2p-3f-v3``) is registered
under a name Gymnasium can parse with :func:`register_with_gymnasium`.
``gym.make``'s keyword arguments are the env's config, plus ``illegal_action``
for the view; Gymnasium's passive checker is off (it warns that a list of
rewards is no float, which is the convention).

Example:
    >>> import gymnasium as gym
    >>> env = gym.make("marlhub/rock_paper_scissors")
    >>> env.unwrapped.n_agents, env.action_space
    (2, Tuple(Discrete(3), Discrete(3)))
    >>> obs, info = env.reset(seed=0)
    >>> env.step((1, 0))[1]   # paper beats rock
    [1.0, -1.0]
    >>> register_with_gymnasium("traffic", "traffic-v0", config={"num_cars": 2})
    'marlhub/traffic-v0'
    >>> gym.make("marlhub/traffic-v0").unwrapped.possible_agents
    ['car_0', 'car_1', 'light']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from marlhub.context import make_from_id
from marlhub.errors import ConfigError

__all__ = ["NAMESPACE", "make_tuple_env", "register_names", "register_with_gymnasium"]

#: The Gymnasium namespace of marlhub's ids: ``marlhub/<name>``.
NAMESPACE = "marlhub"
#: What Gymnasium calls to make one (a string: marlhub is imported only then).
ENTRY_POINT = "marlhub.registry.gymnasium_ids:make_tuple_env"


def register_with_gymnasium(env_id: str, name: Optional[str] = None, *,
                            config: Optional[Mapping[str, Any]] = None,
                            **view_options: Any) -> str:
    """Register ``env_id`` in Gymnasium's registry as ``marlhub/<name>``; return that id.

    ``gymnasium.make("marlhub/<name>", **kwargs)`` then returns
    ``marlhub.make(env_id, {**config, **kwargs}, to="gymnasium.tuple", **view_options)``.
    Registering a name again replaces its spec.

    Args:
        env_id: a registry id (any: plain, a family's, an entry point's).
        name: the Gymnasium name, ``[A-Za-z0-9_.-]`` with an optional ``-v<N>``
            version; ``env_id`` when omitted (which then must be such a name).
        config: the env's config (``gym.make``'s keyword arguments add to it).
        view_options: options of the Tuple view (``illegal_action=``).

    Raises:
        ConfigError: the name is no Gymnasium name (``/``, brackets, spaces).
    """
    gym_id = f"{NAMESPACE}/{env_id if name is None else name}"
    kwargs: dict[str, Any] = {"env_id": env_id, **view_options}
    if config:
        kwargs["config"] = dict(config)
    try:
        spec = EnvSpec(id=gym_id, entry_point=ENTRY_POINT, disable_env_checker=True,
                       kwargs=kwargs)
    except gym.error.Error as exc:
        raise ConfigError(
            env_id, f"{gym_id!r} is no Gymnasium id ({exc})",
            fix="Pass name= a Gymnasium name: letters, digits, '_', '-' and '.', with an "
                "optional version '-v<N>' (e.g. register_with_gymnasium('lbforaging/"
                "Foraging-8x8-2p-3f-v3', 'Foraging-8x8-2p-3f-v3')).") from exc
    # Assigned, not gym.register(): registering again (a reload, register_env(overwrite=True))
    # makes Gymnasium warn about overriding.
    gym.registry[gym_id] = spec
    return gym_id


def register_names(names: Iterable[str]) -> list[str]:
    """Register each of ``names`` that is a Gymnasium name as ``marlhub/<name>``; return their ids.

    Names Gymnasium cannot parse are left out (they stay reachable through
    :func:`register_with_gymnasium` with a ``name=``).
    """
    done = []
    for name in names:
        try:
            done.append(register_with_gymnasium(name))
        except ConfigError:
            continue
    return done


def make_tuple_env(env_id: str, config: Optional[Mapping[str, Any]] = None, *,
                   illegal_action: Optional[str] = None, **config_keys: Any) -> gym.Env:
    """Make ``env_id`` of the default registry in the Tuple convention (``gym.make`` calls this).

    Args:
        env_id: the registry id.
        config: the env's config of the registration.
        illegal_action: the view's policy for masked-out actions (its default when None).
        config_keys: more config keys (``gym.make``'s keyword arguments, ``render_mode``).
    """
    from marlhub.adapters.gymnasium import to_gymnasium_tuple

    merged = {**dict(config or {}), **config_keys}
    options = {} if illegal_action is None else {"illegal_action": illegal_action}
    return to_gymnasium_tuple(make_from_id(env_id, merged or None), **options)
