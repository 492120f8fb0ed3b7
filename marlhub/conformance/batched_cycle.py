"""What ``marlhub check ID --vector N`` proves of a batched simulator's ``recv``/``send``.

A batched simulator steps its copies together, so ``recv``/``send`` with
``batch_size < num_envs`` hands the copies of one step out over several ``recv``
calls and steps once every copy is sent. :func:`check_batched_cycle` drives one
batch that way (``batch_size = num_envs // 2``, random legal actions, every
autoreset mode's restarts) and a second batch of the same id and seed with
``reset`` and ``step``, calling its simulator in the same order with the actions
the first was sent: every copy ``recv`` returns must be the second batch's copy,
obs, rewards and done flags alike.

Example:
    >>> findings, steps = check_batched_cycle("vmas/balance", 4, "next_step", seed=0,
    ...                                       max_steps=6, config={"max_steps": 3})
    >>> findings, steps
    ([], 6)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.contract.compare import why_different
from marlhub.contract.findings import Finding
from marlhub.contract.rules import ENV_RAISED, VECTOR_EQUIV
from marlhub.core import ALL
from marlhub.episode.play import random_actions
from marlhub.registry.vector import make_vec
from marlhub.spaces import ActionSampler

__all__ = ["check_batched_cycle"]

#: What recv returns of a reset besides its obs and infos: no rewards, no flags.
_FRESH: tuple[dict[Any, Any], ...] = ({}, {ALL: False}, {ALL: False})


def check_batched_cycle(env_id: str, num_envs: int, amode: str, *, seed: int = 0,
                        max_steps: int = 1000,
                        config: Optional[Mapping[str, Any]] = None) -> tuple[list[Finding], int]:
    """Compare ``recv``/``send`` of a batch with ``reset``/``step`` of its twin (see the module).

    Returns:
        ``(findings, recv calls)``.
    """
    mode = f"batched/{amode} recv/send batch_size={max(1, num_envs // 2)}"
    cycle = twin = None
    try:
        cycle = make_vec(env_id, num_envs, config, vectorization_mode="batched",
                         autoreset_mode=amode, batch_size=max(1, num_envs // 2))
        twin = make_vec(env_id, num_envs, config, vectorization_mode="batched",
                        autoreset_mode=amode)
        return _play(cycle, twin, mode, seed, max_steps)
    except Exception as exc:
        return [Finding(ENV_RAISED, "error", f"{mode}: making the batches raised "
                        f"{type(exc).__name__}: {exc}")], 0
    finally:
        for envs in (cycle, twin):
            if envs is not None:
                envs.close()


def _play(cycle: Any, twin: Any, mode: str, seed: int,
          max_steps: int) -> tuple[list[Finding], int]:
    n, sampler = cycle.num_envs, ActionSampler(seed)
    space_of = cycle.single_action_spaces.__getitem__
    where = "async_reset"
    try:
        cycle.async_reset(seed=seed)
        obs, infos = twin.reset(seed=seed)
        latest = {i: (obs[i], *_FRESH, infos[i]) for i in range(n)}
        sent: dict[int, Any] = {}
        for step in range(1, max_steps + 1):
            where = f"recv {step}"
            got = cycle.recv()
            ids = got.copy_ids.tolist()
            for k, i in enumerate(ids):
                found = _compare(mode, where, i, [column[k] for column in got[:4]], latest[i],
                                 step)
                if found:
                    return found, step
            ended = [i for k, i in enumerate(ids) if cycle.autoreset_mode == "disabled"
                     and (got.terminateds[k][ALL] or got.truncateds[k][ALL])]
            if ended:  # disabled: restart them now, on both
                where = f"async_reset with reset_mask after recv {step}"
                mask = np.isin(np.arange(n), ended)
                cycle.async_reset(options={"reset_mask": mask})
                obs, infos = twin.reset(options={"reset_mask": mask})
                latest.update({i: (obs[i], *_FRESH, infos[i]) for i in ended})
            going = [i for i in ids if i not in ended]
            actions = [random_actions(cycle.actors[i], latest[i][0], latest[i][4], space_of,
                                      sampler) for i in going]
            if going:
                where = f"send {step}"
                cycle.send(actions, np.asarray(going, dtype=np.int64))
            sent.update(zip(going, actions))
            if len(sent) == n:  # the cycle stepped its simulator: so does the twin
                where = f"the twin's step after send {step}"
                results = twin.step([sent[i] for i in range(n)])
                latest.update({i: tuple(column[i] for column in results) for i in range(n)})
                sent = {}
        return [], max_steps
    except Exception as exc:
        return [Finding(ENV_RAISED, "error", f"{mode}: {where} raised "
                        f"{type(exc).__name__}: {exc}")], 0


def _compare(mode: str, where: str, i: int, got: list[Any], want: tuple[Any, ...],
             step: int) -> list[Finding]:
    for what, value, expected in zip(("obs", "rewards", "terminateds", "truncateds"), got, want):
        reason = why_different(value, expected)
        if reason is not None:
            return [Finding(
                VECTOR_EQUIV, "error",
                f"{mode}: copy {i}'s {what} at {where} differ ({reason}; recv/send vs reset/"
                "step). A batch driven by recv/send must give each copy what a batch of the "
                "same seed stepped with the same actions gives it.", step=step)]
    return []
