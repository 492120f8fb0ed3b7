"""marlhub.remote.serve: what it checks before listening, where it listens, processes, stopping."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("grpc")
pytest.importorskip("dm_env_rpc")

import marlhub  # noqa: E402
from marlhub.adapters.remote.lockstep import compare_with_local  # noqa: E402
from marlhub.errors import ConfigError, MarlhubWarning, RemoteEnvError, UnknownEnvError  # noqa: E402
from marlhub.remote import connect, is_loopback, serve  # noqa: E402


def test_serve_checks_the_id_and_config_before_listening() -> None:
    with pytest.raises(UnknownEnvError, match="Did you mean 'tic_tac_toe'"):
        serve("tic_tac_to")
    with pytest.raises(ConfigError, match="num_carz"):
        serve("traffic", {"num_carz": 3})


def test_a_server_is_a_context_manager_that_destroys_its_worlds() -> None:
    with serve("traffic", {"num_cars": 2}) as server:
        assert repr(server).startswith(f"RemoteServer('traffic' at {server.address}, serving")
        env = connect(server.address)
        assert env.env_config == {"num_cars": 2} and len(server.worlds.worlds) == 1
    assert server.worlds.worlds == {} and "stopped" in repr(server)
    env.close()


def test_a_taken_port_is_a_clear_error() -> None:
    with serve("rock_paper_scissors") as server:
        with pytest.raises(RemoteEnvError, match="failed in bind: cannot listen there"):
            serve("rock_paper_scissors", port=server.port)


def test_listening_beyond_loopback_without_a_token_warns() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")
    with pytest.warns(MarlhubWarning, match="beyond this machine, without a token"):
        server = serve("rock_paper_scissors", host="0.0.0.0")
    server.stop(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        serve("rock_paper_scissors", host="0.0.0.0", token="t").stop(0)


def test_several_processes_share_the_port() -> None:
    with serve("openspiel/kuhn_poker", processes=2) as server:
        envs = [connect(server.address) for _ in range(4)]
        for seed, env in enumerate(envs):
            assert compare_with_local(env, marlhub.make("openspiel/kuhn_poker"), episodes=2,
                                      seed=seed) == []
            env.close()
        children = server.child_processes
        assert len(children) == 1 and children[0].is_alive()
    assert not children[0].is_alive()


def test_a_module_attr_target_is_served_with_each_worlds_config() -> None:
    """The operator may serve an env class or factory that is in no registry."""
    from marlhub.conformance import check
    from marlhub.envs import Traffic
    from marlhub.errors import TargetError

    with serve("tests.conformance.valid_envs:IntegerAgentIds") as server:
        from tests.conformance.valid_envs import IntegerAgentIds

        env = connect(server.address)
        assert env.possible_agents == IntegerAgentIds().possible_agents
        assert compare_with_local(env, IntegerAgentIds(), episodes=3) == []
        env.close()
        report = check(f"remote/{server.address}", episodes=2, against_native=True)
        [skipped] = report.findings
        assert skipped.severity == "warning" and "no local twin was made" in skipped.message
    with serve("marlhub.envs:Traffic", {"num_cars": 3}, allow_config=True) as server:
        env = connect(server.address, {"road_length": 5})
        assert compare_with_local(env, Traffic({"num_cars": 3, "road_length": 5}),
                                  episodes=2) == []
        env.close()
    with pytest.raises(TargetError, match="importing module 'no_such_module_xyz' failed"):
        serve("no_such_module_xyz:Env")
    with pytest.raises(TargetError, match="every world needs its own env"):
        serve("tests.remote.test_server:AN_INSTANCE")


#: An env instance as a module:attr target, which a server refuses (its worlds would share it).
AN_INSTANCE = marlhub.make("rock_paper_scissors")
