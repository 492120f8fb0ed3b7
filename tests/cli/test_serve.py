"""`marlhub serve`: a real process that prints its address, serves, and stops cleanly on signals."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

pytest.importorskip("grpc")
pytest.importorskip("dm_env_rpc")

import marlhub  # noqa: E402
from marlhub.adapters.remote.lockstep import compare_with_local  # noqa: E402
from marlhub.cli import main  # noqa: E402
from marlhub.errors import RemoteEnvError  # noqa: E402
from tests.remote.servers import REPO, serving  # noqa: E402


@pytest.mark.parametrize("sig, ignored", [(signal.SIGTERM, False), (signal.SIGINT, False),
                                         (signal.SIGINT, True)],
                         ids=["SIGTERM", "SIGINT", "SIGINT, started with SIGINT ignored"])
def test_serve_prints_its_address_serves_and_stops_cleanly(sig: int, ignored: bool) -> None:
    """Also when started as a background job of a non-interactive shell (SIGINT ignored)."""
    with serving("openspiel/kuhn_poker", ignore_sigint=ignored) as server:
        assert server.address.startswith("127.0.0.1:")
        env = marlhub.make(f"remote/{server.address}")
        assert compare_with_local(env, marlhub.make("openspiel/kuhn_poker"), episodes=2) == []
        assert server.stop(sig) == 0
        assert server.rest_of_output() == "marlhub serve: stopped\n"
        with pytest.raises(RemoteEnvError):
            env.reset()
        env.close()


def test_serve_with_a_token_and_client_config() -> None:
    with serving("traffic", "--allow-config", "--config", '{"num_cars": 2}',
                 env={"MARLHUB_TOKEN": "s3cret"}) as server:
        with pytest.raises(RemoteEnvError, match="UNAUTHENTICATED"):
            marlhub.make(f"remote/{server.address}", {"token": "nope"})
        env = marlhub.make(f"remote/{server.address}",
                           {"token": "s3cret", "config": {"max_steps": 5}})
        assert env.env_config == {"num_cars": 2, "max_steps": 5}
        env.close()


@pytest.mark.parametrize(("argv", "message"), [
    (["serve", "tic_tac_to"], "Did you mean 'tic_tac_toe'"),
    (["serve", "traffic", "--config", "{oops"], "--config is not valid JSON"),
    (["serve", "traffic", "--config", '{"num_carz": 1}'], "num_carz"),
    (["serve", "traffic", "--port", "70000"], "expected a port in 0..65535"),
])
def test_serve_refuses_what_it_cannot_serve(argv: list[str], message: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_serve_names_the_missing_extra() -> None:
    code = ("import sys; sys.modules['grpc'] = None\n"
            "from marlhub.cli import main\n"
            "raise SystemExit(main(['serve', 'tic_tac_toe', '--port', '0']))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert run.returncode == 2 and "pip install 'marlhub[remote]'" in run.stderr, run.stderr
