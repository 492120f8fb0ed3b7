"""Lockstep comparison of :func:`from_pettingzoo` with the native PettingZoo env.

Two instances come from one factory: one is adapted, the other is driven the
way PettingZoo's own documentation drives it, through PettingZoo's own code:
an AEC env with the ``agent_iter``/``last()``/``step`` loop; a parallel env
through PettingZoo's ``parallel_to_aec`` conversion, whose tables
(``observe``, ``rewards``, ``terminations``, ``truncations``) are PettingZoo's
reading of each parallel step. Both get the same seed and actions (the
:mod:`marlhub.episode.lockstep` scaffold); after every hub step the adapted
env's observations, agent order, rewards, done flags and infos must be what
the native env shows, and each agent's summed hub rewards must equal its
native return.

Example:
    >>> import pettingzoo
    >>> compare_with_native(lambda: pettingzoo.make("aec", "classic/tictactoe-v3"), episodes=2)
    []
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, Optional

from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step
from marlhub.episode.status import flag
from marlhub.wrappers.base import global_state as global_state_of

__all__ = ["AECTwin", "ParallelTwin", "compare_with_native"]


def compare_with_native(
    factory: Callable[[], Any],
    *,
    episodes: int = 3,
    seed: Optional[int] = 0,
    max_steps: int = 1000,
    adapt: Optional[Callable[[Any], Any]] = None,
    global_state: bool = False,
) -> list[Finding]:
    """Step ``from_pettingzoo(factory())`` and another ``factory()`` in lockstep; list differences.

    Args:
        factory: a zero-argument callable returning a fresh PettingZoo AEC or parallel
            env; called twice.
        episodes: how many episodes to play.
        seed: episode ``i`` is reset with ``seed + i`` (None: unseeded, only
            meaningful for deterministic envs).
        max_steps: hub steps per episode at most; a cut episode has its trajectory
            compared but not its returns.
        adapt: the adapter under comparison (default :func:`from_pettingzoo`); any
            callable from a native env to a hub env, e.g. RLlib's ``PettingZooEnv``.
        global_state: also compare the adapted env's ``state()`` with the native
            env's after the reset and every step (for envs with a global state).

    Returns:
        ``equiv.trajectory`` findings (the first difference of each episode: the
        episode stops there, except after a difference in rewards only, where the
        observations still agree and it goes on) and ``equiv.returns`` findings;
        empty when the adapter reports exactly what the native env does.
    """
    from marlhub.adapters.pettingzoo import from_pettingzoo, pettingzoo_kind

    hub = (adapt or from_pettingzoo)(factory())
    state_of = functools.partial(global_state_of, hub) if global_state else None
    try:
        return compare_in_lockstep(
            hub, lambda: _twin_of(factory(), pettingzoo_kind, state_of), episodes=episodes,
            seed=seed, max_steps=max_steps,
        )
    finally:
        hub.close()


def _twin_of(native: Any, kind_of: Callable[[Any], str],
             state_of: Optional[Callable[[], Any]]) -> NativeTwin:
    twin = AECTwin(native) if kind_of(native) == "aec" else ParallelTwin(native)
    twin.state_of = state_of
    return twin


class _PettingZooTwin(NativeTwin):
    """What both twins share: the returns they sum, their end, their env, the global state."""

    env: Any
    sums: dict[Any, float]
    any_truncated: bool
    #: The adapted env's ``state()``, compared with the native one's; None: not compared.
    state_of: Optional[Callable[[], Any]] = None

    def _expect_state(self, lock: Lockstep) -> None:
        if self.state_of is not None:
            lock.expect("global state", self.state_of(), self.env.state())

    def _begin(self, seed: Optional[int]) -> None:
        """Reset the native env and the sums for a new episode."""
        self.sums = defaultdict(float)
        self.any_truncated = False
        self.env.reset(seed=seed)

    def returns(self) -> Mapping[Any, float]:
        return self.sums

    def ended(self) -> bool:
        return not self.env.agents

    def close(self) -> None:
        self.env.close()


class AECTwin(_PettingZooTwin):
    """A native AEC env, read the way its own docs loop over it (``agent_iter`` / ``last()``)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        self._begin(seed)
        obs, _, _, infos = self._advance({})
        lock.expect("observations", first.obs, obs)
        lock.expect("infos", dict(first.infos), infos)
        self._expect_state(lock)

    def step(self, step: Step, lock: Lockstep) -> None:
        env = self.env
        (agent, action), = (step.actions or {}).items()
        if agent != env.agent_selection:
            lock.differ("agent order", f"the adapted env's actor {agent!r} vs the native "
                        f"agent_selection {env.agent_selection!r}")
        env.step(action)
        rewards = dict(env.rewards)
        obs, terms, truncs, infos = self._advance(rewards)
        lock.expect("observations", step.obs, obs)
        lock.expect("terminateds", step.terminateds, terms)
        lock.expect("truncateds", step.truncateds, truncs)
        lock.expect("infos", dict(step.infos), infos)
        self._expect_state(lock)
        lock.expect("rewards", step.rewards, rewards, fatal=False)

    def _advance(self, rewards: dict[Any, Any]) -> tuple[dict, dict, dict, dict]:
        """Step dead agents with None until a live agent is selected; return what ``last()`` showed.

        The rewards of those None steps are added to ``rewards``.
        """
        env = self.env
        obs: dict[Any, Any] = {}
        terms: dict[Any, Any] = {}
        truncs: dict[Any, Any] = {}
        infos: dict[Any, Any] = {}
        for agent in env.agent_iter():
            ob, reward, term, trunc, info = env.last()
            self.sums[agent] += reward
            obs[agent] = ob
            infos[agent] = info
            terms[agent] = bool(term)
            truncs[agent] = bool(trunc)
            if not (term or trunc):
                break
            self.any_truncated |= not term
            env.step(None)
            for a, r in env.rewards.items():
                rewards[a] = rewards.get(a, 0) + r
        over = not env.agents
        terms[ALL] = over and not self.any_truncated
        truncs[ALL] = over and self.any_truncated
        return obs, terms, truncs, infos


