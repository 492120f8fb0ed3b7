"""Remote envs: serve a registry id over dm_env_rpc, and connect to such servers.

* :func:`serve` (``marlhub serve ID`` on the command line) hosts worlds of one
  registry id in a gRPC server that any dm_env_rpc client can use;
* :func:`connect` (``marlhub.make("remote/HOST:PORT")``) gives the env of a
  server as a hub env: a marlhub server's world with its whole contract, or a
  plain dm_env_rpc server's env as a one-agent env.

How the multi-agent protocol maps onto dm_env_rpc is told in
:mod:`marlhub.adapters.remote`, which holds the protocol, the client and the
server's service; this package adds what needs the registry (serving an id).
Needs the pip extra ``remote`` (grpcio, dm-env-rpc).

Example:
    >>> with serve("tic_tac_toe") as server:
    ...     env = connect(server.address)
    ...     obs, infos = env.reset(seed=0)
    ...     print(type(env).__name__, list(obs))
    ...     env.close()
    RemoteEnv ['player2']
"""

from __future__ import annotations

from marlhub.adapters.remote import connect
from marlhub.remote.server import RemoteServer, is_loopback, serve

__all__ = ["RemoteServer", "connect", "is_loopback", "serve"]
