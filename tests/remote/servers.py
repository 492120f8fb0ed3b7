"""Real ``marlhub serve`` processes for tests: free ports on 127.0.0.1, bounded waits, always reaped."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[2]
#: Seconds a server process may take to print its address.
START_SECONDS = 90.0


@dataclass
class ServeProcess:
    """A running ``marlhub serve``: its process, address, and the lines it printed."""

    process: subprocess.Popen
    address: str
    lines: "queue.Queue[str]" = field(default_factory=queue.Queue)
    errors: list[str] = field(default_factory=list)
    readers: list[threading.Thread] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> int:
        """Send ``sig`` and wait for the exit code (killed after ``timeout``)."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(10)

    def rest_of_output(self, timeout: float = 5.0) -> str:
        """Every line printed after the address, up to the end of the output."""
        found = []
        try:
            while True:
                line = self.lines.get(timeout=timeout)
                if line == "":
                    break
                found.append(line)
        except queue.Empty:
            pass
        return "".join(found)


def _pump(stream: object, lines: "queue.Queue[str]") -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)
    lines.put("")


#: Runs ``python -m marlhub`` with SIGINT ignored, as a non-interactive shell starts a
#: background job (Python then installs no KeyboardInterrupt handler of its own).
SIGINT_IGNORED = ("import runpy, signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                  "runpy.run_module('marlhub', run_name='__main__')")


def start_serve(env_id: str, *args: str, env: Optional[dict[str, str]] = None,
                ignore_sigint: bool = False) -> ServeProcess:
    """Start ``marlhub serve ENV_ID --port 0 ARGS`` and wait for its address line."""
    launch = ["-c", SIGINT_IGNORED] if ignore_sigint else ["-m", "marlhub"]
    process = subprocess.Popen(
        [sys.executable, *launch, "serve", env_id, "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, **(env or {})})
    lines: "queue.Queue[str]" = queue.Queue()
    errors: list[str] = []
    readers = [threading.Thread(target=_pump, args=(process.stdout, lines), daemon=True),
               threading.Thread(target=lambda: errors.extend(process.stderr or []), daemon=True)]
    for reader in readers:
        reader.start()
    server = ServeProcess(process, "", lines, errors, readers)
    try:
        line = lines.get(timeout=START_SECONDS)
    except queue.Empty:
        reap(server)
        raise RuntimeError(f"marlhub serve {env_id} printed nothing in {START_SECONDS}s") from None
    if " at " not in line:
        reap(server)
        raise RuntimeError(f"marlhub serve {env_id} failed: {line!r} {''.join(errors)}")
    server.address = line.split(" at ", 1)[1].split(" ", 1)[0]
    return server


def reap(server: ServeProcess) -> None:
    """Kill the process if it still runs, wait for it, let the readers finish, close the pipes."""
    if server.process.poll() is None:
        server.process.kill()
    server.process.wait(10)
    for reader in server.readers:
        reader.join(10)
    for stream in (server.process.stdout, server.process.stderr):
        if stream is not None:
            stream.close()


@contextmanager
def serving(env_id: str, *args: str, env: Optional[dict[str, str]] = None,
            ignore_sigint: bool = False) -> Iterator[ServeProcess]:
    """``marlhub serve`` for the duration of a ``with`` block; killed and reaped after it."""
    server = start_serve(env_id, *args, env=env, ignore_sigint=ignore_sigint)
    try:
        yield server
    finally:
        reap(server)
