"""Simulators that drive, over loopback: decisions per second and latency per decision.

Each simulator is a process with a :class:`marlhub.external.PolicyClient` that plays one
long episode: two agents decide at every turn (observations ``Box(8,)`` float32 each),
``get_action`` returns their actions (``Discrete(4)``). The learner is this process:
``marlhub.make_vec("external/127.0.0.1:0", N)`` with ``N`` copies (one per simulator),
driven by ``recv()``/``send()`` with ``batch_size=max(1, N // 2)`` (it answers whichever
simulators ask first) and fixed actions. Against it, in the same run, a bare gRPC echo:

* ``echo``: a gRPC server in this process (grpcio, the same thread pool) whose one unary
  method answers each request with a response of the size of a ``GetActionResponse``;
  each client process sends the bytes of the same ``GetActionRequest`` in a loop. What
  gRPC itself costs for a request and its answer of that size, with nothing of ours.
* ``echo stream``: the same echo over one bidirectional stream per client (each request
  answered on the stream), as ``PolicyClient.get_action`` sends its requests on its
  ``Decide`` stream: what gRPC costs per request on an open stream.
* ``echo+thread``: the same (unary) echo, but each handler hands the request to one other thread
  (a ``queue.Queue``) that answers it, as a learner's thread answers decisions: what the
  hand-over between the server's threads and the learner's costs, still nothing of ours.
* ``marlhub``: the simulators' ``get_action`` round trip through the learner (decode,
  check, queue, ``recv``, the learner's action check, ``send``, encode).
* ``+returns``: a decision and its rewards, ``get_action`` then ``log_returns`` (both
  agents' rewards), as a simulator that reports a reward at every decision calls them;
  ``log_returns`` rides on the next ``get_action`` (one round trip per decision).
* ``+unary returns``: the same with ``PolicyClient(carry_logged=False)``: ``log_returns``
  is a ``LogReturns`` call of its own (two round trips per decision), as before it rode.

For each number of simulators (1, 4, 16 by default), rounds alternate echo and marlhub.
All clients of a run start at one agreed time (sent to them once every one is connected:
a loaded machine starts some late) and count for ``--seconds`` seconds.
Printed: the median over rounds of the decisions per second (the sum over simulators)
and of the median latency per decision seen by the simulators; the latency marlhub adds
to a decision (marlhub's minus the bare echo's) over the bare echo's, and the ratios of
marlhub's latency to each echo's (medians of per-round ratios); the same for a decision
with its rewards, over the bare unary echo; then the scaling of
decisions per second from 1 simulator to the others, for every contestant: the ratio of
the medians, and the median, lowest and highest of each round's own ratio.

Run it with ``python benchmarks/external_throughput.py [--rounds 3] [--seconds 3]
[--simulators 1 4 16]`` (needs ``pip install 'marlhub[external]'``).
"""

from __future__ import annotations

import argparse
import functools
import json
import queue
import statistics
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

AGENTS: list[Any] = ["left", "right"]
OBSERVATION = gym.spaces.Box(-1.0, 1.0, (8,), np.float32)
ACTION = gym.spaces.Discrete(4)
ECHO_METHOD = "/bench.Echo/Echo"
ECHO_STREAM_METHOD = "/bench.Echo/Stream"


def spaces() -> dict[str, Any]:
    return {"possible_agents": AGENTS, "observation_spaces": {a: OBSERVATION for a in AGENTS},
            "action_spaces": {a: ACTION for a in AGENTS}}


def request_bytes() -> tuple[bytes, bytes]:
    """A GetActionRequest and a GetActionResponse of the benchmark's sizes, serialized."""
    from marlhub.external.codec import encode
    from marlhub.external.proto import load_wire

    messages = load_wire().messages
    request = messages["GetActionRequest"](session="0" * 32, episode_id="0" * 32)
    response = messages["GetActionResponse"]()
    for agent in AGENTS:
        request.observations.add(agent=agent).value.CopyFrom(
            encode(np.zeros(8, np.float32)))
        response.actions.add(agent=agent).value.CopyFrom(encode(np.int64(1), typed=True))
    return request.SerializeToString(), response.SerializeToString()


