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
from marlhub.contract.findings import Finding
from marlhub.core import ALL
from marlhub.episode.lockstep import Diverged, Lockstep, NativeTwin, compare_in_lockstep
from marlhub.episode.play import Step

__all__ = ["StateTwin", "compare_with_native"]


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
    return compare_in_lockstep(env, lambda: StateTwin(env), episodes=episodes, seed=seed,
                               max_steps=max_steps)


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


class StateTwin(NativeTwin):
    """A native ``pyspiel.State`` of a second copy of the game, read through its own methods.

    It gets the adapted env's player actions and chance outcomes (each checked
    to be a possible outcome of the native chance node), and is read with
    ``observation_tensor``/``legal_actions``/``returns``, not the observer
    buffers the adapter uses.
    """

    def __init__(self, env: OpenSpielEnv) -> None:
        self.env = env
        self.twins: dict[int, Any] = {}
        self.state: Any = None
        self.reported = [0.0] * env.num_players

    def mirror_chance(self) -> None:
        """Apply, at each chance node, the outcome the adapted env drew."""
        state, history = self.state, self.env.state.history()
        while state.is_chance_node():
            index = len(state.history())
            if index >= len(history):
                raise Diverged("chance outcomes", f"the native state is at a chance node at "
                                f"move {index} but the adapted env's history ends there")
            outcome = history[index]
            possible = [a for a, p in state.chance_outcomes() if p > 0]
            if outcome not in possible:
                raise Diverged("chance outcomes", f"outcome {outcome} at move {index} is not "
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
        deltas = {self.env.agent_id(p): now[p] - self.reported[p] for p in range(len(now))}
        self.reported = now
        return deltas

    def reset(self, seed: Optional[int], first: Step, lock: Lockstep) -> None:
        start = self.env.start_state
        self.state = (start.clone() if start is not None
                      else _native_game(self.env, self.twins).new_initial_state())
        self.reported = [0.0] * self.env.num_players
        self.mirror_chance()
        self._expect_actors(first, lock)

    def _expect_actors(self, step: Step, lock: Lockstep) -> None:
        players = self.actors()
        lock.expect("agent order", list(step.obs), [self.env.agent_id(p) for p in players])
        obs, infos = self.view(players)
        lock.expect("observations", step.obs, obs)
        lock.expect("infos", dict(step.infos), infos)

    def step(self, step: Step, lock: Lockstep) -> None:
        env, state, joint = self.env, self.state, step.actions or {}
        if state.is_simultaneous_node():
            state.apply_actions([joint.get(env.agent_id(p), 0) for p in range(env.num_players)])
        else:
            state.apply_action(joint[env.agent_id(state.current_player())])
        self.mirror_chance()
        lock.expect("histories", env.state.history(), self.state.history())
        _expect_rewards(lock, step.rewards, self.rewards())
        terminal = self.state.is_terminal()
        truncated = (not terminal and env.max_steps is not None
                     and len(lock.run.actions) >= env.max_steps)
        if not (terminal or truncated):
            self._expect_actors(step, lock)
            lock.expect("terminateds", step.terminateds, {ALL: False})
            lock.expect("truncateds", step.truncateds, {ALL: False})
            return
        obs, infos = self.view(list(range(env.num_players)))
        flags = dict.fromkeys(env.possible_agents, True)
        lock.expect("terminateds", step.terminateds, {**dict.fromkeys(flags, terminal), ALL: terminal})
        lock.expect("truncateds", step.truncateds,
                    {**dict.fromkeys(flags, truncated), ALL: truncated})
        lock.expect("observations", step.obs, obs)
        lock.expect("infos", dict(step.infos), infos)

    def returns(self) -> Mapping[Any, float]:
        return dict(zip(self.env.possible_agents, self.state.returns()))


def _expect_rewards(lock: Lockstep, adapted: Mapping[Any, float],
                    native: Mapping[Any, float]) -> None:
    if list(adapted) != list(native):
        lock.differ("rewards", f"keys {list(adapted)} vs {list(native)}")
    for agent, value in adapted.items():
        # The adapter reports what makes running sums exact, which may differ from a
        # plain difference of returns in the last bits.
        if not math.isclose(value, native[agent], rel_tol=1e-12, abs_tol=1e-9):
            lock.differ("rewards", f"[{agent!r}]: {value!r} vs {native[agent]!r}")
