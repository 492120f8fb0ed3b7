"""Lockstep comparison of :func:`from_pettingzoo` with the native PettingZoo env.

Two instances come from one factory: one is adapted, the other is driven the
way PettingZoo users drive it (``agent_iter``/``last()``/``step`` for AEC,
``step(actions)`` for parallel). Both get the same seed and the same seeded
random legal actions; after every hub step the adapted env's observations,
agent order, rewards, done flags and infos must be what the native loop saw,
and at the end of each episode each agent's sum of hub rewards must equal its
native return (for AEC: the sum of the rewards ``last()`` showed it at each of
its turns, the final one included).

Example:
    >>> import pettingzoo
    >>> compare_with_native(lambda: pettingzoo.make("aec", "classic/tictactoe-v3"), episodes=2)
    []
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, Optional

from marlhub.contract.compare import returns_findings, trajectory_finding, why_different
from marlhub.contract.findings import Finding, Reproducer
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.core import ALL
from marlhub.spaces import ActionSampler, find_action_mask

__all__ = ["compare_with_native"]


class _Diverged(Exception):
    def __init__(self, what: str, reason: str, agent: Any = None) -> None:
        super().__init__(what, reason)
        self.what = what
        self.reason = reason
        self.agent = agent


def _reward_difference(adapted: Any, native: Any) -> Optional[_Diverged]:
    """Return the difference in rewards, if any: it is reported, but the episode goes on."""
    reason = why_different(adapted, native)
    return _Diverged("rewards", reason) if reason else None


def _expect(what: str, adapted: Any, native: Any) -> None:
    both_dicts = isinstance(adapted, Mapping) and isinstance(native, Mapping)
    if both_dicts and list(adapted) != list(native):
        raise _Diverged("agent order", f"keys {list(adapted)} vs {list(native)}")
    reason = why_different(adapted, native)
    if reason:
        raise _Diverged(what, reason)


def compare_with_native(
    factory: Callable[[], Any],
    *,
    episodes: int = 3,
    seed: Optional[int] = 0,
    max_steps: int = 1000,
    adapt: Optional[Callable[[Any], Any]] = None,
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

    Returns:
        ``equiv.trajectory`` findings (the first difference of each episode: the
        episode stops there, except after a difference in rewards only, where the
        observations still agree and it goes on) and ``equiv.returns`` findings;
        empty when the adapter reports exactly what the native env does.
    """
    from marlhub.adapters.pettingzoo import from_pettingzoo, pettingzoo_kind

    adapted_native, native = factory(), factory()
    hub = (adapt or from_pettingzoo)(adapted_native)
    play = _aec_episode if pettingzoo_kind(native) == "aec" else _parallel_episode
    findings: list[Finding] = []
    try:
        for episode in range(episodes):
            ep_seed = None if seed is None else seed + episode
            findings.extend(play(hub, native, episode, ep_seed, max_steps))
    finally:
        hub.close()
        native.close()
    return findings


def _diverged_finding(exc: _Diverged, episode: int, step: int, seed: Optional[int],
                      actions: list[dict[Any, Any]]) -> Finding:
    return trajectory_finding(exc.what, exc.reason, episode=episode, step=step, seed=seed,
                              actions=actions, agent=exc.agent)


def _raised_finding(exc: BaseException, episode: int, step: int, seed: Optional[int],
                    actions: list[dict[Any, Any]]) -> Finding:
    return Finding(
        EQUIV_TRAJECTORY, "error",
        f"The adapted env raised {type(exc).__name__}: {exc} where the native env did not. "
        "The adapter must accept every step the native env accepts.",
        episode=episode, step=step, reproducer=Reproducer(seed, list(actions)),
    )


# -- AEC ----------------------------------------------------------------------------