def _wait_until(start_at: float) -> None:
    """Sleep until the clock reads ``start_at`` (the time every client of a run starts)."""
    while time.time() < start_at:
        time.sleep(0.001)


def _start_signal() -> float:
    """Say this client is connected and wait for the time every client of the run starts at
    (the parent sends it once all are ready: a loaded machine starts some late)."""
    print("ready", flush=True)
    return float(sys.stdin.readline())


def _timed_loop(call: Any, start_at: float, seconds: float) -> dict[str, float]:
    """Call ``call()`` from ``start_at`` for ``seconds``; count and time each call."""
    _wait_until(start_at)
    latencies = []
    end = start_at + seconds
    while True:
        begin = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - begin)
        if time.time() >= end:
            break
    return {"decisions": len(latencies), "seconds": time.time() - start_at,
            "latency": statistics.median(latencies)}


def simulator(address: str, seconds: float, returns: str = "") -> dict[str, float]:
    """One simulator: a long episode of decisions by both agents (``returns``: each followed
    by ``log_returns``, ``"carried"`` on the next request or ``"unary"`` in a call of its own)."""
    from marlhub.errors import EpisodeDroppedError
    from marlhub.external import PolicyClient

    given = spaces()
    with PolicyClient(address, possible_agents=AGENTS,
                      observation_spaces=given["observation_spaces"],
                      action_spaces=given["action_spaces"],
                      carry_logged=returns != "unary") as client:
        start_at = _start_signal()
        _wait_until(start_at)  # (an episode waiting past the learner's timeout is truncated)
        episodes = [client.start_episode()]
        obs: dict[Any, Any] = {a: np.zeros(8, np.float32) for a in AGENTS}
        rewards: dict[Any, Any] = {a: 1.0 for a in AGENTS}

        def decide() -> None:
            try:
                client.get_action(episodes[-1], obs)
            except EpisodeDroppedError:  # starved past the learner's timeout: go on
                episodes.append(client.start_episode())
                return
            if returns:
                client.log_returns(episodes[-1], rewards)

        decide()  # warm
        return _timed_loop(decide, start_at, seconds)


def echo_client(address: str, seconds: float, stream: bool = False) -> dict[str, float]:
    """One echo client: the same request bytes, a bare gRPC round trip each (a call, or a
    request and its answer on one stream)."""
    import grpc

    request, _ = request_bytes()
    with grpc.insecure_channel(address) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        if not stream:
            echo = channel.unary_unary(ECHO_METHOD)
            echo(request)
            return _timed_loop(lambda: echo(request), _start_signal(), seconds)
        requests: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        answers = channel.stream_stream(ECHO_STREAM_METHOD)(iter(requests.get, None))

        def echo_on_stream() -> bytes:
            requests.put(request)
            return next(answers)

        echo_on_stream()
        try:
            return _timed_loop(echo_on_stream, _start_signal(), seconds)
        finally:
            requests.put(None)


