"""A family can name rules its native envs are known to break: their findings become warnings
that say so (visible, failing under --strict), and other rules stay errors."""

from __future__ import annotations

from typing import Any

from marlhub.conformance import check
from marlhub.conformance import rules as R
from marlhub.registry import EnvContext, Registry
from tests.conformance import rule_breakers as B


class Upstream:
    name = "upstream"
    description = "envs with faults of their own"

    def ids(self) -> list[tuple[str, str]]:
        return [("upstream/global_rng", "rewards from numpy's global RNG")]

    def make(self, rest: str, config: EnvContext) -> Any:
        return {"global_rng": B.GlobalRandomRewards, "bool_reward": B.BoolReward}[rest]()

    def known_faults(self, rest: str) -> dict[str, str]:
        return {rule: "upstream draws from numpy's global RNG"
                for rule in (R.SEED_REPRODUCIBLE, R.SEED_GLOBAL_STATE)} if rest else {}


def registry() -> Registry:
    reg = Registry()
    reg.register_family(Upstream())
    return reg


def test_known_faults_become_warnings_that_name_the_upstream_fault() -> None:
    report = check("upstream/global_rng", episodes=3, registry=registry())
    assert report.ok and report.rules_broken() == [R.SEED_GLOBAL_STATE, R.SEED_REPRODUCIBLE]
    finding = next(f for f in report.findings if f.rule == R.SEED_REPRODUCIBLE)
    assert finding.severity == "warning"
    assert finding.message.startswith(
        "Known fault of the native env, not of the adapter (upstream draws from numpy's global RNG): "
        "the same seed")
    assert not check("upstream/global_rng", episodes=3, registry=registry(), strict=True).ok


def test_other_rules_stay_errors() -> None:
    report = check("upstream/bool_reward", episodes=2, registry=registry())
    assert not report.ok and {f.severity for f in report.findings} == {"error"}


def test_the_same_env_outside_the_family_is_an_error() -> None:
    assert not check(B.GlobalRandomRewards, episodes=3).ok
