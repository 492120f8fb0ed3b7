"""TLS for marlhub's two gRPC servers and their clients, with gRPC's own credentials.

Both servers (``marlhub serve`` and the learner of ``external/HOST:PORT``) speak plain text
unless given a certificate and its private key (PEM files): then they take TLS connections
only. Their clients then name the certificate they trust (the server's own, when it is
self-made, or the authority that signed it) as ``tls_root``, or ``True`` for gRPC's default
roots. :func:`server_credentials` and :func:`channel_credentials` read the files once, and
say which file is wrong when one is; the guide ``docs/guides/security.rst`` has the whole
set-up, with commands.

Example:
    >>> server_credentials(None, None) is None, channel_credentials(None) is None
    (True, True)
    >>> server_credentials("cert.pem", None)
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'TLS': a certificate without its private key. Give both tls_cert and tls_key (PEM files), or neither for plain text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

from marlhub.backends import import_backend
from marlhub.errors import ConfigError

__all__ = ["PemPath", "channel_credentials", "read_pem", "server_credentials"]

#: A PEM file, by path.
PemPath = Union[str, "os.PathLike[str]"]


def _grpc() -> Any:
    return import_backend("grpc", package="grpc", extra="remote", feature="TLS over gRPC")


def read_pem(path: PemPath, what: str) -> bytes:
    """Return the bytes of the PEM file at ``path`` (``what``: the option that named it).

    Raises:
        ConfigError: the file cannot be read, or holds no PEM block.

    Example:
        >>> read_pem("no/such.pem", "tls_root")
        Traceback (most recent call last):
        ...
        marlhub.errors.ConfigError: Bad config for 'TLS': tls_root 'no/such.pem' cannot be read (No such file or directory). Name a PEM file that this process can read.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError("TLS", f"{what} {str(path)!r} cannot be read ({exc.strerror or exc})",
                          fix="Name a PEM file that this process can read.") from None
    if b"-----BEGIN " not in data:
        raise ConfigError("TLS", f"{what} {str(path)!r} holds no PEM block ('-----BEGIN ...')",
                          fix="Name a PEM file (openssl and the cryptography package write "
                          "them).")
    return data


def server_credentials(cert: Optional[PemPath], key: Optional[PemPath]) -> Any:
    """Return gRPC server credentials from a certificate chain and its key (None: plain text).

    Args:
        cert: the server's certificate (chain), a PEM file.
        key: its private key, a PEM file (unencrypted).

    Raises:
        ConfigError: one of the two without the other, or a file that cannot be read.
        MissingDependencyError: grpcio is not installed.
    """
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        given = "a certificate without its private key" if key is None else \
            "a private key without its certificate"
        raise ConfigError("TLS", given, fix="Give both tls_cert and tls_key (PEM files), or "
                          "neither for plain text.")
    pair = (read_pem(key, "tls_key"), read_pem(cert, "tls_cert"))
    return _grpc().ssl_server_credentials([pair])


def channel_credentials(root: Union[PemPath, bool, None]) -> Any:
    """Return gRPC channel credentials that trust ``root`` (None or False: plain text).

    Args:
        root: a PEM file of the certificates to trust (a self-made server certificate,
            or the authority that signed the server's), or True for gRPC's default roots.

    Raises:
        ConfigError: a file that cannot be read.
        MissingDependencyError: grpcio is not installed.
    """
    if root is None or root is False or root == "":
        return None
    if root is True:
        return _grpc().ssl_channel_credentials()
    return _grpc().ssl_channel_credentials(root_certificates=read_pem(root, "tls_root"))
