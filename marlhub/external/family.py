"""The ``external/`` family: ``external/HOST:PORT`` listens there for simulators that drive.

``marlhub.make_vec("external/127.0.0.1:5555", 4)`` starts a
:class:`~marlhub.external.server.PolicyServer` at that address and returns
an :class:`~marlhub.external.vector.ExternalVectorEnv` of 4 concurrent
episodes; ``marlhub.make("external/127.0.0.1:5555")`` one hub env. Unless the
config gives the agents and spaces, making the env waits (up to ``timeout``)
for the first simulator to connect and declare them. Port 0 listens on any
free port (the env's ``address`` says which); then give the spaces in the
config, since no simulator can know the port before the env exists.

Example:
    >>> import gymnasium as gym
    >>> spaces = {"possible_agents": ["a"], "observation_spaces": {"a": gym.spaces.Discrete(2)},
    ...           "action_spaces": {"a": gym.spaces.Discrete(2)}}
    >>> env = ExternalFamily().make("127.0.0.1:0", {**spaces, "timeout": 0.1})
    >>> env.address.startswith("127.0.0.1:"), env.possible_agents
    (True, ['a'])
    >>> env.reset()
    Traceback (most recent call last):
    ...
    marlhub.errors.ExternalTimeoutError: copy 0 of external/127.0.0.1:...: no simulator started an episode that asked for a decision within timeout=0.1 s (no simulator is connected to 127.0.0.1:...). Start simulators that call start_episode() and get_action(), run as many concurrent episodes as copies (or use recv() to take whichever copies are ready), or raise 'timeout'.
    >>> env.close()
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from marlhub.errors import ConfigError, UnknownEnvError
from marlhub.external.copies import DEFAULT_TIMEOUT, ExternalCopy
from marlhub.external.episodes import DEFAULT_MAX_EPISODES
from marlhub.external.server import (
    DEFAULT_MAX_CLIENT_EPISODES,
    DEFAULT_MAX_CLIENTS,
    PolicyServer,
)
from marlhub.external.vector import ExternalVectorEnv

__all__ = ["CONFIG_KEYS", "ExternalFamily", "listen"]

#: Config keys of an ``external/`` id, and what each does.
CONFIG_KEYS = {
    "timeout": f"seconds to wait for a simulator's request (default {DEFAULT_TIMEOUT:g}); a "
               "simulator silent that long has its episode truncated",
    "token": "the token simulators must send (default: the MARLHUB_TOKEN environment variable)",
    "max_clients": f"how many simulators may be connected at once (default {DEFAULT_MAX_CLIENTS})",
    "max_episodes": f"how many episodes may run at once (default {DEFAULT_MAX_EPISODES})",
    "max_client_episodes": "how many episodes one simulator may run at once (default "
                           f"{DEFAULT_MAX_CLIENT_EPISODES})",
    "tls_cert": "listen over TLS with this certificate (chain), a PEM file; needs tls_key "
                "(default: plain text)",
    "tls_key": "the private key of tls_cert, a PEM file",
    "possible_agents": "the agents (with the two spaces below; default: the first simulator's)",
    "observation_spaces": "each agent's observation space",
    "action_spaces": "each agent's action space",
}
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")


def listen(rest: str, config: Mapping[str, Any]) -> tuple[PolicyServer, float]:
    """Start the server ``external/rest`` asks for; return it and the timeout.

    Raises:
        UnknownEnvError: ``rest`` is not ``HOST:PORT``.
        ConfigError: an unknown key, spaces given in part, or TLS files that cannot be read.
        ExternalTimeoutError: no simulator declared the spaces within the timeout.
    """
    found = _ADDRESS.match(rest)
    if found is None or int(found.group(2)) > 65535:
        raise UnknownEnvError(f"external/{rest}", (), detail=(
            "External ids are external/HOST:PORT, the address the learner listens at for "
            "simulators, e.g. external/127.0.0.1:5555 (port 0: any free port)."))
    options = dict(config or {})
    unknown = sorted(set(options) - set(CONFIG_KEYS))
    if unknown:
        raise ConfigError(f"external/{rest}", f"unknown keys {unknown}", unknown=unknown,
                          accepted=list(CONFIG_KEYS))
    given = [k for k in ("possible_agents", "observation_spaces", "action_spaces") if k in options]
    if given and len(given) != 3:
        raise ConfigError(f"external/{rest}", f"{given} given without the others",
                          fix="Give possible_agents, observation_spaces and action_spaces "
                          "together, or none (the first simulator's are taken).")
    spaces = (list(options["possible_agents"]), options["observation_spaces"],
              options["action_spaces"]) if given else None
    timeout = float(options.get("timeout", DEFAULT_TIMEOUT))
    server = PolicyServer(rest, token=options.get("token") or os.environ.get("MARLHUB_TOKEN"),
                          max_clients=int(options.get("max_clients", DEFAULT_MAX_CLIENTS)),
                          max_episodes=int(options.get("max_episodes", DEFAULT_MAX_EPISODES)),
                          max_client_episodes=int(options.get("max_client_episodes",
                                                              DEFAULT_MAX_CLIENT_EPISODES)),
                          tls_cert=options.get("tls_cert"), tls_key=options.get("tls_key"),
                          spaces=spaces)
    try:
        server.wait_for_book(timeout)
    except BaseException:
        server.stop()
        raise
    return server, timeout


class ExternalFamily:
    """Resolves ``external/HOST:PORT`` by listening there (see the module docstring)."""

    name = "external"
    description = ("simulators that drive: external/HOST:PORT listens for simulators that "
                   "connect (marlhub.external.PolicyClient, or any gRPC client of "
                   "external.proto) and ask for actions")

    def ids(self) -> Iterable[tuple[str, str]]:
        """Nothing to list: the learner picks the address."""
        return []

    def make(self, rest: str, config: Mapping[str, Any]) -> ExternalCopy:
        """One hub env, one episode at a time, of the simulators that connect at ``rest``."""
        server, timeout = listen(rest, config)
        assert server.book is not None
        env = ExternalCopy(server.book, timeout=timeout, name=f"external/{server.address}",
                           waiting_for=server.describe, on_close=server.stop)
        env.address = server.address
        return env

    def make_vector(self, rest: str, config: Mapping[str, Any], num_envs: int,
                    **options: Any) -> ExternalVectorEnv:
        """A vector env of ``num_envs`` concurrent episodes of the simulators at ``rest``
        (``options``: ``autoreset_mode``, ``batch_size``)."""
        server, timeout = listen(rest, config)
        assert server.book is not None
        try:
            envs = ExternalVectorEnv(server.book, num_envs, timeout=timeout,
                                     env_id=f"external/{server.address}",
                                     waiting_for=server.describe, on_close=server.stop,
                                     **options)
        except BaseException:
            server.stop()
            raise
        envs.address = server.address
        return envs

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