class ParallelTwin(_PettingZooTwin):
    """A native parallel env, read through PettingZoo's own ``parallel_to_aec`` conversion.

    Each hub step is one AEC cycle: every actor's action is stepped in
    ``agent_iter`` order, the last one steps the parallel env, and PettingZoo's
    tables then hold that step's observations, rewards and flags; done agents
    are then stepped with None, as PettingZoo's loop does.
    """

    def __init__(self, env: Any) -> None:
        from pettingzoo.utils.conversions import parallel_to_aec

        self.env = parallel_to_aec(env)

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        self._begin(seed)
        self._expect_agents("observations", first.obs, lock)
        lock.expect("observations", first.obs, {a: self.env.observe(a) for a in first.obs})
        self._expect_state(lock)

    def step(self, step: Step, lock: Lockstep) -> None:
        env = self.env
        pending = dict(step.actions or {})
        rewards: dict[Any, Any] = defaultdict(int)
        while pending:
            agent = env.agent_selection
            if agent not in pending:
                lock.differ("actors", f"PettingZoo selects {agent!r} to act, but the adapted "
                            f"env's actors were {list(step.actions or {})}")
            env.step(pending.pop(agent))
            # A parallel step's reward is what the cycle's AEC steps paid (PettingZoo's
            # aec_to_parallel sums them; its parallel_to_aec pays them on the last one).
            for a in env.agents:
                rewards[a] += env.rewards[a]
        present = list(env.agents)  # the agents of this parallel step, done ones included
        self._expect_agents("observations", step.obs, lock)
        lock.expect("observations", dict(step.obs), {a: env.observe(a) for a in step.obs})
        self._expect_state(lock)
        for table, native in (("terminateds", env.terminations), ("truncateds", env.truncations)):
            adapted = step.terminateds if table == "terminateds" else step.truncateds
            lock.expect(table, {a: bool(adapted.get(a, False)) for a in present},
                        {a: bool(native.get(a, False)) for a in present})
        rewards = {a: rewards[a] for a in present}
        for agent, reward in rewards.items():
            self.sums[agent] += reward
        flags = {a: (bool(env.terminations.get(a)), bool(env.truncations.get(a))) for a in present}
        self.any_truncated |= any(trunc and not term for term, trunc in flags.values())
        lock.expect("rewards", {a: step.rewards.get(a, 0) for a in present}, rewards,
                    fatal=False, check_dtype=False)
        while env.agents and (env.terminations[env.agent_selection]
                              or env.truncations[env.agent_selection]):
            env.step(None)
        over = not env.agents
        if over and not all(term or trunc for term, trunc in flags.values()):
            self.any_truncated = True  # agents the env dropped unflagged: the episode was cut
        lock.expect("terminateds", flag(step.terminateds, ALL), over and not self.any_truncated)
        lock.expect("truncateds", flag(step.truncateds, ALL), over and self.any_truncated)

    def _expect_agents(self, what: str, obs: Mapping[Any, Any], lock: Lockstep) -> None:
        adapted, native = sorted(map(repr, obs)), sorted(map(repr, self.env.agents))
        if adapted != native:
            lock.differ(what, f"agents {adapted} vs PettingZoo's agents {native}")
