"""dm_env_rpc's own compliance test classes, subclassed here, pass against a real `marlhub serve`.

One ``marlhub serve rock_paper_scissors`` process (two agents acting at once, so
that every action tensor may be sent alone: the world steps when both are in)
and one ``marlhub serve gymnasium/CartPole-v1`` (a Box observation, an int agent
id) serve every class; each test gets its own connection and world.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
compliance = pytest.importorskip("dm_env_rpc.v1.compliance")

from dm_env_rpc.v1 import connection as dm_connection  # noqa: E402
from dm_env_rpc.v1 import dm_env_rpc_pb2, tensor_utils  # noqa: E402

from tests.remote.servers import ServeProcess, serving  # noqa: E402

SERVED = ("rock_paper_scissors", "gymnasium/CartPole-v1")


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ServeProcess]]:
    with serving(SERVED[0]) as first, serving(SERVED[1]) as second:
        yield {SERVED[0]: first, SERVED[1]: second}


@pytest.fixture(autouse=True, scope="class")
def _address(request: pytest.FixtureRequest, servers: dict[str, ServeProcess]) -> None:
    request.cls.address = servers[request.cls.served_id].address


class _Connected:
    """A connection per test, closed after it; a world created when the class needs one."""

    address = ""
    served_id = SERVED[0]
    needs_world = True

    def setUp(self) -> None:  # noqa: N802 - unittest's name
        super().setUp()  # type: ignore[misc]
        self._channel = grpc.insecure_channel(self.address)
        grpc.channel_ready_future(self._channel).result(timeout=30)
        self._connection = dm_connection.Connection(self._channel)
        self._world = None
        if self.needs_world:
            self._world = self._connection.send(dm_env_rpc_pb2.CreateWorldRequest()).world_name

    def tearDown(self) -> None:  # noqa: N802
        try:
            super().tearDown()  # type: ignore[misc]
        finally:
            self._connection.send(dm_env_rpc_pb2.LeaveWorldRequest())
            if self._world is not None:
                self._connection.send(dm_env_rpc_pb2.DestroyWorldRequest(world_name=self._world))
            self._connection.close()
            self._channel.close()

    @property
    def connection(self) -> Any:
        return self._connection

    @property
    def world_name(self) -> str:
        return str(self._world)


class TestCreateDestroyWorld(_Connected, compliance.CreateDestroyWorld):
    needs_world = False

    @property
    def required_world_settings(self) -> dict[str, Any]:
        return {}

    @property
    def invalid_world_settings(self) -> dict[str, Any]:
        return {"env_id": tensor_utils.pack_tensor("os:system"),  # no id, no import from clients
                "config": tensor_utils.pack_tensor("{}")}  # this server takes no client config

    @property
    def has_multiple_world_support(self) -> bool:
        return True


class TestJoinLeaveWorld(_Connected, compliance.JoinLeaveWorld):
    @property
    def invalid_join_settings(self) -> dict[str, Any]:
        return {"agents": tensor_utils.pack_tensor(["nobody"]),
                "colour": tensor_utils.pack_tensor("blue")}


class TestReset(_Connected, compliance.Reset):
    def join_world(self) -> Any:
        return self._connection.send(dm_env_rpc_pb2.JoinWorldRequest(world_name=self.world_name)).specs


class TestResetWorld(_Connected, compliance.ResetWorld):
    @property
    def required_reset_world_settings(self) -> dict[str, Any]:
        return {"seed": tensor_utils.pack_tensor(3)}


class TestStep(_Connected, compliance.Step):
    """Step, with rock_paper_scissors' Discrete observations and actions."""

    def setUp(self) -> None:  # noqa: N802
        super().setUp()
        self._specs = self._connection.send(
            dm_env_rpc_pb2.JoinWorldRequest(world_name=self.world_name)).specs

    @property
    def specs(self) -> Any:
        return self._specs


class TestStepCartPole(TestStep):
    """Step, with CartPole's Box observation (bounds per element, some infinite)."""

    served_id = SERVED[1]
