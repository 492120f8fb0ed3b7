"""Remote envs over DeepMind's dm_env_rpc protocol (gRPC), both ways.

* hub -> dm_env_rpc (``view.py``): :class:`~marlhub.adapters.remote.view.EnvironmentService`
  serves worlds of a hub env factory to any dm_env_rpc client;
  ``marlhub serve ID`` / :func:`marlhub.remote.serve` run it for a registry id.
* dm_env_rpc -> hub: :func:`connect` (and ``marlhub.make("remote/HOST:PORT")``,
  the ``remote/`` family) gives a marlhub server's world as a hub env that
  keeps the whole contract over the wire (``adapter.py``), and any other
  dm_env_rpc server as a one-agent hub env (``plain.py``); :func:`from_dm_env_rpc`
  takes an address or dm_env_rpc's own ``DmEnvAdaptor``.
* ``lockstep.py`` compares a remote env with a local one of the same id
  (``marlhub check remote/HOST:PORT --against-native``).

The mapping of the multi-agent protocol onto dm_env_rpc, in short (details
in ``layout.py``, ``session.py``, ``encode.py``, ``actions.py``):

* A server hosts worlds of one id; ``CreateWorld`` makes one (setting
  ``config``, only if the server allows it), ``DestroyWorld`` ends it, and a
  connection that goes away destroys the worlds it created.
* ``JoinWorld`` joins for all agents (default), some (``agents``), or one
  (``agent``, with unprefixed names as dm_env's ``DmEnvAdaptor`` expects);
  several connections may share a world, one per agent, and the world steps
  once every actor's action has arrived. ``LeaveWorld`` drops the connection's
  pending actions.
* Per agent ``A``: tensors ``A.observation[.key]`` (each space leaf, with
  bounds), ``A.reward``, ``A.discount``, ``A.acting`` (who acts next),
  ``A.terminated``, ``A.truncated``, ``A.action_mask``, and the actions
  ``A.action[.key]``; the world: ``__all__.terminated`` / ``__all__.truncated``
  (the episode's end, also the step state ``TERMINATED``) and ``__all__.step``
  (the step's dicts as JSON, key order and infos included).
* Properties (dm_env_rpc's extension): ``marlhub.env_id``, ``marlhub.config``,
  ``marlhub.world`` (agents, spaces), ``marlhub.render``, ``marlhub.version``.
* Spaces that are not Discrete, Box, MultiDiscrete, MultiBinary, Text or
  Dict / Tuple of those (or agent ids that are not str / int) are refused at
  ``CreateWorld`` (and when the server starts).
* Errors: a refused request is a status with a code and a message; an error
  the env raised comes back to marlhub's client as the same exception class.

Importing this package imports neither grpc nor dm_env_rpc (pip extra ``remote``).

Example:
    >>> from marlhub.envs import TicTacToe
    >>> is_dm_env_adaptor(TicTacToe())
    False
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.adapters.remote.family import (
    CONNECT_KEYS,
    RemoteFamily,
    connect,
    parse_address,
)
from marlhub.backends import import_backend

__all__ = ["CONNECT_KEYS", "RemoteFamily", "connect", "from_dm_env_rpc", "is_dm_env_adaptor",
           "parse_address"]

_ADAPTOR = ("dm_env_rpc.v1.dm_env_adaptor", "DmEnvAdaptor")


def is_dm_env_adaptor(obj: Any) -> bool:
    """Tell whether ``obj`` is dm_env_rpc's ``DmEnvAdaptor`` (never imports dm_env_rpc)."""
    if isinstance(obj, type):
        return False
    return any((c.__module__, c.__name__) == _ADAPTOR for c in type(obj).__mro__)


def from_dm_env_rpc(source: Any, config: Any = None, **options: Any) -> Any:
    """Return a dm_env_rpc env as a hub env.

    Args:
        source: ``"HOST:PORT"`` (as :func:`connect`), or a ``DmEnvAdaptor`` joined
            to a world (a one-agent hub env over its connection; the adaptor is
            not to be used meanwhile).
        config: for an address, as :func:`connect`.
        options: for an address, as :func:`connect`; for an adaptor, ``agent_id``.

    Raises:
        MissingDependencyError: dm_env_rpc or grpc is not installed.
    """
    import_backend("dm_env_rpc", package="dm_env_rpc", extra="remote", feature="from_dm_env_rpc()")
    if isinstance(source, str):
        return connect(parse_address(source), config, **options)
    if not is_dm_env_adaptor(source):
        raise TypeError(f"from_dm_env_rpc() takes 'HOST:PORT' or a DmEnvAdaptor, got "
                        f"{type(source).__name__}")
    link_module = importlib.import_module("marlhub.adapters.remote.link")
    plain = importlib.import_module("marlhub.adapters.remote.plain")
    # DmEnvAdaptor keeps its connection and specs in attributes of its own.
    link = link_module.ConnectionLink(source._connection)
    return plain.PlainRemoteEnv(link.address, link=link, specs=source._dm_env_rpc_specs,
                                **options)
