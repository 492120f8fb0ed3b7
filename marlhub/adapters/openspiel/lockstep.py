"""Lockstep comparison of :func:`from_openspiel` with a native ``pyspiel.State``.

The adapted env plays seeded random legal actions; a second state, from a
separately loaded copy of the game, gets the same player actions and the same
chance outcomes (read from the adapted env's history, and checked to be
possible outcomes of the native chance node). After every step the adapted
env's actors, observations, masks, rewards and done flags must be what the
native state says, read through the State's own methods (``observation_tensor``,
``legal_actions``, ``returns``), not the observer buffers the adapter uses; its
history must be the native one; and each player's summed rewards must equal
``returns()``.

Example:
    >>> compare_with_native("leduc_poker", episodes=2)
    []
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.adapters.openspiel.adapter import OpenSpielEnv
from marlhub.adapters.openspiel.games import import_pyspiel, native_stderr_captured
from marlhub.contract.compare import (
    returns_findings,
    trajectory_finding,
    why_different,
)
from marlhub.contract.findings import Finding, Reproducer
from marlhub.contract.rules import EQUIV_TRAJECTORY
from marlhub.core import ALL
from marlhub.spaces import ActionSampler, find_action_mask

__all__ = ["compare_with_native"]


class _Diverged(Exception):
    def __init__(self, what: str, reason: str) -> None:
        super().__init__(what, reason)
        self.what = what
        self.reason = reason


def _expect(what: str, adapted: Any, native: Any) -> None:
    reason = why_different(adapted, native)
    if reason:
        raise _Diverged(what, reason)


def compare_with_native(
    game_or_env: Any,
    *,
    episodes: int = 3,
    seed: int = 0,
    max_steps: int = 1000,
    **options: Any,
) -> list[Finding]:
    """Play ``from_openspiel(game)`` and a native state side by side; return the differences.

    Args:
        game_or_env: a game, game name or string, start state, or an
            :class:`OpenSpielEnv` (compared as configured).
        episodes: how many episodes; episode ``i`` is reset with ``seed + i``.
        seed: the first episode's seed.
        max_steps: steps per episode at most (the comparison's budget; an
            env's own ``max_steps`` option truncates as it says).
        options: :func:`~marlhub.adapters.openspiel.from_openspiel` options
            (``params``, ``observation`` ...); for an env that truncates by its own
            ``max_steps``, pass the env.

    Returns:
        ``equiv.trajectory`` findings (the first difference of each episode,
        which stops there) and ``equiv.returns`` findings; empty when the
        adapter reports exactly what the native state does.
    """
    if isinstance(game_or_env, OpenSpielEnv):
        env = game_or_env
    else:
        from marlhub.adapters.openspiel import from_openspiel

        env = from_openspiel(game_or_env, **options)
    findings: list[Finding] = []
    twins: dict[int, Any] = {}
    for episode in range(episodes):
        findings.extend(_episode(env, episode, seed + episode, max_steps, twins))
    return findings


def _native_game(env: OpenSpielEnv, twins: dict[int, Any]) -> Any:
    """A second copy of the env's game, loaded from its string (the same object if that fails).

    One copy per game object of the env, kept across episodes, so that games
    drawing from an RNG of their own consume it the same way on both sides.
    """
    game = env.game
    if id(game) not in twins:
        pyspiel = import_pyspiel()
        try:
            with native_stderr_captured():  # a failed load prints every game's name
                twin = pyspiel.load_game(str(game))
        except Exception:  # games whose string does not load (rnr_kuhn_poker(...), ...)
            twin = game
        twins.clear()
        twins[id(game)] = (game, twin)  # keep game alive so its id is not reused
    return twins[id(game)][1]


class _Native:
    """The native state, read in hub terms through the State's own methods."""

    def __init__(self, env: OpenSpielEnv, twins: dict[int, Any]) -> None:
        start = env._start
        self.state = (start.clone() if start is not None
                      else _native_game(env, twins).new_initial_state())
        self.env = env
        self.returns = [0.0] * env.num_players

    def mirror_chance(self) -> None:
        """Apply, at each chance node, the outcome the adapted env drew."""
        state, history = self.state, self.env.state.history()
        while state.is_chance_node():
            index = len(state.history())
            if index >= len(history):
                raise _Diverged("chance outcomes", f"the native state is at a chance node at "
                                f"move {index} but the adapted env's history ends there")
            outcome = history[index]
            possible = [a for a, p in state.chance_outcomes() if p > 0]
            if outcome not in possible:
                raise _Diverged("chance outcomes", f"outcome {outcome} at move {index} is not "
                                f"a possible outcome of the native chance node {possible[:20]}")
            state.apply_action(outcome)

    def actors(self) -> list[int]:
        state = self.state
        if state.is_terminal():
            return []
        current = state.current_player()
        if current >= 0:
            return [current]
        return [p for p in range(self.env.num_players) if state.legal_actions(p)]

    def mask(self, player: int) -> np.ndarray:
        mask = np.zeros(self.env.num_actions, np.int8)
        if not self.state.is_terminal():
            mask[self.state.legal_actions(player)] = 1
        return mask

    def view(self, players: list[int]) -> tuple[dict[Any, Any], dict[Any, Any]]:
        """What the adapted env should return as obs and infos for ``players``."""
        env, obs, infos = self.env, {}, {}
        for p in players:
            aid = env.agent_id(p)
            tensor = env.observer.native(self.state, p)
            if env.mask_in_obs:
                obs[aid] = {"observation": tensor, "action_mask": self.mask(p)}
            else:
                obs[aid] = tensor
                infos[aid] = {"action_mask": self.mask(p)}
        return obs, infos

    def rewards(self) -> dict[Any, float]:
        now = list(self.state.returns())
        deltas = {self.env.agent_id(p): now[p] - self.returns[p] for p in range(len(now))}
        self.returns = now
        return deltas


def _episode(env: OpenSpielEnv, episode: int, seed: int, max_steps: int,
             twins: dict[int, Any]) -> list[Finding]:
    sampler = ActionSampler(seed)
    actions: list[dict[Any, Any]] = []
    sums = dict.fromkeys(env.possible_agents, 0.0)
    step = 0
    native: Optional[_Native] = None
    try:
        try:
            h_obs, h_infos = env.reset(seed=seed)
        except Exception as exc:
            return [_raised(exc, "reset()", episode, 0, seed, actions)]
        native = _Native(env, twins)
        native.mirror_chance()
        players = native.actors()
        _expect("agent order", list(h_obs), [env.agent_id(p) for p in players])
        n_obs, n_infos = native.view(players)
        _expect("observations", h_obs, n_obs)
        _expect("infos", {a: i for a, i in h_infos.items()}, n_infos)
        while step < max_steps:
            joint = {
                a: sampler.sample(a, env.get_action_space(a), find_action_mask(o, h_infos.get(a)))
                for a, o in h_obs.items()
            }
            actions.append(joint)
            step += 1
            try:
                h_obs, h_rew, h_term, h_trunc, h_infos = env.step(joint)
            except Exception as exc:
                return [_raised(exc, "step()", episode, step, seed, actions)]
            state = native.state
            if state.is_simultaneous_node():
                state.apply_actions([joint.get(env.agent_id(p), 0)
                                     for p in range(env.num_players)])
            else:
                state.apply_action(joint[env.agent_id(state.current_player())])
            native.mirror_chance()
            _expect("histories", env.state.history(), native.state.history())
            n_rew = native.rewards()
            for agent, reward in h_rew.items():
                sums[agent] += reward
            _expect_rewards(h_rew, n_rew)
            terminal = native.state.is_terminal()
            truncated = not terminal and env.max_steps is not None and step >= env.max_steps
            if terminal or truncated:
                everyone = list(range(env.num_players))
                n_obs, n_infos = native.view(everyone)
                flags = dict.fromkeys(env.possible_agents, True)
                _expect("terminateds", h_term, {**dict.fromkeys(flags, terminal), ALL: terminal})
                _expect("truncateds", h_trunc, {**dict.fromkeys(flags, truncated), ALL: truncated})
            else:
                players = native.actors()
                _expect("agent order", list(h_obs), [env.agent_id(p) for p in players])
                n_obs, n_infos = native.view(players)
                _expect("terminateds", h_term, {ALL: False})
                _expect("truncateds", h_trunc, {ALL: False})
            _expect("observations", h_obs, n_obs)
            _expect("infos", h_infos, n_infos)
            if terminal or truncated:
                break
    except _Diverged as exc:
        return [trajectory_finding(exc.what, exc.reason, episode=episode, step=step, seed=seed,
                                   actions=actions)]
    returns = dict(zip(env.possible_agents, native.state.returns()))
    return returns_findings(sums, returns, episode=episode, seed=seed, actions=actions)


def _expect_rewards(adapted: Mapping[Any, float], native: Mapping[Any, float]) -> None:
    if list(adapted) != list(native):
        raise _Diverged("rewards", f"keys {list(adapted)} vs {list(native)}")
    for agent, value in adapted.items():
        # The adapter reports what makes running sums exact, which may differ from a
        # plain difference of returns in the last bits.
        if not math.isclose(value, native[agent], rel_tol=1e-12, abs_tol=1e-9):
            raise _Diverged("rewards", f"[{agent!r}]: {value!r} vs {native[agent]!r}")


def _raised(exc: BaseException, call: str, episode: int, step: int, seed: int,
            actions: list[dict[Any, Any]]) -> Finding:
    return Finding(
        EQUIV_TRAJECTORY, "error",
        f"The adapted env's {call} raised {type(exc).__name__}: {exc}, where the native state "
        "plays on. The adapter must accept every game and step the native game does.",
        episode=episode, step=step, reproducer=Reproducer(seed, list(actions)),
    )
