"""Lockstep comparison of from_openspiel with a native pyspiel.State, and that it catches faults."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

from marlhub.adapters.openspiel import (  # noqa: E402
    OpenSpielEnv,
    compare_with_native,
    from_openspiel,
)
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY  # noqa: E402


@pytest.mark.parametrize(
    ("game", "options"),
    [
        ("kuhn_poker", {}),
        ("leduc_poker", {"observation": "information_state_tensor"}),
        ("leduc_poker", {"observation": "string", "agent_ids": "int", "action_mask": "info"}),
        ("goofspiel(num_cards=5)", {}),
        ("turn_based_simultaneous_game(game=goofspiel(num_cards=4))", {}),
        ("2048", {}),
        ("hanabi", {}),
        ("negotiation", {}),
        ("python_iterated_prisoners_dilemma", {}),
        ("python_liars_poker", {}),
    ],
)
def test_adapted_games_match_the_native_state(game: str, options: dict[str, Any]) -> None:
    assert compare_with_native(game, episodes=3, seed=0, max_steps=300, **options) == []


def test_an_env_truncated_by_its_max_steps_matches_too() -> None:
    assert compare_with_native(from_openspiel("backgammon", max_steps=25), episodes=2) == []


def test_an_env_from_a_start_state_matches_too() -> None:
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    state.apply_action(4)
    assert compare_with_native(from_openspiel(state), episodes=2) == []


# -- broken adapters: the comparison must say what is wrong ----------------------------


class CumulativeRewards(OpenSpielEnv):
    """RLlib's wrapper's fault: state.returns() as each step's reward."""

    def _after_actions(self, offenders: Any) -> Any:
        obs, _, terminateds, truncateds, infos = super()._after_actions(offenders)
        rewards = {self.agent_id(p): r for p, r in enumerate(self.state.returns())}
        return obs, rewards, terminateds, truncateds, infos


class FirstLegalAction(OpenSpielEnv):
    """Applies the first legal action whatever it is given."""

    def step(self, action_dict: Any) -> Any:
        first = {a: int(np.flatnonzero(self._masks[self.player(a)])[0]) for a in action_dict}
        return super().step(first)


class StaleObservations(OpenSpielEnv):
    """Returns the observer's buffer itself, which the next read overwrites."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        buffer, set_from = self.observer.buffer, self.observer._native.set_from

        def read(state: Any, player: int) -> Any:
            set_from(state, player)
            return buffer

        self._read = read


class GlobalRandomChance(OpenSpielEnv):
    """Shimmy/RLlib's fault: chance outcomes from an unseeded global generator."""

    rng = np.random.default_rng()

    def _resolve_chance(self) -> None:
        while self._state.is_chance_node():
            outcomes = self._state.chance_outcomes()
            self._state.apply_action(outcomes[self.rng.integers(len(outcomes))][0])


def hub_layout(cls: type, game: str) -> OpenSpielEnv:
    return cls(game, agent_ids="names", action_mask="obs")


def test_cumulative_rewards_are_caught() -> None:
    findings = compare_with_native(hub_layout(CumulativeRewards, "2048"), episodes=2)
    assert findings and {f.rule for f in findings} <= {EQUIV_TRAJECTORY, EQUIV_RETURNS}
    assert any("rewards differ" in f.message for f in findings)


def test_returns_counted_twice_are_caught_even_when_only_sums_differ() -> None:
    class Doubled(OpenSpielEnv):
        def _after_actions(self, offenders: Any) -> Any:
            obs, rewards, terminateds, truncateds, infos = super()._after_actions(offenders)
            if terminateds["__all__"]:
                rewards = {a: 2 * r for a, r in rewards.items()}
            return obs, rewards, terminateds, truncateds, infos

    findings = compare_with_native(hub_layout(Doubled, "kuhn_poker"), episodes=2)
    assert findings[0].rule == EQUIV_TRAJECTORY and findings[0].reproducer is not None


def test_substituted_actions_are_caught() -> None:
    findings = compare_with_native(hub_layout(FirstLegalAction, "tic_tac_toe"), episodes=2)
    assert findings and "histories differ" in findings[0].message


def test_stale_observation_buffers_are_caught() -> None:
    findings = compare_with_native(hub_layout(StaleObservations, "goofspiel(num_cards=4)"),
                                   episodes=2)
    assert findings and "observations differ" in findings[0].message


def test_chance_outcomes_are_mirrored_so_unseeded_chance_still_matches() -> None:
    # The native state takes the adapted env's chance outcomes, so the comparison
    # judges the adapter's reporting; reproducibility is the conformance suite's job.
    assert compare_with_native(hub_layout(GlobalRandomChance, "leduc_poker"), episodes=2) == []


def test_a_game_the_adapter_refuses_is_a_finding_not_an_exception() -> None:
    findings = compare_with_native("chat_game", episodes=1)
    assert [f.rule for f in findings] == [EQUIV_TRAJECTORY]
    assert "reset() raised EnvContractError" in findings[0].message
