"""TorchRL both ways: a hub env as a TorchRL ``EnvBase``, and a TorchRL multi-agent env as a hub env.

* :func:`to_torchrl` gives a hub env (or anything :func:`~marlhub.adapters.to_hub`
  accepts) as an instance of ``HubTorchRLEnv``, a real ``EnvBase`` subclass
  (``view.py``): per-group tensordicts with an agent dimension (``group_map``,
  ``groups.py``), specs built from the hub's spaces (``specs.py``, ``layout.py``),
  a per-group ``"mask"`` of who acts next, ``"action_mask"`` from the hub's
  masks, ``done`` / ``terminated`` / ``truncated`` per agent and at the root.
  TorchRL's ``check_env_specs``, ``rollout``, ``SerialEnv`` and ``ParallelEnv``
  take it; turn-based envs and agents that come and go need no padding.
* :func:`from_torchrl` takes any TorchRL multi-agent env (an ``EnvBase`` with a
  ``group_map``) into the hub (``TorchRLHubEnv``, ``adapter.py``; where each
  agent's data sits: ``agents.py``; specs as spaces: ``spec_spaces.py``);
  TorchRL's ``VmasEnv`` goes to VMAS directly; and it unwraps:
  ``from_torchrl(to_torchrl(hub)) is hub``.

Importing this package imports no torch; :func:`to_torchrl` does (pip extra
``torchrl``). Semantics: the TorchRL guide of the documentation site.

Example:
    >>> import marlhub
    >>> hub = marlhub.make("tic_tac_toe")
    >>> env = to_torchrl(hub)
    >>> env.group_map
    {'agents': ['player1', 'player2']}
    >>> from_torchrl(env) is hub, is_torchrl_env(env), is_torchrl_env(hub)
    (True, True, False)
    >>> import torch
    >>> _ = torch.manual_seed(0); _ = env.set_seed(0)
    >>> td = env.rollout(100, break_when_any_done=True)   # random moves, one mover a step
    >>> bool(td["next", "done"][-1]), td["next", "agents", "mask"].sum(-1).unique().tolist()
    (True, [0, 1])
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from marlhub.adapters.apis import to_hub
from marlhub.backends import derives_from, import_backend
from marlhub.core import MultiAgentEnv
from marlhub.errors import ConfigError, ProtocolError

__all__ = ["from_torchrl", "is_torchrl_env", "is_torchrl_view_of_hub", "to_torchrl"]

_TORCHRL_BASE = ("torchrl.envs.common", "EnvBase")


def is_torchrl_env(obj: Any) -> bool:
    """Tell whether ``obj`` is an instance of TorchRL's ``EnvBase`` (never imports torch).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_torchrl_env(TicTacToe())
        False
    """
    return derives_from(obj, [_TORCHRL_BASE])


def is_torchrl_view_of_hub(obj: Any) -> bool:
    """Tell whether ``obj`` is what :func:`to_torchrl` made of a hub env (never imports torch).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_torchrl_view_of_hub(TicTacToe())
        False
    """
    return bool(getattr(type(obj), "_marlhub_view_of_hub", False)) and is_torchrl_env(obj)


def to_torchrl(env: Any, *, group_map: Any = None, categorical_actions: bool = True,
               device: Any = "cpu", illegal_action: str = "terminate") -> Any:
    """Return ``env`` as a TorchRL env (``HubTorchRLEnv``, a ``torchrl.envs.EnvBase``).

    Args:
        env: a hub env, or anything :func:`marlhub.adapters.to_hub` accepts
            (PettingZoo, OpenSpiel, Gymnasium envs go through the hub), or a
            marlhub vector env (``marlhub.make_vec(...)``: sync, async or batched),
            which becomes one ``EnvBase`` with ``batch_size=[num_envs]``
            (``VectorTorchRLEnv``, ``vector_view.py``; a batched simulator made
            with ``as_torch=True`` keeps its tensors on its device). A view
            :func:`to_torchrl` made is returned as it is.
        group_map: how agents are grouped: a ``torchrl.envs.utils.MarlGroupMapType``
            (``ALL_IN_ONE_GROUP``: one group ``"agents"``; ``ONE_GROUP_PER_AGENT``:
            a group ``str(agent)`` each), a dict group name -> agent ids, or None:
            one group ``"agents"`` when every agent has the same spaces, else
            TorchRL's PettingZoo rule (``"car_0"``, ``"car_1"`` -> group ``"car"``;
            other agents a group each). Agents whose spaces differ only in shape
            or bounds may share a group (a lazy stack, as TorchRL does for
            heterogeneous agents).
        categorical_actions: Discrete (and MultiDiscrete) actions and observations
            as indices (``Categorical``), else one-hot (``OneHot``).
        device: the device of the specs and tensordicts.
        illegal_action: what a masked-out action does, since TorchRL samples from
            the spec where it cannot carry the mask: ``"terminate"`` (the default,
            as PettingZoo classic: the offender gets -1, the episode ends),
            ``"substitute"`` (a random legal action is played) or ``"raise"``.

    Returns:
        A ``HubTorchRLEnv`` whose ``env`` is the hub env, or a ``VectorTorchRLEnv``
        whose ``vector_env`` is the vector env.

    Raises:
        MissingDependencyError: TorchRL is not installed.
        ConfigError: a space no TorchRL spec holds (a Text observation names the
            agent and its space), a bad ``group_map``, a group whose agents' specs
            TorchRL cannot stack, or an unknown ``illegal_action``.
        AgentIdError: a ``group_map`` that misses, repeats or invents agents.
        ProtocolError: ``env`` cannot be turned into a hub env.
    """
    if is_torchrl_view_of_hub(env) or _is_view_of_vector(env):
        return env
    vector_view = importlib.import_module("marlhub.adapters.torchrl.vector_view")
    if vector_view.is_vector_env(env):
        _view_module()  # TorchRL is importable
        if group_map is not None and dict(group_map) != dict(env.groups):
            raise ConfigError("to_torchrl", f"a vector env's groups are those of its array face "
                              f"({env.groups}), not group_map={group_map!r}",
                              fix="Leave group_map out for a vector env.")
        return vector_view.vector_torchrl_env_class()(
            env, categorical_actions=categorical_actions, device=device)
    if not isinstance(env, MultiAgentEnv):
        env = to_hub(env)
    return _view_module().hub_torchrl_env_class()(
        env, group_map=group_map, categorical_actions=categorical_actions, device=device,
        illegal_action=illegal_action)


def from_torchrl(env: Any, *, through_vmas: bool = True) -> Any:
    """Return a TorchRL multi-agent env as a hub env.

    Args:
        env: a TorchRL ``EnvBase`` with a ``group_map`` (``VmasEnv``,
            ``PettingZooWrapper``, your own) of any batch size; a view :func:`to_torchrl` made gives back
            its hub env; a hub env is returned as it is.
        through_vmas: a TorchRL ``VmasEnv`` of one copy is stepped through its VMAS
            env directly (:func:`marlhub.adapters.vmas.from_vmas`: VMAS's speed,
            and its time limit reported as truncation); False reads it through
            TorchRL's tensordicts like any other env.

    Returns:
        A :class:`~marlhub.adapters.torchrl.adapter.TorchRLHubEnv` (agents named as in
        ``group_map``), a ``VmasHubEnv``, or the hub env behind a view. A batched env
        (``batch_size=[N]``, N > 1) is a :class:`~marlhub.vector.BatchedVectorEnv` of
        ``N`` copies that holds it (``batched.py``); a ``VmasEnv(num_envs=N)`` holds
        its ONE VMAS env (:class:`~marlhub.adapters.vmas.batched.VmasBatch`).

    Raises:
        ConfigError: specs no gymnasium space holds; for a batched env, more than one
            batch dimension or a group whose agents' spaces differ.
        ProtocolError: ``env`` is not a TorchRL env, or has no ``group_map``.
        MissingDependencyError: TorchRL is not installed.

    Example:
        >>> from_torchrl(object())
        Traceback (most recent call last):
        ...
        marlhub.errors.ProtocolError: Expected a TorchRL multi-agent env (an EnvBase with a group_map), got builtins.object which lacks 'reset', 'step', 'group_map'. Bring the env as a torchrl.envs.EnvBase (VmasEnv, PettingZooWrapper, your own EnvBase with a group_map).
    """
    if is_torchrl_view_of_hub(env):
        return env.env
    if _is_view_of_vector(env):
        return env.vector_env
    if isinstance(env, MultiAgentEnv):
        return env
    if not is_torchrl_env(env):
        raise ProtocolError(
            env, ["reset", "step", "group_map"],
            expected="a TorchRL multi-agent env (an EnvBase with a group_map)",
            fix="Bring the env as a torchrl.envs.EnvBase (VmasEnv, PettingZooWrapper, your own "
                "EnvBase with a group_map).")
    _view_module()  # TorchRL is importable
    batch = tuple(env.batch_size)
    if batch not in ((), (1,)):
        return _batched(env, batch, through_vmas)
    if through_vmas and _is_torchrl_vmas(env) and batch == (1,):
        from marlhub.adapters.vmas import from_vmas

        return from_vmas(env._env)
    return importlib.import_module("marlhub.adapters.torchrl.adapter").TorchRLHubEnv(env)


#: The one module above the adapters that this package hands envs to: a batched TorchRL
#: env is a vector env (DESIGN.md section 7), which lives in the vector layer.
BATCHED_VECTOR_MODULE = "marlhub.vector.sources.batched"


def _batched(env: Any, batch: tuple[int, ...], through_vmas: bool) -> Any:
    """A batched TorchRL env (``batch_size=[N]``) as a vector env of ``N`` copies."""
    group_map = batched_group_map(env)
    if group_map is None:
        raise ProtocolError(
            env, ["group_map"], expected="a batched TorchRL multi-agent env (an EnvBase with "
            "batch_size=[N] and a group_map)",
            fix="Give the env a group_map (group -> agent names), as VmasEnv does; a batched "
                "single-agent env goes through gymnasium's vector API instead.")
    vector = importlib.import_module(BATCHED_VECTOR_MODULE)
    if through_vmas and _is_torchrl_vmas(env) and len(batch) == 1:
        from marlhub.adapters.vmas.batched import VmasBatch

        scenario = getattr(env, "scenario_name", None) or type(env._env.scenario).__name__
        return vector.BatchedVectorEnv(VmasBatch(env._env), env_id=f"VmasEnv({scenario})")
    from marlhub.adapters.torchrl.batched import TorchRLBatch

    return vector.BatchedVectorEnv(TorchRLBatch(env, group_map), env_id=type(env).__name__)


def batched_group_map(env: Any) -> Any:
    """The ``group_map`` of a batched TorchRL env, or None: its own, or the one every copy of a
    ``SerialEnv`` / ``ParallelEnv`` shares (such an env is started to ask its copies)."""
    if getattr(env, "is_closed", False) and callable(getattr(env, "start", None)):
        env.start()
    try:
        group_map = env.group_map
    except (AttributeError, RecursionError):
        return None
    if isinstance(group_map, (list, tuple)) and group_map and all(
            isinstance(g, Mapping) and dict(g) == dict(group_map[0]) for g in group_map):
        group_map = group_map[0]
    return dict(group_map) if isinstance(group_map, Mapping) and group_map else None


def _is_view_of_vector(obj: Any) -> bool:
    """Whether ``obj`` is what :func:`to_torchrl` made of a vector env."""
    return bool(getattr(type(obj), "_marlhub_view_of_vector", False)) and is_torchrl_env(obj)


def _is_torchrl_vmas(env: Any) -> bool:
    """Whether ``env`` is exactly TorchRL's ``VmasEnv`` / ``VmasWrapper`` (no transforms)."""
    return any(c.__module__ == "torchrl.envs.libs.vmas" for c in type(env).__mro__)


def _view_module() -> Any:
    """The module of ``HubTorchRLEnv``, once TorchRL is known to be importable."""
    import_backend("torchrl.envs", package="torchrl", extra="torchrl", feature="to_torchrl()",
                   provides=("torch", "tensordict"))
    return importlib.import_module("marlhub.adapters.torchrl.view")


def __getattr__(name: str) -> Any:
    if name == "HubTorchRLEnv":
        return _view_module().hub_torchrl_env_class()
    if name == "TorchRLHubEnv":
        _view_module()
        return importlib.import_module("marlhub.adapters.torchrl.adapter").TorchRLHubEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
