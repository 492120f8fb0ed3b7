"""dm_env_rpc's own compliance test classes, subclassed here, pass against a real `marlhub serve`.

Every class runs against a simultaneous id (``rock_paper_scissors``: two agents
acting at once, so that every action tensor may be sent alone: the world steps when
both are in), a turn-based one (``tic_tac_toe``) and one whose agents come and go
(``traffic``); ``Step`` also against ``gymnasium/CartPole-v1`` (a Box observation,
an int agent id). One ``marlhub serve`` process and one gRPC channel to it per id; each
test gets its own connection (dm_env_rpc's: a ``Process`` stream on that channel, ended
when the test closes it) and world. A channel of its own per test would add the 0.2 s
that grpc takes to close one to each of the ~140 tests.

Two tests cannot apply by design, and say why where they run:
``Step.test_can_send_each_action_individually`` and
``Step.test_can_send_broadcastable_actions`` send each agent's action alone on the
one connection; where only some agents act (turn-based ids, cars that have not
entered), an action for an agent that does not act now is refused, as the hub
contract refuses it in every env.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

grpc = pytest.importorskip("grpc")
compliance = pytest.importorskip("dm_env_rpc.v1.compliance")

from dm_env_rpc.v1 import connection as dm_connection  # noqa: E402
from dm_env_rpc.v1 import dm_env_rpc_pb2, tensor_utils  # noqa: E402
from dm_env_rpc.v1 import error as dm_error  # noqa: E402

from tests.remote.servers import ServeProcess, serving  # noqa: E402

SIMULTANEOUS, TURN_BASED, CHANGING, BOX = ("rock_paper_scissors", "tic_tac_toe", "traffic",
                                            "gymnasium/CartPole-v1")
SERVED = (SIMULTANEOUS, TURN_BASED, CHANGING, BOX)
#: Ids where some agents do not act in a step (see the module's docstring).
SOME_ACT = (TURN_BASED, CHANGING)


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ServeProcess]]:
    with contextlib.ExitStack() as stack:
        yield {served: stack.enter_context(serving(served)) for served in SERVED}


@pytest.fixture(scope="module")
def channels(servers: dict[str, ServeProcess]) -> Iterator[dict[str, Any]]:
    """A channel to each server, ready; the tests open their connections on it."""
    opened = {served: grpc.insecure_channel(server.address) for served, server in servers.items()}
    try:
        for channel in opened.values():
            grpc.channel_ready_future(channel).result(timeout=30)
        yield opened
    finally:
        for channel in opened.values():
            channel.close()


@pytest.fixture(autouse=True, scope="class")
def _channel(request: pytest.FixtureRequest, channels: dict[str, Any]) -> None:
    request.cls.channel = channels[request.cls.served_id]


class _Connected:
    """A connection per test, closed after it; a world created when the class needs one."""

    channel: Any = None
    served_id = SIMULTANEOUS
    needs_world = True

    def setUp(self) -> None:  # noqa: N802 - unittest's name
        super().setUp()  # type: ignore[misc]
        self._connection = dm_connection.Connection(self.channel)
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
            self._connection.close()  # drops the stream: grpc cancels it, the server ends it

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
        # ``direct`` takes a bool only: "no" is refused, not taken as True (see below).
        return {"agents": tensor_utils.pack_tensor(["nobody"]),
                "colour": tensor_utils.pack_tensor("blue"),
                "direct": tensor_utils.pack_tensor("no")}

    def test_direct_takes_a_bool_only(self) -> None:
        for value in ("false", 0.5, 1):
            request = dm_env_rpc_pb2.JoinWorldRequest(
                world_name=self.world_name, settings={"direct": tensor_utils.pack_tensor(value)})
            with pytest.raises(dm_error.DmEnvRpcError, match="setting direct must be a bool, got "
                               f"{type(value).__name__} "):
                self._connection.send(request)
        request = dm_env_rpc_pb2.JoinWorldRequest(
            world_name=self.world_name, settings={"direct": tensor_utils.pack_tensor(False)})
        assert self._connection.send(request).specs.actions  # a bool joins


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


    def _each_action_alone(self) -> None:
        if self.served_id in SOME_ACT:
            pytest.skip(f"{self.served_id}: not every agent acts in a step, and an action for "
                        "one that does not act now is refused (the hub contract), so each "
                        "agent's action cannot be sent alone on one connection")

    def test_can_send_each_action_individually(self) -> None:
        self._each_action_alone()
        super().test_can_send_each_action_individually()

    def test_can_send_broadcastable_actions(self) -> None:
        self._each_action_alone()
        super().test_can_send_broadcastable_actions()


class TestStepCartPole(TestStep):
    """Step, with CartPole's Box observation (bounds per element, some infinite)."""

    served_id = BOX


def _on(served_id: str, *classes: type) -> dict[str, type]:
    """Each class again, served by ``served_id``: ``TestReset`` -> ``TestResetTicTacToe``."""
    suffix = "".join(part.title() for part in served_id.split("_"))
    return {f"{cls.__name__}{suffix}": type(f"{cls.__name__}{suffix}", (cls,),
                                            {"served_id": served_id, "__module__": __name__})
            for cls in classes}


for _served in SOME_ACT:
    globals().update(_on(_served, TestCreateDestroyWorld, TestJoinLeaveWorld, TestReset,
                         TestResetWorld, TestStep))
