"""hub -> TorchRL: any hub env as a ``torchrl.envs.EnvBase`` with TorchRL's multi-agent layout.

* :func:`to_torchrl` gives a hub env (or anything :func:`~marlhub.adapters.to_hub`
  accepts) as an instance of ``HubTorchRLEnv``, a real ``EnvBase`` subclass
  (``view.py``): per-group tensordicts with an agent dimension (``group_map``,
  ``groups.py``), specs built from the hub's spaces (``specs.py``, ``layout.py``),
  a per-group ``"mask"`` of who acts next, ``"action_mask"`` from the hub's
  masks, ``done`` / ``terminated`` / ``truncated`` per agent and at the root.
  TorchRL's ``check_env_specs``, ``rollout``, ``SerialEnv`` and ``ParallelEnv``
  take it; turn-based envs and agents that come and go need no padding.
* :func:`from_torchrl` unwraps: ``from_torchrl(to_torchrl(hub)) is hub``. Other
  TorchRL envs into the hub are not supported yet (:class:`~marlhub.errors.ProtocolError`).

Importing this package imports no torch; :func:`to_torchrl` does (pip extra
``torchrl``). Semantics: DESIGN.md section 3, "hub <-> TorchRL".

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
from typing import Any

from marlhub.adapters.apis import to_hub
from marlhub.backends import import_backend
from marlhub.core import MultiAgentEnv
from marlhub.errors import ProtocolError

__all__ = ["from_torchrl", "is_torchrl_env", "is_torchrl_view_of_hub", "to_torchrl"]

_TORCHRL_BASE = ("torchrl.envs.common", "EnvBase")


def is_torchrl_env(obj: Any) -> bool:
    """Tell whether ``obj`` is an instance of TorchRL's ``EnvBase`` (never imports torch).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_torchrl_env(TicTacToe())
        False
    """
    if isinstance(obj, type):
        return False
    return any((c.__module__, c.__name__) == _TORCHRL_BASE for c in type(obj).__mro__)


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
            (PettingZoo, OpenSpiel, Gymnasium envs go through the hub). A view
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
        A ``HubTorchRLEnv`` whose ``env`` is the hub env.

    Raises:
        MissingDependencyError: TorchRL is not installed.
        ConfigError: a space no TorchRL spec holds (a Text observation names the
            agent and its space), a bad ``group_map``, a group whose agents' specs
            TorchRL cannot stack, or an unknown ``illegal_action``.
        AgentIdError: a ``group_map`` that misses, repeats or invents agents.
        ProtocolError: ``env`` cannot be turned into a hub env.
    """
    if is_torchrl_view_of_hub(env):
        return env
    if not isinstance(env, MultiAgentEnv):
        env = to_hub(env)
    return _view_module().hub_torchrl_env_class()(
        env, group_map=group_map, categorical_actions=categorical_actions, device=device,
        illegal_action=illegal_action)


def from_torchrl(env: Any) -> Any:
    """Return the hub env behind a TorchRL env that :func:`to_torchrl` made.

    Args:
        env: a TorchRL env made by :func:`to_torchrl` (or a hub env, returned as it is).

    Raises:
        ProtocolError: any other env: TorchRL envs into the hub are not supported yet.

    Example:
        >>> from_torchrl(object())
        Traceback (most recent call last):
        ...
        marlhub.errors.ProtocolError: Expected a TorchRL env made by marlhub.to_torchrl, got builtins.object which lacks 'the hub env behind it'. TorchRL envs into the hub are not supported yet: only the envs to_torchrl made go back (from_torchrl(to_torchrl(hub)) is hub). Bring the env to marlhub from its own library instead (PettingZoo, OpenSpiel, Gymnasium, RLlib).
    """
    if is_torchrl_view_of_hub(env):
        return env.env
    if isinstance(env, MultiAgentEnv):
        return env
    raise ProtocolError(
        env, ["the hub env behind it"], expected="a TorchRL env made by marlhub.to_torchrl",
        fix="TorchRL envs into the hub are not supported yet: only the envs to_torchrl made go "
            "back (from_torchrl(to_torchrl(hub)) is hub). Bring the env to marlhub from its own "
            "library instead (PettingZoo, OpenSpiel, Gymnasium, RLlib).")


def _view_module() -> Any:
    """The module of ``HubTorchRLEnv``, once TorchRL is known to be importable."""
    import_backend("torchrl.envs", package="torchrl", extra="torchrl", feature="to_torchrl()",
                   provides=("torch", "tensordict"))
    return importlib.import_module("marlhub.adapters.torchrl.view")


def __getattr__(name: str) -> Any:
    if name == "HubTorchRLEnv":
        return _view_module().hub_torchrl_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
