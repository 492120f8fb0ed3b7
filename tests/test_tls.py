"""TLS on both servers, with a certificate made for the test (127.0.0.1 and localhost).

One episode over TLS for each server, ``marlhub serve --tls-cert --tls-key`` and the
learner of ``external/HOST:PORT`` with ``tls_cert``/``tls_key``; a plain-text client of
either is refused. The certificate is self-made with the ``cryptography`` package (the
``test`` extra), as ``docs/guides/security.rst`` makes one with ``openssl``.
"""

from __future__ import annotations

import datetime
import ipaddress
import threading
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.errors import ConfigError, ExternalEnvError, RemoteEnvError

pytest.importorskip("grpc")

AGENTS = ["red"]
SPACES = {"possible_agents": AGENTS,
          "observation_spaces": {"red": gym.spaces.Box(-1, 1, (2,), np.float32)},
          "action_spaces": {"red": gym.spaces.Discrete(3)}}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for localhost and 127.0.0.1, and its key: two PEM files."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return str(folder / "cert.pem"), str(folder / "key.pem")


def test_tls_files_that_cannot_serve_are_config_errors(tmp_path: Path) -> None:
    pytest.importorskip("dm_env_rpc")
    from marlhub.external import PolicyClient
    from marlhub.remote import serve

    (tmp_path / "plain.txt").write_text("not a certificate")
    with pytest.raises(ConfigError, match="a certificate without its private key"):
        serve("tic_tac_toe", tls_cert=tmp_path / "plain.txt")
    with pytest.raises(ConfigError, match="tls_key '.*nope.pem' cannot be read"):
        serve("tic_tac_toe", tls_cert=tmp_path / "plain.txt", tls_key=tmp_path / "nope.pem")
    with pytest.raises(ConfigError, match="tls_root '.*plain.txt' holds no PEM block"):
        marlhub.make("remote/127.0.0.1:1", {"tls_root": str(tmp_path / "plain.txt")})
    with pytest.raises(ConfigError, match="a private key without its certificate"):
        marlhub.make_vec("external/127.0.0.1:0", 1, {**SPACES, "tls_key": "key.pem"})
    with pytest.raises(ConfigError, match="tls_root 'nope.pem' cannot be read"):
        PolicyClient("127.0.0.1:1", tls_root="nope.pem", **SPACES)


def test_marlhub_serve_over_tls(certificate: tuple[str, str]) -> None:
    pytest.importorskip("dm_env_rpc")
    from marlhub.adapters.remote.lockstep import compare_with_local
    from tests.remote.servers import serving

    cert, key = certificate
    with serving("tic_tac_toe", "--tls-cert", cert, "--tls-key", key) as server:
        for host in ("127.0.0.1", "localhost"):  # the names the certificate holds
            env = marlhub.make(f"remote/{host}:{server.port}", {"tls_root": cert})
            assert compare_with_local(env, marlhub.make("tic_tac_toe"), episodes=1) == []
            env.close()
        with pytest.raises(RemoteEnvError, match="no server accepted the connection within "
                           "0.5s \\(a server that takes TLS only needs 'tls_root'\\)"):
            marlhub.make(f"remote/{server.address}", {"connect_timeout": 0.5})


def test_the_external_learner_over_tls(certificate: tuple[str, str]) -> None:
    from marlhub.external import PolicyClient

    cert, key = certificate
    envs = marlhub.make_vec("external/127.0.0.1:0", 1, {**SPACES, "timeout": 10,
                                                        "tls_cert": cert, "tls_key": key})
    got: dict[str, Any] = {}

    def simulate() -> None:
        with PolicyClient(envs.address, tls_root=cert, **SPACES) as client:
            episode = client.start_episode()
            got["action"] = client.get_action(episode, {"red": np.array([0.5, 0.5], np.float32)})
            client.log_returns(episode, {"red": 2.0})
            client.end_episode(episode, {"red": np.array([1.0, 1.0], np.float32)})

    simulator = threading.Thread(target=simulate, daemon=True)
    simulator.start()
    obs, _ = envs.reset()
    obs, rewards, terminateds, _, _ = envs.step([{"red": 2}])
    simulator.join(10)
    assert got == {"action": {"red": 2}} and rewards == [{"red": 2.0}]
    assert terminateds[0]["__all__"] and np.array_equal(obs[0]["red"], [1.0, 1.0])
    with pytest.raises(ExternalEnvError, match="no learner listens there \\(waited 0.5 s; a "
                       "learner that takes TLS only needs tls_root=\\)"):
        PolicyClient(envs.address, connect_timeout=0.5, **SPACES)
    envs.close()
