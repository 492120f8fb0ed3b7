"""PettingZoo's registry on every supported PettingZoo: its own from 1.27, read from its modules before."""

from __future__ import annotations

import importlib

import pytest

pettingzoo = pytest.importorskip("pettingzoo")

from marlhub.adapters.pettingzoo.catalogue import (  # noqa: E402
    ModuleSpec,
    find_spec,
    make,
    read_env_modules,
    registries,
)

#: Namespaces that PettingZoo 1.27's registry leaves out (they moved to mpe2 and magent2).
MOVED = ("mpe/", "magent/")


def test_the_env_modules_hold_the_ids_of_pettingzoos_own_registry() -> None:
    if not hasattr(pettingzoo, "aec_registry"):
        pytest.skip("this PettingZoo has no registry of its own to compare with")
    aec, parallel = read_env_modules()
    assert set(aec) == {i for i in pettingzoo.aec_registry if not i.startswith(MOVED)}
    assert set(parallel) == {i for i in pettingzoo.parallel_registry if not i.startswith(MOVED)}
    compared = 0
    for env_id, spec in aec.items():  # the same functions, so the same envs
        try:
            ours, theirs = (_function(s.entry_point)
                            for s in (spec, pettingzoo.aec_registry[env_id]))
        except ImportError:  # the env's own dependencies are missing (atari here)
            continue
        assert ours is theirs, env_id
        compared += 1
    assert compared >= 10


def _function(entry_point: str) -> object:
    module, _, name = entry_point.partition(":")
    return getattr(importlib.import_module(module), name)


def test_look_up_takes_pettingzoos_spellings_on_the_modules_registry() -> None:
    aec, parallel = read_env_modules()
    assert find_spec(aec, "classic/tictactoe").id == "classic/tictactoe-v3"  # the newest
    assert find_spec(aec, "classic/tictactoe_v3") is aec["classic/tictactoe-v3"]
    assert "classic/tictactoe-v3" not in parallel and "classic/rps-v2" in parallel
    with pytest.raises(LookupError, match=r"version v9 for 'classic/tictactoe' not found\. "
                                          r"Available version: v3"):
        find_spec(aec, "classic/tictactoe-v9")
    with pytest.raises(LookupError, match="'classic/checkers-v1' not found in registry"):
        find_spec(aec, "classic/checkers-v1")
    with pytest.raises(LookupError, match="Malformed environment ID"):
        find_spec(aec, "classic/tic tac toe")


def test_a_module_spec_makes_the_modules_env() -> None:
    spec = ModuleSpec("classic/rps_v2", "pettingzoo.classic.rps_v2:parallel_env",
                      kwargs={"num_actions": 3})
    assert (spec.id, spec.namespace, spec.name, spec.version) == ("classic/rps-v2", "classic",
                                                                   "rps", 2)
    env = spec.make(max_cycles=5)
    assert isinstance(env, pettingzoo.ParallelEnv) and env.unwrapped.max_cycles == 5


def test_make_takes_an_id_or_a_spec_as_pettingzoo_make_does() -> None:
    aec, _ = registries()
    by_id = make("aec", "classic/tictactoe-v3")
    by_spec = make("aec", find_spec(aec, "classic/tictactoe"))
    assert type(by_id.unwrapped) is type(by_spec.unwrapped)
    assert by_id.possible_agents == ["player_1", "player_2"]
