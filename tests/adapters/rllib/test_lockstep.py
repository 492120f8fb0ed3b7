"""from_rllib reports what the RLlib env itself does, step for step (no Ray needed)."""

from __future__ import annotations

from typing import Any

from marlhub.adapters.rllib import RLlibEnv, compare_with_native
from marlhub.contract.rules import EQUIV_RETURNS, EQUIV_TRAJECTORY
from tests.rllib_docs_envs import rock_paper_scissors_class, tic_tac_toe_class


def test_the_rllib_docs_envs_match_their_adapted_selves() -> None:
    # The docs' rock-paper-scissors leaves __all__ out of truncateds; the adapter adds it.
    assert compare_with_native(rock_paper_scissors_class(), episodes=3) == []
    assert compare_with_native(tic_tac_toe_class(seeded_start=True), episodes=3) == []


class HalvesRewards(RLlibEnv):
    def step(self, action_dict: Any) -> Any:
        obs, rewards, terminateds, truncateds, infos = super().step(action_dict)
        return obs, {a: r / 2 for a, r in rewards.items()}, terminateds, truncateds, infos


def test_a_faulty_adapter_is_found() -> None:
    findings = compare_with_native(rock_paper_scissors_class(), episodes=1,
                                   adapt=lambda env: HalvesRewards(env, check=False))
    assert findings[0].rule == EQUIV_TRAJECTORY and "rewards differ" in findings[0].message
    assert {f.rule for f in findings[1:]} == {EQUIV_RETURNS}