def _clients(kind: str, address: str, count: int, seconds: float
             ) -> tuple[list[subprocess.Popen], threading.Thread]:
    """Start ``count`` client processes; once every one is connected, tell them all one time
    to start at (the thread returned does, while the caller serves them)."""
    processes = [subprocess.Popen([sys.executable, __file__, f"--{kind}", address, str(seconds)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                 for _ in range(count)]

    def start_together() -> None:
        for process in processes:
            assert process.stdout is not None
            process.stdout.readline()  # "ready" (or nothing, from a client that failed)
        start_at = time.time() + 0.25
        for process in processes:
            try:
                assert process.stdin is not None
                process.stdin.write(f"{start_at}\n")
                process.stdin.flush()
            except OSError:
                pass  # it failed: its error shows in the results

    starter = threading.Thread(target=start_together, daemon=True)
    starter.start()
    return processes, starter


def _results(processes: list[subprocess.Popen], starter: threading.Thread) -> dict[str, float]:
    starter.join(120)  # (communicate() closes their stdin)
    found = [json.loads(p.communicate(timeout=120)[0]) for p in processes]
    return {"rate": sum(r["decisions"] / r["seconds"] for r in found),
            "latency": statistics.median(r["latency"] for r in found)}


def run_echo(count: int, seconds: float, through_thread: bool = False,
             stream: bool = False) -> dict[str, float]:
    import grpc

    _, response = request_bytes()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2 * count + 8),
                         options=[("grpc.so_reuseport", 0)])
    requests: "queue.Queue[Any]" = queue.Queue()

    def answer_all() -> None:  # the "learner": answers each request handed over
        while True:
            slot = requests.get()
            if slot is None:
                return
            slot.put(response)

    def handed_over(request: bytes, context: Any) -> bytes:
        slot: "queue.Queue[bytes]" = queue.Queue(maxsize=1)
        requests.put(slot)
        return slot.get()

    def on_stream(requests: Any, context: Any) -> Any:
        for request in requests:
            yield response

    learner = threading.Thread(target=answer_all, daemon=True)
    learner.start()
    handler = grpc.unary_unary_rpc_method_handler(
        handed_over if through_thread else (lambda request, context: response))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "bench.Echo", {"Echo": handler,
                       "Stream": grpc.stream_stream_rpc_method_handler(on_stream)}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    kind = "echo-stream-client" if stream else "echo-client"
    try:
        return _results(*_clients(kind, f"127.0.0.1:{port}", count, seconds))
    finally:
        server.stop(0)
        requests.put(None)


