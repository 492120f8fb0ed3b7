"""In-process marlhub servers for the remote adapter's tests (real gRPC servers on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("grpc")
pytest.importorskip("dm_env_rpc")

from marlhub.remote import RemoteServer, serve  # noqa: E402


@pytest.fixture
def served() -> Iterator[Callable[..., RemoteServer]]:
    """``served(env_id, **serve_options)`` starts a server; every one is stopped after the test."""
    servers: list[RemoteServer] = []

    def start(env_id: str, config: Any = None, **options: Any) -> RemoteServer:
        server = serve(env_id, config, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop(0)
