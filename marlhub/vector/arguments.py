"""The arguments every vector env checks the same way: seeds, reset masks, values per copy.

Example:
    >>> seeds_for("VectorEnv", 7, 3)
    [7, 8, 9]
    >>> reset_mask_of("VectorEnv", {"reset_mask": np.array([True, False]), "x": 1}, 2)
    (array([ True, False]), {'x': 1})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np

from marlhub.errors import VectorEnvError

__all__ = ["one_seed", "reset_mask_of", "seeds_for", "values_per_copy"]


def seeds_for(env_name: str, seed: Any, num_envs: int) -> list[Optional[int]]:
    """One seed per copy: ``seed + i`` for an int, the list itself, or Nones (else raise)."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return [int(seed) + i for i in range(num_envs)]
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        if len(seed) != num_envs:
            raise VectorEnvError(
                env_name, f"reset() got {len(seed)} seeds for {num_envs} copies",
                "Pass one int (copy i is seeded seed + i), one seed per copy, or None.")
        return [None if s is None else int(s) for s in seed]
    raise VectorEnvError(env_name, f"reset() got the seed {seed!r}",
                         "Pass an int (copy i is seeded seed + i), a list of one seed per "
                         "copy, or None.")


def one_seed(env_name: str, seed: Any, mask: Any, seeding: str) -> Optional[int]:
    """The one seed of a batched simulator, or None; raise for a seed per copy, a seed with a
    ``reset_mask``, or no int (``seeding`` says what the seed reproduces).

    Example:
        >>> one_seed("Vec", 3, None, ""), one_seed("Vec", None, [True], "")
        (3, None)
    """
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        raise VectorEnvError(
            env_name, f"reset() got one seed per copy ({len(seed)}), and the batched "
            "simulator is seeded once for all copies", f"Pass one int. {seeding}")
    if seed is not None and mask is not None:
        raise VectorEnvError(
            env_name, "reset() got a seed with a reset_mask; the batched simulator seeds "
            "all copies at once", "Reset the masked copies without a seed, or reset every "
            "copy with reset(seed=s).")
    if seed is not None and (isinstance(seed, (bool, np.bool_))
                             or not isinstance(seed, (int, np.integer))):
        raise VectorEnvError(env_name, f"reset() got the seed {seed!r}", "Pass an int, or None.")
    return None if seed is None else int(seed)


def reset_mask_of(env_name: str, options: Optional[Mapping[str, Any]],
                  num_envs: int) -> tuple[Optional[np.ndarray], Optional[dict[str, Any]]]:
    """Split ``options`` into the ``reset_mask`` (or None, checked) and the copies' options."""
    if options is None or "reset_mask" not in options:
        return None, None if options is None else dict(options)
    rest = {k: v for k, v in options.items() if k != "reset_mask"}
    raw = options["reset_mask"]
    mask = np.asarray(raw)
    if mask.dtype != np.bool_ or mask.shape != (num_envs,):
        raise VectorEnvError(
            env_name, f"options['reset_mask'] must be {num_envs} bools, one per copy, got {raw!r}",
            f"Pass a numpy bool array of shape ({num_envs},) that is True for the copies to reset.")
    if not mask.any():
        raise VectorEnvError(env_name, "options['reset_mask'] resets no copy (all False)",
                             "Set it True for at least one copy, or do not call reset().")
    return mask, rest or None


def values_per_copy(name: str, values: Any, num_envs: int) -> list[Any]:
    """One value per copy: ``values`` (a list or tuple, of the right length) or repeats."""
    if not isinstance(values, (list, tuple)):
        return [values] * num_envs
    if len(values) != num_envs:
        raise VectorEnvError(name, f"set_attr() got {len(values)} values for {num_envs} copies",
                             "Pass one value per copy, or one value (not a list) for all.")
    return list(values)
