"""The lockstep scaffold: an adapted env and its native twin, stepped together.

Each adapter's ``lockstep.py`` supplies only a :class:`NativeTwin`: the native
env driven and read through the native library's own code path (PettingZoo's
``agent_iter``/``last`` loop and its own conversions, a ``pyspiel.State``,
``gymnasium.make``). :func:`compare_in_lockstep` does the rest, the same way
for every API: it plays :class:`~marlhub.episode.RandomEpisode` on the hub
side, hands each step to the twin, which applies the same actions natively
and compares with :meth:`Lockstep.expect`, sums each agent's hub rewards, and
at the end compares them with the native returns.

Findings: the first difference of an episode is an ``equiv.trajectory``
finding and ends the episode, except a difference in rewards alone (the
observations still agree, so the episode goes on); an exception of the
adapted env where the native one plays on is one too; each agent whose summed
rewards differ from its native return is an ``equiv.returns`` finding.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> class Twin(NativeTwin):   # the env compared with a second copy of itself
    ...     def __init__(self):
    ...         self.env = RockPaperScissors()
    ...     def reset(self, seed, first, lock):
    ...         self.sums = {}
    ...         lock.expect("observations", first.obs, self.env.reset(seed=seed)[0])
    ...     def step(self, step, lock):
    ...         obs, rewards, *_ = self.env.step(step.actions)
    ...         lock.expect("observations", step.obs, obs)
    ...         for agent, reward in rewards.items():
    ...             self.sums[agent] = self.sums.get(agent, 0.0) + reward
    ...     def returns(self):
    ...         return self.sums
    >>> compare_in_lockstep(RockPaperScissors(), Twin, episodes=2)
    []
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.contract.compare import returns_findings, trajectory_finding, why_different
from marlhub.rewards import add_reward
from marlhub.contract.findings import Finding, Reproducer
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.episode.play import RandomEpisode, Step, episode_seed

__all__ = ["Diverged", "Lockstep", "NativeTwin", "compare_in_lockstep"]


class Diverged(Exception):
    """The adapted env and the native env disagree; raised to end the episode's comparison."""

    def __init__(self, what: str, reason: str, agent: Any = None) -> None:
        super().__init__(what, reason)
        self.what = what
        self.reason = reason
        self.agent = agent


class Lockstep:
    """What a :class:`NativeTwin` compares with: one episode's check of adapted against native.

    Attributes:
        findings: the findings of the episode so far.
    """

    def __init__(self, episode: int, seed: Optional[int], run: RandomEpisode) -> None:
        self.episode = episode
        self.seed = seed
        self.run = run
        self.findings: list[Finding] = []

    def expect(self, what: str, adapted: Any, native: Any, *, agent: Any = None,
               fatal: bool = True, check_dtype: bool = True) -> None:
        """Compare ``adapted`` with ``native``; a difference raises :class:`Diverged`.

        Two dicts must also list their keys in the same order (reported as
        ``"agent order"``). With ``fatal=False`` the first difference, under
        ``what``, is recorded and the episode goes on (rewards: the observations
        still agree).
        """
        both_dicts = isinstance(adapted, Mapping) and isinstance(native, Mapping)
        if fatal and both_dicts and list(adapted) != list(native):
            self._differ(Diverged("agent order", f"keys {list(adapted)} vs {list(native)}", agent),
                         fatal)
            return
        reason = why_different(adapted, native, check_dtype=check_dtype)
        if reason:
            self._differ(Diverged(what, reason, agent), fatal)

    def differ(self, what: str, reason: str, *, agent: Any = None) -> None:
        """Report a difference found by the twin itself; ends the episode."""
        raise Diverged(what, reason, agent)

    def _differ(self, diverged: Diverged, fatal: bool) -> None:
        if fatal:
            raise diverged
        if not self.findings:
            self.findings.append(self.finding(diverged))

    def finding(self, diverged: Diverged) -> Finding:
        """Return the ``equiv.trajectory`` finding of ``diverged`` at the current step."""
        return trajectory_finding(diverged.what, diverged.reason, episode=self.episode,
                                  step=len(self.run.actions), seed=self.seed,
                                  actions=self.run.actions, agent=diverged.agent)

    def raised(self, exc: BaseException) -> Finding:
        """Return the finding for an exception of the adapted env where the native one plays on."""
        call = "step()" if self.run.calling == "step" else "reset()"
        return Finding(
            EQUIV_TRAJECTORY, "error",
            f"The adapted env's {call} raised {type(exc).__name__}: {exc}, where the native env "
            "plays on. The adapter must accept every step the native env accepts.",
            episode=self.episode, step=len(self.run.actions),
            reproducer=Reproducer(self.seed, list(self.run.actions)),
        )


class NativeTwin:
    """The native side of a lockstep comparison; one instance per compared episode run.

    Subclasses drive the native env through the native library's own code path.
    """

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        """Reset the native env with ``seed``; compare with the adapted env's reset ``first``."""
        raise NotImplementedError

    def step(self, step: Step, lock: Lockstep) -> None:
        """Apply ``step.actions`` natively; compare with the adapted env's ``step``."""
        raise NotImplementedError

    def returns(self) -> Mapping[Any, float]:
        """Each agent's native return over the episode so far (since the last ``reset``)."""
        raise NotImplementedError

    def ended(self) -> bool:
        """Whether the native episode is over (returns are final); by default, trusted."""
        return True

    def close(self) -> None:
        """Release the native env (called once, after the last episode)."""


def compare_in_lockstep(
    hub: Any,
    make_twin: Callable[[], NativeTwin],
    *,
    episodes: int = 3,
    seed: Optional[int] = 0,
    max_steps: int = 1000,
) -> list[Finding]:
    """Play ``episodes`` seeded random episodes of ``hub`` against a native twin; list differences.

    Args:
        hub: the adapted env.
        make_twin: builds the native twin (once; its ``reset`` starts each episode).
        episodes: how many episodes; episode ``i`` is seeded ``seed + i``.
        seed: the first episode's seed (None: unseeded, for deterministic envs).
        max_steps: hub steps per episode at most; a cut episode has its trajectory
            compared, not its returns.

    Returns:
        ``equiv.trajectory`` and ``equiv.returns`` findings; empty when the adapter
        reports exactly what the native env does.
    """
    twin = make_twin()
    findings: list[Finding] = []
    try:
        for episode in range(episodes):
            findings.extend(_one_episode(hub, twin, episode, episode_seed(seed, episode), max_steps))
    finally:
        twin.close()
    return findings


def _one_episode(hub: Any, twin: NativeTwin, episode: int, seed: Optional[int],
                 max_steps: int) -> list[Finding]:
    run = RandomEpisode(hub, seed, max_steps=max_steps)
    lock = Lockstep(episode, seed, run)
    sums: dict[Any, float] = {}
    steps = iter(run)
    try:
        try:
            first = next(steps)
        except Exception as exc:
            return [lock.raised(exc)]
        twin.reset(seed, first, lock)
        while True:
            try:
                step = next(steps)
            except StopIteration:
                break
            except Exception as exc:  # the native env takes these actions: so must the adapter
                return [*lock.findings, lock.raised(exc)]
            for agent, reward in step.rewards.items():
                sums[agent] = add_reward(sums.get(agent, 0.0), reward)
            twin.step(step, lock)
    except Diverged as diverged:
        return [*lock.findings, lock.finding(diverged)]
    if run.cut or not twin.ended():  # cut by max_steps: pending rewards are not returns yet
        return lock.findings
    return lock.findings + returns_findings(sums, twin.returns(), episode=episode, seed=seed,
                                            actions=run.actions)
