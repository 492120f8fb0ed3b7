"""The ``momaland/`` family: MOMAland's multi-objective envs, PettingZoo's API with vector rewards.

MOMAland (the ``momaland`` package) keeps PettingZoo's API, and pays each agent an
array, one entry per objective, in the reward space the env declares
(``reward_space(agent)``, a ``Box`` of shape ``(k,)``). The hub carries the arrays
(:mod:`marlhub.rewards`): ``marlhub.make("momaland/moitem_gathering-v0")`` pays arrays
of shape ``(3,)``, and so do its PettingZoo, RLlib and TorchRL views; Gymnasium's and
OpenSpiel's, which need one number per agent, refuse it until the rewards are
scalarized with explicit weights (:class:`marlhub.wrappers.ScalarizeRewards`).

The ids are MOMAland's own list of envs (``momaland.utils.all_modules``): its env
modules, found under ``momaland.envs`` by name (``momaland.envs.item_gathering.
moitem_gathering_v0`` is ``momaland/moitem_gathering-v0``, ``momaland.envs.crazyrl.catch.
catch_v0`` is ``momaland/catch-v0``), read without importing the modules, so that an env
whose optional dependency is missing still has its id (making it says what is missing).
Everything else is the ``pettingzoo/`` family's: PettingZoo's spellings, config keys
checked against the constructor, ``{"api": "parallel"}`` for the parallel version, and the
lockstep comparison behind ``marlhub check --against-native``.

Example:
    >>> from marlhub.context import EnvContext
    >>> family = MomalandFamily()
    >>> dict(family.ids())["momaland/moitem_gathering-v0"]
    'MOMAland env (AEC and parallel)'
    >>> from marlhub.adapters.pettingzoo import from_pettingzoo
    >>> env = from_pettingzoo(family.make("moitem_gathering-v0", EnvContext({"api": "parallel"})))
    >>> env.get_reward_space("agent_0").shape
    (3,)
"""

from __future__ import annotations

import pkgutil
from typing import Any

from marlhub.adapters.pettingzoo.family_packages import PackageFamily
from marlhub.contract.rules import (
    EQUIV_TRAJECTORY,
    REWARD_SCALAR,
    SEED_GLOBAL_STATE,
    TURN_ACTIONS_ACCEPTED,
)

__all__ = ["MOMALAND_FAULTS", "MomalandFamily"]

_SEEDS_GLOBALLY = ("MOMAland 0.2.0's reset(seed=...) calls np.random.seed(seed) and random.seed(seed) "
                   "and draws from the global generators")

#: Rules MOMAland's own envs break (MOMAland 0.2.0 with NumPy 2), by id. Not listed:
#: ``moroute_choice-v0``, which cannot be made at all with networkx 3.6 (MOMAland reads its
#: road networks with ``node_link_graph``, whose default key for the edges became ``'edges'``
#: where MOMAland's files say ``'links'``: ``KeyError: 'edges'``); ``marlhub check`` reports
#: the load error.
MOMALAND_FAULTS: dict[str, dict[str, str]] = {
    "momultiwalker_stability-v0": {
        REWARD_SCALAR: "MOMAland 0.2.0 declares the first objective's bounds as [-210, -209.54] "
        "(low=-210, high=-210 + 0.46 in MOMultiWalkerStabilityEnv.reward_space), so the "
        "rewards it pays (0.0 in most steps) lie outside the reward space it declares",
    },
    "mogem_mining-v0": {
        rule: "MOMAland 0.2.0's step adds a village's workers, a list of one int, into one entry "
        "of an int32 array, which NumPy 2 refuses (ValueError: setting an array element with a "
        "sequence) once every agent has acted; reproduce: env = mogem_mining_v0.parallel_env(); "
        "env.reset(seed=0); env.step({a: 0 for a in env.agents})"
        for rule in (TURN_ACTIONS_ACCEPTED, EQUIV_TRAJECTORY)
    },
    "mosame_game-v0": {
        "target.pettingzoo.aec": "MOMAland 0.2.0's reset() without a seed means to deal its "
        "first board again (Generator.__setstate__ of the state it kept) but does not, with "
        "NumPy 2.4: two unseeded resets deal different boards, so MOMAland's own api_test "
        "(test_action_flexibility plays one legal action again after a second reset()) fails "
        "with 'played illegal move' about half the time, on MOMAland's env as on the view",
    },
    "mobeach-v0": {SEED_GLOBAL_STATE: _SEEDS_GLOBALLY},
    "moingenious-v0": {SEED_GLOBAL_STATE: _SEEDS_GLOBALLY},
    "moitem_gathering-v0": {SEED_GLOBAL_STATE: _SEEDS_GLOBALLY},
}


class MomalandFamily(PackageFamily):
    """``momaland/<env>``: the multi-objective envs of the ``momaland`` package."""

    name = "momaland"
    description = (
        "MOMAland's multi-objective envs, vector rewards (momaland/moitem_gathering-v0); config: "
        "constructor kwargs, plus api='parallel' for the parallel version"
    )
    package = "momaland"
    modules = "momaland.envs"
    extra = "momaland"
    env_label = "MOMAland"
    faults = MOMALAND_FAULTS

    def env_modules(self, holder: Any) -> list[str]:
        """Every module in ``momaland.envs``' packages, nested ones included (read, not imported).

        MOMAland groups its envs by domain (``momaland.envs.crazyrl.catch.catch_v0``); the
        modules named ``<name>_v<N>`` among them are the envs of ``momaland.utils.all_modules``.
        """
        found = pkgutil.walk_packages(holder.__path__, prefix=f"{self.modules}.",
                                      onerror=lambda name: None)
        return sorted((info.name for info in found if not info.ispkg),
                      key=lambda name: name.rpartition(".")[2])
