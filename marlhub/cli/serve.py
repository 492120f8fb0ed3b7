"""``marlhub serve ID``: host worlds of an env id for dm_env_rpc clients, until stopped.

Prints one line when it listens (``marlhub serve: serving 'ID' at HOST:PORT ...``,
flushed, so scripts can read the port of ``--port 0``) and stops cleanly on
Ctrl-C (SIGINT) or SIGTERM: the streams get a second to end, every world is
destroyed, the exit code is 0. Exit code 2: a usage error, an id that cannot
be made or served, a port that cannot be bound.

The token (``--token``, or the ``MARLHUB_TOKEN`` environment variable, which
keeps it out of the process list) must then come with every client's calls.
With ``--tls-cert FILE --tls-key FILE`` (PEM) the server takes TLS connections
only; clients then pass the certificate they trust as ``tls_root``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any

from marlhub.cli.output import err, out, parse_config, positive_int
from marlhub.errors import MarlhubError

__all__ = ["DEFAULT_PORT", "add_serve_command", "run_serve"]

#: The port ``marlhub serve`` listens on unless told otherwise (gRPC's customary one).
DEFAULT_PORT = 50051


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in 0..65535 (0: any free one), got "
                                         f"{value}")
    return value


def add_serve_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``marlhub serve ID [options]``."""
    parser = subparsers.add_parser(
        "serve",
        help="serve an env over the network (dm_env_rpc over gRPC)",
        description="Host worlds of ID for dm_env_rpc clients: marlhub.make('remote/HOST:PORT') "
        "or dm_env_rpc's own. Only ID is ever made; clients name no env. Stop with Ctrl-C.",
    )
    parser.add_argument("env_id", metavar="ID", help="the env to serve: a registry id, or an env "
                        "class or factory as package.module:attr or path/to/file.py:attr")
    parser.add_argument("--config", default=None, metavar="JSON",
                        help="the env config as a JSON object")
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=_port, default=DEFAULT_PORT, metavar="P",
                        help=f"port to listen on; 0 picks a free one (default: {DEFAULT_PORT})")
    parser.add_argument("--max-worlds", type=positive_int, default=None, metavar="N",
                        help="worlds at once (default: 64)")
    parser.add_argument("--max-connections", type=positive_int, default=None, metavar="N",
                        help="client streams at once (default: 64)")
    parser.add_argument("--token", default=None, metavar="T",
                        help="require this token from clients (default: $MARLHUB_TOKEN)")
    parser.add_argument("--tls-cert", default=None, metavar="FILE",
                        help="serve over TLS with this certificate (chain), a PEM file; "
                        "needs --tls-key (default: plain text)")
    parser.add_argument("--tls-key", default=None, metavar="FILE",
                        help="the private key of --tls-cert, a PEM file")
    parser.add_argument("--allow-config", action="store_true",
                        help="let clients add to the config of the worlds they create")
    parser.add_argument("--processes", type=positive_int, default=1, metavar="N",
                        help="server processes sharing the port, for clients on several cores "
                        "(default: 1)")
    parser.set_defaults(func=run_serve)
    return parser


def run_serve(args: argparse.Namespace) -> int:
    """Serve ``args.env_id`` until SIGINT or SIGTERM; return the exit code."""
    config, problem = parse_config(args.config)
    if problem:
        err(f"marlhub serve: {problem}")
        return 2
    from marlhub.remote import serve

    token = args.token or os.environ.get("MARLHUB_TOKEN") or None
    try:
        server = serve(args.env_id, config, host=args.host, port=args.port,
                       max_worlds=args.max_worlds, token=token, allow_config=args.allow_config,
                       max_connections=args.max_connections, processes=args.processes,
                       tls_cert=args.tls_cert, tls_key=args.tls_key)
    except MarlhubError as exc:
        err(f"marlhub serve: {exc}")
        return 2
    stop = threading.Event()
    previous = _stop_on_signals(stop)
    tls = f", {{'tls_root': {args.tls_cert!r}}}" if args.tls_cert else ""
    out(f"marlhub serve: serving {args.env_id!r} at {server.address} (connect with "
        f"marlhub.make('remote/{server.address}'{tls}){'; token required' if token else ''}; "
        "Ctrl-C stops)")
    sys.stdout.flush()
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
    out("marlhub serve: stopped")
    return 0


def _stop_on_signals(stop: threading.Event) -> dict[int, Any]:
    """Make SIGINT and SIGTERM set ``stop``; return the handlers they replace (main thread only).

    SIGINT gets a handler of its own too, as servers such as uvicorn give it: a
    process started with SIGINT ignored (a background job of a non-interactive
    shell) would otherwise not stop on it.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {number: signal.signal(number, lambda *_: stop.set())
            for number in (signal.SIGINT, signal.SIGTERM)}