def run_marlhub(count: int, seconds: float, returns: str = "") -> dict[str, float]:
    import marlhub
    from marlhub.errors import ExternalTimeoutError

    # (the timeout: how long the learner waits, once the simulators are gone, to see it)
    envs = marlhub.make_vec("external/127.0.0.1:0", count, {**spaces(), "timeout": 2},
                            batch_size=max(1, count // 2))
    kind = f"{returns}-returns-simulator" if returns else "simulator"
    processes, starter = _clients(kind, getattr(envs, "address", ""), count, seconds)
    give_up = time.monotonic() + seconds + 120
    actions = {a: 1 for a in AGENTS}
    try:
        envs.async_reset()
        look_at = time.monotonic()
        while True:
            try:
                copy_ids = envs.recv().copy_ids
            except ExternalTimeoutError:
                if any(p.poll() is None for p in processes) and time.monotonic() < give_up:
                    continue  # the simulators have not started yet (a loaded machine)
                break  # the simulators are done
            actors = envs.actors
            envs.send([actions if actors[i] else {} for i in copy_ids], copy_ids)
            if time.monotonic() >= look_at:  # (not at every decision: the echo does not)
                if all(p.poll() is not None for p in processes):
                    break
                look_at = time.monotonic() + 0.1
        return _results(processes, starter)
    finally:
        envs.close()


def _spread(values: list[float]) -> str:
    """``median [lowest, highest]`` of ``values``."""
    return f"{statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}]"


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--simulators", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--simulator", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--echo-client", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--echo-stream-client", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--carried-returns-simulator", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--unary-returns-simulator", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    clients: list[tuple[Any, Any]] = [
        (simulator, args.simulator), (echo_client, args.echo_client),
        (functools.partial(echo_client, stream=True), args.echo_stream_client),
        (functools.partial(simulator, returns="carried"), args.carried_returns_simulator),
        (functools.partial(simulator, returns="unary"), args.unary_returns_simulator)]
    for client, given in clients:
        if given:
            address, seconds = given
            print(json.dumps(client(address, float(seconds))))
            return 0
    table: dict[tuple[str, int], list[dict[str, float]]] = {}
    contestants: list[tuple[str, Any]] = [
        ("echo", run_echo),
        ("echo stream", lambda n, s: run_echo(n, s, stream=True)),
        ("echo+thread", lambda n, s: run_echo(n, s, through_thread=True)),
        ("marlhub", run_marlhub),
        ("+returns", lambda n, s: run_marlhub(n, s, returns="carried")),
        ("+unary returns", lambda n, s: run_marlhub(n, s, returns="unary"))]
    for round_ in range(args.rounds):
        for count in args.simulators:
            turn = round_ % len(contestants)  # a rotating order
            for name, run_ in contestants[turn:] + contestants[:turn]:
                table.setdefault((name, count), []).append(run_(count, args.seconds))
    names = [name for name, _ in contestants]
    decision_names = names[:4]
    print("decisions per second (sum over simulators), median latency per decision, the")
    print("latency marlhub adds to the bare echo's (marlhub - echo) over the echo's, and")
    print("marlhub's latency over each echo's (medians of per-round ratios):")
    print(f"{'simulators':>10} | " + " | ".join(f"{n + ' dec/s':>17}" for n in decision_names)
          + " | " + " | ".join(f"{n + ' latency':>19}" for n in decision_names)
          + " | added / echo | vs echo | vs echo stream | vs echo+thread")
    rates: dict[str, dict[int, float]] = {n: {} for n in names}
    latencies: dict[str, dict[int, float]] = {n: {} for n in names}
    for count in args.simulators:
        runs = {n: table[(n, count)] for n in names}
        for n in names:
            rates[n][count] = statistics.median(r["rate"] for r in runs[n])
            latencies[n][count] = statistics.median(r["latency"] for r in runs[n])
        latency = {n: latencies[n][count] for n in names}
        ratios = [statistics.median(o["latency"] / e["latency"]
                                    for o, e in zip(runs["marlhub"], runs[n]))
                  for n in ("echo", "echo stream", "echo+thread")]
        added = statistics.median((o["latency"] - e["latency"]) / e["latency"]
                                  for o, e in zip(runs["marlhub"], runs["echo"]))
        print(f"{count:>10} | " + " | ".join(f"{rates[n][count]:>17,.0f}"
                                             for n in decision_names)
              + " | " + " | ".join(f"{latency[n] * 1e6:>16,.0f} us" for n in decision_names)
              + f" | {added:>12.2f} | {ratios[0]:>7.2f} | {ratios[1]:>14.2f}"
              + f" | {ratios[2]:>14.2f}")
    with_returns = ["+returns", "+unary returns"]
    print("a decision with its rewards (get_action + log_returns): decisions per second,")
    print("median latency, and its latency over the bare unary echo's and over get_action's")
    print("alone (medians of per-round ratios; the goal: +returns / echo at most 1.5):")
    print(f"{'simulators':>10} | " + " | ".join(f"{n + ' dec/s':>20}" for n in with_returns)
          + " | " + " | ".join(f"{n + ' latency':>22}" for n in with_returns)
          + " | " + " | ".join(f"{n + ' / echo':>21}" for n in with_returns)
          + " | " + " | ".join(f"{n + ' / marlhub':>24}" for n in with_returns))
    for count in args.simulators:
        over = {(n, base): statistics.median(o["latency"] / e["latency"] for o, e in zip(
            table[(n, count)], table[(base, count)]))
            for n in with_returns for base in ("echo", "marlhub")}
        print(f"{count:>10} | " + " | ".join(f"{rates[n][count]:>20,.0f}" for n in with_returns)
              + " | " + " | ".join(f"{latencies[n][count] * 1e6:>19,.0f} us"
                                   for n in with_returns)
              + " | " + " | ".join(f"{over[(n, 'echo')]:>21.2f}" for n in with_returns)
              + " | " + " | ".join(f"{over[(n, 'marlhub')]:>24.2f}" for n in with_returns))
    if 1 in args.simulators:
        print("decisions/s with N simulators over with 1: the ratio of the medians, then the")
        print("median [lowest, highest] of the rounds' own ratios (each round runs both):")
        for count in args.simulators:
            if count != 1:
                print(f"{count:>3} over 1: " + ", ".join(
                    f"{n} {rates[n][count] / rates[n][1]:.2f} ("
                    + _spread([m["rate"] / o["rate"]
                               for m, o in zip(table[(n, count)], table[(n, 1)])]) + ")"
                    for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
