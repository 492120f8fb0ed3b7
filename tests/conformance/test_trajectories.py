"""Recordings: snapshots that an env cannot rewrite, digests equal across processes, differences."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from marlhub.conformance.trajectories import (
    copy_actions,
    digest,
    first_difference,
    safe_mask,
    snapshot,
)

VALUE = ("{'a': np.arange(3, dtype=np.float32), 'b': {'x', 'y', 'z', 'w'}, 'c': [1, 2.5, 'txt'], "
         "'d': (np.int64(4), None, True), 'e': object()}")


def test_a_digest_is_the_same_in_a_process_with_another_hash_seed() -> None:
    code = f"import numpy as np; from marlhub.conformance.trajectories import digest; print(digest({VALUE}))"
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env=dict(os.environ, PYTHONHASHSEED=seed)).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1


def test_digests_see_order_dtype_and_type_but_not_set_order() -> None:
    assert digest({"a": 1, "b": 2}) != digest({"b": 2, "a": 1})
    assert digest(np.zeros(2, np.float32)) != digest(np.zeros(2, np.float64))
    assert digest(1) != digest(1.0) and digest(1) != digest(True)
    assert digest({"x", "y"}) == digest({"y", "x"})


def test_snapshots_are_copies_the_env_cannot_change_later() -> None:
    buffer = np.zeros(2)
    snap = snapshot({"a": buffer}, {"a": 0.0}, {"__all__": False}, {"__all__": False})
    buffer[0] = 5.0
    assert snap[0]["a"][0] == 0.0


def test_first_difference_names_the_call_the_dict_and_how() -> None:
    a = [snapshot({"a": 0}, {}, {}, {}), snapshot({"a": 1}, {"a": 1.0}, {"__all__": True}, {})]
    b = [a[0], snapshot({"a": 1}, {"a": 1.0}, {"__all__": False}, {})]
    assert first_difference(a, b) == (1, "terminateds", "['__all__']: True vs False")
    assert first_difference(a, a[:1]) == (1, "length", "the episode took 1 vs 0 steps")
    assert first_difference(a, list(a)) is None


def test_action_copies_do_not_share_arrays_or_dicts() -> None:
    sent = {"a": np.zeros(2), "b": {"x": [1]}, "c": 2}
    copied = copy_actions(sent)
    copied["a"][0] = 1.0
    copied["b"]["x"].append(2)
    assert sent == {"a": sent["a"], "b": {"x": [1]}, "c": 2} and sent["a"][0] == 0.0


def test_masks_that_cannot_be_read_are_ignored_for_sampling() -> None:
    assert safe_mask({"action_mask": ["yes", "no"]}, None) is None
    assert safe_mask(0, {"action_mask": [1, 0.5]}) is None
    assert safe_mask(0, {"action_mask": (np.array([1, 0]), np.array([0, 1, 1]))}).tolist() == [
        1, 0, 0, 1, 1]
    assert json.dumps(safe_mask(0, {"action_mask": [1, 0]}).tolist()) == "[1, 0]"
