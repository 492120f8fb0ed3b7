"""The learner's last mile: a hub env as the vectorized, fixed-shape batch a learner trains on.

:func:`to_sb3` gives Stable-Baselines3 (and sb3-contrib) a ``VecEnv`` of one slot per
(copy, agent) over the vector env's array face, for any registry id or vector env: mixed
teams (``one_space=True``), turn-based games (masks) and agents that come and go
included, with no SuperSuit in the way; :func:`to_pufferlib` gives PufferLib a native
``PufferEnv`` of the same slots, which its vector envs run; :func:`to_skrl` gives skrl's
multi-agent learners (IPPO, MAPPO) the same slots agent by agent, every agent always there;
:func:`to_tianshou` gives Tianshou's multi-agent learners one agent's turn per step, and
:func:`to_agilerl` gives AgileRL's trainers its vector env of the same slots.
:class:`~marlhub.learners.slots.AgentSlots` is the learner-independent part: how every
slot stands in every step.

Example:
    >>> from marlhub.learners import to_sb3
    >>> venv = to_sb3("rock_paper_scissors", 2)
    >>> venv.num_envs, venv.observation_space, venv.action_space
    (4, Discrete(3), Discrete(3))
    >>> obs = venv.reset()
    >>> obs, rewards, dones, infos = venv.step(venv.action_masks().argmax(axis=1))
    >>> rewards.tolist(), infos[1]["agent"]
    ([0.0, 0.0, 0.0, 0.0], 'player2')
    >>> venv.close()
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Optional

from marlhub.backends import import_backend
from marlhub.errors import VectorEnvError
from marlhub.learners.slots import AgentSlots, Policy, SlotStep
from marlhub.rewards import require_scalar_rewards
from marlhub.wrappers import IllegalActionWrapper
from marlhub.registry.vector import env_fns_for, make_vec
from marlhub.vector import AsyncVectorMultiAgentEnv, SyncVectorMultiAgentEnv, VectorMultiAgentEnv
from marlhub.vector.base import SAME_STEP

__all__ = ["AgentSlots", "SlotStep", "to_agilerl", "to_pufferlib", "to_sb3", "to_skrl",
           "to_tianshou", "vector_env_for"]


def vector_env_for(env: Any, num_envs: Optional[int] = None,
                   config: Optional[Mapping[str, Any]] = None, *,
                   caller: str = "a learner bridge", illegal_action: Optional[str] = None,
                   **vector_kwargs: Any) -> VectorMultiAgentEnv:
    """The vector env a learner bridge drives, with ``autoreset_mode="same_step"``.

    Args:
        env: a registry id (the copies then act all at once where the family has a
            natively parallel version: :func:`marlhub.registry.simultaneous_config`), a
            function that makes one env (called once per copy), or a vector env made with
            ``autoreset_mode="same_step"`` (taken as it is).
        num_envs: how many copies (1 by default); not with a vector env.
        config: the env's config, for a registry id.
        caller: what asks, for messages.
        illegal_action: what a copy does with a masked-out action
            (:class:`~marlhub.wrappers.IllegalActionWrapper`'s ``"terminate"`` or
            ``"substitute"``), for learners that ignore masks; None: it refuses it
            (``ActionError``), as every hub env does.
        vector_kwargs: passed to :func:`marlhub.make_vec` (``vectorization_mode``,
            ``num_workers``, ...) or to the sync vector env.

    Raises:
        VectorEnvError: options that do not apply to ``env``, or a vector env with another
            autoreset mode.
        VectorRewardError: the env pays vector rewards: a learner's batch holds one number
            per slot (scalarize them first: :class:`~marlhub.wrappers.ScalarizeRewards`).
    """
    made = _vector_env(env, num_envs, config, caller, illegal_action, **vector_kwargs)
    try:
        require_scalar_rewards(made, caller)
    except Exception:
        if made is not env:
            made.close()
        raise
    return made


def _vector_env(env: Any, num_envs: Optional[int], config: Optional[Mapping[str, Any]],
                caller: str, illegal_action: Optional[str],
                **vector_kwargs: Any) -> VectorMultiAgentEnv:
    if illegal_action is not None:
        return _copies_with_policy(env, num_envs, config, illegal_action, caller,
                                   **vector_kwargs)
    if isinstance(env, VectorMultiAgentEnv):
        if num_envs is not None or config is not None or vector_kwargs:
            raise VectorEnvError(env.name(), f"{caller} got a vector env and options for "
                                 "making one", "Pass either a vector env, or an id (or env "
                                 "function) with num_envs, config and the vector options.")
        return env
    if isinstance(env, str):
        from marlhub.registry import simultaneous_config

        return make_vec(env, 1 if num_envs is None else num_envs,
                        simultaneous_config(env, config), autoreset_mode=SAME_STEP,
                        **vector_kwargs)
    if callable(env):
        if config is not None:
            raise VectorEnvError(caller, "config= was given with an env function",
                                 "Put the config in the function, or pass a registry id.")
        fns: list[Callable[[], Any]] = [env] * (1 if num_envs is None else num_envs)
        return SyncVectorMultiAgentEnv(fns, autoreset_mode=SAME_STEP, **vector_kwargs)
    raise VectorEnvError(caller, f"cannot make a vector env of {type(env).__name__}",
                         "Pass a registry id, a function that makes one env, or a vector env.")


def _copies_with_policy(env: Any, num_envs: Optional[int], config: Optional[Mapping[str, Any]],
                        policy: str, caller: str, **vector_kwargs: Any) -> VectorMultiAgentEnv:
    """Copies of ``env`` each behind ``IllegalActionWrapper(copy, policy)``, in this process
    or (``vectorization_mode="async"``) in workers."""
    mode = vector_kwargs.pop("vectorization_mode", None) or "sync"
    if isinstance(env, VectorMultiAgentEnv) or mode not in ("sync", "async"):
        raise VectorEnvError(caller, "illegal_action= needs copies made here (sync or async)",
                             "Pass a registry id or an env function, or wrap the copies of "
                             "your vector env in IllegalActionWrapper yourself.")
    count = 1 if num_envs is None else num_envs
    if isinstance(env, str):
        from marlhub.registry import simultaneous_config

        fns: list[Any] = env_fns_for(env, count, simultaneous_config(env, config))
    else:
        fns = [env] * count
    wrapped = [functools.partial(_behind_policy, fn, policy) for fn in fns]
    cls = SyncVectorMultiAgentEnv if mode == "sync" else AsyncVectorMultiAgentEnv
    # the copies answer masked-out actions themselves: the vector env lets them through
    return cls(wrapped, autoreset_mode=SAME_STEP, env_id=env if isinstance(env, str) else None,
               check_masks=False, **vector_kwargs)


def _behind_policy(make: Callable[[], Any], policy: str) -> Any:
    return IllegalActionWrapper(make(), policy)


def to_sb3(env: Any, num_envs: Optional[int] = None, config: Optional[Mapping[str, Any]] = None,
           *, one_space: bool = False, group: Optional[str] = None,
           others: Optional[Mapping[str, Policy]] = None, **vector_kwargs: Any) -> Any:
    """Return an SB3 ``VecEnv`` with one env per (copy, agent), for any hub env.

    Args:
        env: a registry id, a function that makes one env, or a vector env made with
            ``autoreset_mode="same_step"`` (:func:`vector_env_for`).
        num_envs: how many copies of the env (the SB3 env has ``num_envs * agents`` slots).
        config: the env's config, for a registry id.
        one_space: agents of different spaces (a mixed team) share one padded observation
            ``Box`` with their kind beside it, and one action space with masks for what a
            kind cannot do (see :mod:`marlhub.learners.slots`).
        group: give slots to one group of the array face only (as TorchRL's ``group_map``
            by kind: its agents share their spaces), for a learner of that group; the
            other groups act by ``others``.
        others: group -> policy of a group without slots (``policy(obs, masks,
            action_space) -> actions``; a random legal action by default), for ``group``.
        vector_kwargs: the vector env's options (``vectorization_mode="async"``,
            ``num_workers``, ``array_face`` ...), and ``illegal_action="terminate"`` or
            ``"substitute"`` for learners that ignore masks (:func:`vector_env_for`).

    Returns:
        A :class:`~marlhub.learners.sb3_vec_env.Sb3VecEnv`, a subclass of SB3's ``VecEnv``.

    Raises:
        MissingDependencyError: stable-baselines3 is not installed.
        VectorEnvError: the agents have several spaces and ``one_space`` is False, or a
            space the slots cannot take.
    """
    module = import_backend("marlhub.learners.sb3_vec_env", package="stable_baselines3",
                            extra="learners", feature="to_sb3()")
    vector_env = vector_env_for(env, num_envs, config, caller="to_sb3()", **vector_kwargs)
    try:
        return module.Sb3VecEnv(AgentSlots(vector_env, one_space=one_space, group=group,
                                           others=others))
    except BaseException:
        if not isinstance(env, VectorMultiAgentEnv):
            vector_env.close()
        raise


def to_pufferlib(env: Any, num_envs: Optional[int] = None,
                 config: Optional[Mapping[str, Any]] = None, *, buf: Optional[dict[str, Any]] = None,
                 seed: Optional[int] = 0, **vector_kwargs: Any) -> Any:
    """Return a native ``pufferlib.PufferEnv`` with one agent row per (copy, agent).

    PufferLib's vector envs take it through a picklable creator:
    ``pufferlib.vector.make(functools.partial(to_pufferlib, "traffic"),
    backend=pufferlib.vector.Multiprocessing, num_envs=4, num_workers=2)``.

    Args:
        env: a registry id, a function that makes one env, or a vector env made with
            ``autoreset_mode="same_step"`` (:func:`vector_env_for`).
        num_envs: copies in this PufferLib env (1 by default).
        config: the env's config, for a registry id.
        buf: PufferLib's buffers (passed by its vector envs).
        seed: the seed of the first reset.
        vector_kwargs: the hub vector env's options.

    Returns:
        A :class:`~marlhub.learners.puffer_env.HubPufferEnv`: observations in one padded
        ``Box`` (the ``one_space`` layout of :mod:`marlhub.learners.slots`).

    Raises:
        MissingDependencyError: PufferLib (``pufferlib-core``) is not installed.
        VectorEnvError: kinds of agents that act in Discrete and in Box spaces.
    """
    module = import_backend("marlhub.learners.puffer_env", package="pufferlib",
                            extra="learners", feature="to_pufferlib()",
                            install="pip install --no-deps pufferlib-core psutil rich "
                            "rich-argparse")
    return module.HubPufferEnv(env, num_envs, config, buf=buf, seed=seed, **vector_kwargs)


def to_skrl(env: Any, num_envs: Optional[int] = None, config: Optional[Mapping[str, Any]] = None,
            *, one_space: bool = False, group: Optional[str] = None,
            others: Optional[Mapping[str, Policy]] = None, device: Any = None,
            seed: Optional[int] = None, **vector_kwargs: Any) -> Any:
    """Return a skrl multi-agent env (``MultiAgentEnvWrapper``) of agent slots, for any hub env.

    Every agent is there at every step, with ``num_envs`` rows (one per copy) of the
    slots' treatment of agents that wait, leave or join (:mod:`marlhub.learners.slots`),
    so skrl's IPPO and MAPPO (one model and memory per agent) train on mixed teams and
    agents that come and go; ``state()`` is each copy's global state where it has one.

    Args:
        env: a registry id, a function that makes one env, or a vector env made with
            ``autoreset_mode="same_step"`` (:func:`vector_env_for`).
        num_envs: how many copies (rows of every agent's tensors).
        config: the env's config, for a registry id.
        one_space, group, others: as for :func:`to_sb3` (every agent in one padded space,
            or one group's agents with the others acting by a policy of their own).
        device: the tensors' torch device (skrl's default for None).
        seed: the first reset's seed (copy ``i`` seeded ``seed + i``); None: skrl's own
            (``skrl.utils.set_seed`` sets it), as skrl's PettingZoo wrapper takes it.
        vector_kwargs: the vector env's options, and ``illegal_action="substitute"`` (or
            ``"terminate"``) for games with masks: skrl's learners have none.

    Returns:
        A :class:`~marlhub.learners.skrl_env.SkrlEnv`, a subclass of skrl's
        ``MultiAgentEnvWrapper``.

    Raises:
        MissingDependencyError: skrl is not installed.
        VectorEnvError: the agents have several spaces and ``one_space`` is False, or a
            space the slots cannot take.

    Example:
        >>> env = to_skrl("rock_paper_scissors", 2)
        >>> env.num_envs, env.possible_agents, env.observation_space("player1")
        (2, ['player1', 'player2'], Box(0.0, 1.0, (3,), float32))
        >>> obs, infos = env.reset()  # the opponent's last move, one-hot
        >>> obs["player1"].shape
        torch.Size([2, 3])
        >>> env.close()
    """
    module = import_backend("marlhub.learners.skrl_env", package="skrl", extra="learners",
                            feature="to_skrl()")
    vector_env = vector_env_for(env, num_envs, config, caller="to_skrl()", **vector_kwargs)
    try:
        return module.SkrlEnv(AgentSlots(vector_env, one_space=one_space, group=group,
                                         others=others), device=device, seed=seed)
    except BaseException:
        if not isinstance(env, VectorMultiAgentEnv):
            vector_env.close()
        raise


def to_agilerl(env: Any, num_envs: Optional[int] = None,
               config: Optional[Mapping[str, Any]] = None, *, one_space: bool = False,
               group: Optional[str] = None, others: Optional[Mapping[str, Policy]] = None,
               seed: Optional[int] = None, **vector_kwargs: Any) -> Any:
    """Return AgileRL's ``PettingZooVecEnv`` of agent slots, for any hub env.

    Every agent is there at every step with ``num_envs`` rows, in the slots' treatment of
    agents that wait, leave or join (:mod:`marlhub.learners.agilerl_env`): AgileRL's IPPO
    trains on mixed teams (``one_space=True``) and on agents that come and go, and its
    trainer's episode scores are the hub's returns. AgileRL 2.58 cannot take array masks:
    on a game with masks pass ``illegal_action="substitute"``.

    Args:
        env: a registry id, a function that makes one env, or a vector env made with
            ``autoreset_mode="same_step"`` (:func:`vector_env_for`).
        num_envs: how many copies (rows of every agent's arrays).
        config: the env's config, for a registry id.
        one_space, group, others: as for :func:`to_sb3`.
        seed: the first reset's seed when the trainer gives none.
        vector_kwargs: the vector env's options, and ``illegal_action="substitute"`` (or
            ``"terminate"``) for games with masks.

    Raises:
        MissingDependencyError: AgileRL is not installed.
        VectorEnvError: the agents have several spaces and ``one_space`` is False, or a
            space the slots cannot take.
    """
    module = import_backend("marlhub.learners.agilerl_env", package="agilerl",
                            extra="learners", feature="to_agilerl()",
                            install="pip install agilerl peft (with PettingZoo before 1.27)")
    vector_env = vector_env_for(env, num_envs, config, caller="to_agilerl()", **vector_kwargs)
    try:
        return module.AgileRLVecEnv(AgentSlots(vector_env, one_space=one_space, group=group,
                                               others=others), seed=seed)
    except BaseException:
        if not isinstance(env, VectorMultiAgentEnv):
            vector_env.close()
        raise


def to_tianshou(env: Any, config: Optional[Mapping[str, Any]] = None) -> Any:
    """Return Tianshou's multi-agent env over a hub env: one acting agent per step.

    Tianshou's ``MultiAgentOffPolicyAlgorithm`` and ``MultiAgentOnPolicyAlgorithm`` take it
    in place of its ``PettingZooEnv``: agents of different spaces share one padded space,
    agents that leave or join are asked to act only while they are there, and each
    agent's summed reward is the hub's return (:mod:`marlhub.learners.tianshou_env`).
    Tianshou's vector envs take a function that calls this.

    Args:
        env: a registry id, or a hub env (any env ``marlhub.convert`` takes).
        config: the env's config, for a registry id.

    Raises:
        VectorEnvError: kinds of agents that act in Discrete and in Box spaces.
        VectorRewardError: the env pays vector rewards; scalarize them first
            (:class:`~marlhub.wrappers.ScalarizeRewards`).
    """
    from marlhub.adapters.apis import convert
    from marlhub.learners.tianshou_env import TianshouEnv
    from marlhub.registry import make

    if config is not None and not isinstance(env, str):
        raise VectorEnvError("to_tianshou()", "config= was given with an env",
                             "Pass a registry id with its config, or an env made with it.")
    hub = make(env, config) if isinstance(env, str) else convert(env)
    require_scalar_rewards(hub, "to_tianshou", needs="Tianshou's reward vector holds one number "
                           "per agent")
    return TianshouEnv(hub)
