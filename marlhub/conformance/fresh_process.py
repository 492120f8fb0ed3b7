"""Play a target's first episode in a fresh Python process with another ``PYTHONHASHSEED``.

An episode that depends on the iteration order of a set of strings, on
``id()`` or on anything else that changes between interpreters replays fine
in the process that played it, and differs on the next machine. The driver
starts one :class:`FreshProcess` per target when the target can be rebuilt
from its string (a registry id, ``module:attr`` or ``file.py:attr``), lets it
run while it plays its own episodes, and compares the per-call digests of
episode 0 (see :mod:`marlhub.conformance.trajectories`).

The child writes its result to a file, so an env that prints does no harm,
and ends itself after ``seconds`` even when stuck in native code.

Example:
    >>> child = FreshProcess("rock_paper_scissors", seed=0, max_steps=50, reset_kwargs={})
    >>> result = child.result()
    >>> child.stop()
    >>> result["status"], len(result["digests"])
    ('ok', 11)
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

from marlhub.conformance.calls import unpack_reset, unpack_step
from marlhub.conformance.targets import resolve_target
from marlhub.conformance.trajectories import safe_mask, snapshot, step_digests
from marlhub.episode.play import RandomEpisode, action_space_getter

__all__ = [
    "FRESH_PROCESS_SECONDS",
    "FreshProcess",
    "discard_prefetched",
    "main",
    "other_hash_seed",
    "prefetch",
    "take",
]

#: Seconds a fresh process gets to build the target and play one episode.
FRESH_PROCESS_SECONDS = 30.0

_RUN = "from marlhub.conformance.fresh_process import main; raise SystemExit(main())"


def other_hash_seed(current: Optional[str]) -> str:
    """Return a ``PYTHONHASHSEED`` that differs from ``current`` (this process's setting).

    Example:
        >>> other_hash_seed("7"), other_hash_seed(None), other_hash_seed("random")
        ('8', '1', '1')
    """
    if current is not None and current.isdigit():
        return str((int(current) + 1) % 4294967296)
    return "1"  # this process hashes with a random seed: any fixed one differs


def _added_paths() -> list[str]:
    """The import paths of this process that a new interpreter would not have (a test
    runner's root, a user's ``sys.path.insert``), so the child imports what this one did."""
    own = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})
    return [p for p in sys.path if p and not p.startswith(own)]


class FreshProcess:
    """A child process playing episode 0 of ``spec``; ask for its :meth:`result`.

    Args:
        spec: the target as a string another process can resolve.
        seed: the seed of the episode.
        max_steps: its step budget.
        reset_kwargs: keywords of ``reset`` besides ``seed`` (``{"options": None}`` or ``{}``).
        seconds: how long the child may take before it ends itself.
        config: the env config the child builds the target with (JSON-able).

    Raises:
        OSError: no process can be started.
        ValueError: the config does not go into JSON.
    """

    def __init__(self, spec: str, *, seed: int, max_steps: int,
                 reset_kwargs: Mapping[str, Any], seconds: float = FRESH_PROCESS_SECONDS,
                 config: Optional[Mapping[str, Any]] = None) -> None:
        self.key = _key(spec, seed, max_steps, reset_kwargs, config)
        self.seconds = seconds
        self.started = time.monotonic()
        self.hash_seed = other_hash_seed(os.environ.get("PYTHONHASHSEED"))
        handle, name = tempfile.mkstemp(prefix="marlhub-fresh-", suffix=".json")
        os.close(handle)
        self.path = Path(name)
        argv = ["--seed", str(seed), "--max-steps", str(max_steps), "--out", name,
                "--seconds", f"{seconds:g}", *([] if "options" in reset_kwargs else
                                              ["--no-options"]),
                *([] if config is None else ["--config", _config_json(config)]), "--", spec]
        env = dict(os.environ, PYTHONHASHSEED=self.hash_seed)
        env["PYTHONPATH"] = os.pathsep.join(_added_paths() + [env.get("PYTHONPATH", "")]).strip(
            os.pathsep)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _RUN, *argv], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            )
        except OSError:
            self.path.unlink()
            raise

    def result(self) -> Optional[dict[str, Any]]:
        """Wait for the child (within its time); return its result, or None if it has none."""
        try:
            self.process.wait(timeout=max(self.started + self.seconds - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            self.stop()
            return None
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None  # it crashed or ended itself before writing
        return data if isinstance(data, dict) else None

    def stop(self) -> None:
        """End the child if it still runs, and remove its result file."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        try:
            self.path.unlink()
        except OSError:
            pass


#: Children started ahead of their target (see :func:`prefetch`), by key.
_PREFETCHED: dict[tuple[Any, ...], FreshProcess] = {}


def _key(spec: str, seed: int, max_steps: int, reset_kwargs: Mapping[str, Any],
         config: Optional[Mapping[str, Any]] = None) -> tuple[Any, ...]:
    return (spec, seed, max_steps, "options" in reset_kwargs,
            None if config is None else _config_json(config))


def _config_json(config: Mapping[str, Any]) -> str:
    """The config as the child reads it; ValueError when it does not go into JSON."""
    try:
        return json.dumps(dict(config), sort_keys=True)
    except TypeError as exc:
        raise ValueError(f"the config does not go into JSON ({exc})") from None


def prefetch(spec: str, *, seed: int, max_steps: int, seconds: float = FRESH_PROCESS_SECONDS,
             config: Optional[Mapping[str, Any]] = None) -> None:
    """Start the child of a target that is checked next, so its start-up overlaps this one's.

    :func:`take` hands it over; :func:`discard_prefetched` ends the ones never taken.
    """
    try:
        key = _key(spec, seed, max_steps, {"options": None}, config)
        if key not in _PREFETCHED:
            _PREFETCHED[key] = FreshProcess(spec, seed=seed, max_steps=max_steps,
                                            reset_kwargs={"options": None}, seconds=seconds,
                                            config=config)
    except (OSError, ValueError):
        pass  # no process can be started here, or not with this config: take() says so again


def take(spec: str, *, seed: int, max_steps: int, reset_kwargs: Mapping[str, Any],
         seconds: float = FRESH_PROCESS_SECONDS,
         config: Optional[Mapping[str, Any]] = None) -> FreshProcess:
    """Return the prefetched child for this episode, or start one.

    Raises:
        OSError: no process can be started.
        ValueError: the config does not go into JSON.
    """
    child = _PREFETCHED.pop(_key(spec, seed, max_steps, reset_kwargs, config), None)
    if child is not None:
        return child
    return FreshProcess(spec, seed=seed, max_steps=max_steps, reset_kwargs=reset_kwargs,
                        seconds=seconds, config=config)


def discard_prefetched(spec: Optional[str] = None) -> None:
    """End the prefetched children no check took: every one, or those of ``spec``.

    A target that fails to load never takes its child; ending it when the target is
    done leaves no exited child unreaped while a long list of targets goes on.
    """
    for key in [k for k in _PREFETCHED if spec is None or k[0] == spec]:
        _PREFETCHED.pop(key).stop()


def play_first_episode(spec: str, seed: int, max_steps: int, reset_kwargs: Mapping[str, Any],
                       config: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """Build ``spec`` and play one seeded random episode; return its per-call digests.

    Returns a dict with ``status`` (``"ok"``, ``"raised"`` or ``"load_error"``),
    ``digests`` (one list of four digests per call) and ``error`` when one was raised.
    """
    try:
        env = resolve_target(spec, config=config).build()
    except Exception as exc:
        return {"status": "load_error", "error": f"{type(exc).__name__}: {exc}"}
    digests: list[list[str]] = []
    space_of = action_space_getter(env)

    def choose(actors: list[Any], obs: Mapping[Any, Any], infos: Mapping[Any, Any]) -> dict[Any, Any]:
        return {a: run.sampler.sample(a, space_of(a), safe_mask(obs.get(a), infos.get(a)))
                for a in actors}

    run = RandomEpisode(env, seed, max_steps=max_steps, reset_kwargs=reset_kwargs,
                        read_reset=unpack_reset, read_step=unpack_step, choose=choose)
    try:
        for step in run:
            digests.append(step_digests(snapshot(step.obs, step.rewards, step.terminateds,
                                                 step.truncateds)))
    except Exception as exc:
        return {"status": "raised", "digests": digests, "error": f"{type(exc).__name__}: {exc}"}
    return {"status": "ok", "digests": digests}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The child's entry point: play episode 0 of the target and write the result file."""
    parser = argparse.ArgumentParser(prog="marlhub-fresh-process")
    parser.add_argument("target")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--max-steps", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=FRESH_PROCESS_SECONDS)
    parser.add_argument("--no-options", action="store_true")
    parser.add_argument("--config", type=json.loads, default=None)
    args = parser.parse_args(argv)
    # Ends the process from a watchdog thread, so a hang in native code ends too.
    faulthandler.dump_traceback_later(args.seconds, exit=True)
    result = play_first_episode(args.target, args.seed, args.max_steps,
                                {} if args.no_options else {"options": None}, args.config)
    args.out.write_text(json.dumps(result))
    return 0
