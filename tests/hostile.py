"""What the hostile-client tests of both servers share: the memory bound, how it is read,
and the streams that never send and the wait for calls that end.

``docs/guides/security.rst`` states the bound: after :data:`HOSTILE_CALLS` hostile calls
(wrong tokens, garbage bytes, wrong message types, stolen sessions), a server's resident
memory has grown by less than :data:`GROWTH_BOUND_MIB` MiB. A server that kept a few
kilobytes of each refused call (grpcio keeps 20 KB of each stream whose request its own
parser refuses) crosses it many times over.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: How many hostile calls each server takes in the memory test.
HOSTILE_CALLS = 10_000
#: What those calls may add to the server's resident memory (MiB).
GROWTH_BOUND_MIB = 16


def rss_mib(pid: int) -> float:
    """The resident memory of process ``pid`` (MiB), from Linux's ``/proc`` (skips elsewhere)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("reads resident memory from Linux's /proc")
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    pytest.skip("no VmRSS in /proc/PID/status")
    return 0.0  # unreachable: skip raises


def idle(stop: threading.Event) -> Iterator[bytes]:
    """A stream's requests that never come (until ``stop``)."""
    stop.wait(60)
    yield from ()


def ended(calls: list[Any], count: int, seconds: float = 10.0) -> list[Any]:
    """The status codes of the calls that ended, once ``count`` did (or ``seconds`` passed)."""
    end = time.monotonic() + seconds
    while sum(call.done() for call in calls) < count and time.monotonic() < end:
        time.sleep(0.02)
    time.sleep(0.1)  # one more would have ended by now
    return [call.code() for call in calls if call.done()]