class _NativeAEC:
    """The native AEC env read the way its own docs loop over it."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.returns: dict[Any, float] = defaultdict(float)
        self.any_truncated = False

    def advance(self, rewards: dict[Any, Any]) -> tuple[dict, dict, dict, dict]:
        """Step dead agents with None until a live agent is selected; return the hub-shaped view.

        The rewards of those None steps are added to ``rewards``.
        """
        env = self.env
        obs: dict[Any, Any] = {}
        terms: dict[Any, Any] = {}
        truncs: dict[Any, Any] = {}
        infos: dict[Any, Any] = {}
        for agent in env.agent_iter():
            ob, reward, term, trunc, info = env.last()
            self.returns[agent] += reward
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


def _aec_episode(hub: Any, native: Any, episode: int, seed: Optional[int],
                 max_steps: int) -> list[Finding]:
    sampler = ActionSampler(seed)
    actions: list[dict[Any, Any]] = []
    findings: list[Finding] = []
    hub_returns: dict[Any, float] = defaultdict(float)
    reader = _NativeAEC(native)
    step = 0
    try:
        try:
            h_obs, h_infos = hub.reset(seed=seed)
        except Exception as exc:
            return [_raised_finding(exc, episode, 0, seed, actions)]
        native.reset(seed=seed)
        n_obs, _, _, n_infos = reader.advance({})
        _expect("observations", h_obs, n_obs)
        _expect("infos", h_infos, n_infos)
        while native.agents and step < max_steps:
            agent = native.agent_selection
            action = sampler.sample(agent, hub.get_action_space(agent),
                                    find_action_mask(h_obs[agent], h_infos.get(agent)))
            actions.append({agent: action})
            step += 1
            try:
                h_obs, h_rew, h_term, h_trunc, h_infos = hub.step({agent: action})
            except Exception as exc:  # the native env takes this action: so must the adapter
                return [*findings, _raised_finding(exc, episode, step, seed, actions)]
            native.step(action)
            n_rew = dict(native.rewards)
            n_obs, n_term, n_trunc, n_infos = reader.advance(n_rew)
            for a, r in h_rew.items():
                hub_returns[a] += r
            _expect("observations", h_obs, n_obs)
            _expect("terminateds", h_term, n_term)
            _expect("truncateds", h_trunc, n_trunc)
            _expect("infos", h_infos, n_infos)
            if not findings:
                diff = _reward_difference(h_rew, n_rew)
                if diff:
                    findings.append(_diverged_finding(diff, episode, step, seed, actions))
    except _Diverged as exc:
        return [*findings, _diverged_finding(exc, episode, step, seed, actions)]
    if native.agents:  # cut by max_steps: pending rewards are not returns yet
        return findings
    return findings + returns_findings(hub_returns, reader.returns, episode=episode, seed=seed,
                                       actions=actions)


# -- parallel -----------------------------------------------------------------------


def _parallel_episode(hub: Any, native: Any, episode: int, seed: Optional[int],
                      max_steps: int) -> list[Finding]:
    sampler = ActionSampler(seed)
    actions: list[dict[Any, Any]] = []
    findings: list[Finding] = []
    hub_returns: dict[Any, float] = defaultdict(float)
    native_returns: dict[Any, float] = defaultdict(float)
    finished: set[Any] = set()
    any_truncated = False
    step = 0
    try:
        try:
            h_obs, h_infos = hub.reset(seed=seed)
        except Exception as exc:
            return [_raised_finding(exc, episode, 0, seed, actions)]
        n_obs, n_infos = native.reset(seed=seed)
        _expect("observations", h_obs, dict(n_obs))
        actors = list(n_obs)
        while native.agents and step < max_steps:
            joint = {
                a: sampler.sample(a, hub.get_action_space(a),
                                  find_action_mask(h_obs[a], h_infos.get(a)))
                for a in actors
            }
            actions.append(joint)
            step += 1
            try:
                h_obs, h_rew, h_term, h_trunc, _ = hub.step(joint)
            except Exception as exc:
                return [*findings, _raised_finding(exc, episode, step, seed, actions)]
            n_obs, n_rew, n_term, n_trunc, _ = native.step(dict(joint))
            for a, r in n_rew.items():
                native_returns[a] += r
            for a, r in h_rew.items():
                hub_returns[a] += r
            expected_obs = {a: o for a, o in n_obs.items() if a not in finished}
            expected_rew = {a: r for a, r in n_rew.items() if a not in finished}
            expected_term: dict[Any, Any] = {}
            expected_trunc: dict[Any, Any] = {}
            for a in dict.fromkeys([*n_term, *n_trunc]):
                if a in finished:
                    continue
                expected_term[a] = bool(n_term.get(a, False))
                expected_trunc[a] = bool(n_trunc.get(a, False))
                if expected_term[a] or expected_trunc[a]:
                    finished.add(a)
                    any_truncated |= not expected_term[a]
            actors = [a for a in expected_obs if a not in finished]
            for a in joint:
                if a in expected_obs and a not in expected_rew:
                    expected_rew[a] = 0
            over = not [a for a in native.agents if a not in finished]
            if over and any(a not in finished for a in joint):
                any_truncated = True
            expected_term[ALL] = over and not any_truncated
            expected_trunc[ALL] = over and any_truncated
            _expect("observations", h_obs, expected_obs)
            _expect("terminateds", h_term, expected_term)
            _expect("truncateds", h_trunc, expected_trunc)
            if not findings:
                diff = _reward_difference(h_rew, expected_rew)
                if diff:
                    findings.append(_diverged_finding(diff, episode, step, seed, actions))
    except _Diverged as exc:
        return [*findings, _diverged_finding(exc, episode, step, seed, actions)]
    if native.agents:
        return findings
    return findings + returns_findings(hub_returns, native_returns, episode=episode, seed=seed,
                                       actions=actions)
