"""A worker's copies as rows of the shared array face (``array_face=True``).

:class:`WorkerArrays` runs in a worker of an async vector env: it reads its
copies' actions from the shared action arrays (the parent checked them, all
at once, before any copy moved), steps the copies inside
:func:`~marlhub.episode.prechecked.actions_prechecked`, keeps who acts
(:class:`~marlhub.vector.book.CopyBook`) and builds its rows with
:class:`~marlhub.vector.arrays.DictArrays`, which writes them straight into
the shared block (:class:`~marlhub.vector.slot_memory.SlotArrays`) in one
pass over each copy's dicts. Only the copies' infos dicts go back through the
pipe, in one message per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.episode.play import action_space_getter
from marlhub.episode.prechecked import actions_prechecked
from marlhub.vector.arrays import ArrayBatch, DictArrays
from marlhub.vector.autoreset import SAME_STEP
from marlhub.vector.book import CopyBook
from marlhub.vector.copies import EnvCopy
from marlhub.vector.ready import spread
from marlhub.vector.slot_memory import SlotArrays

__all__ = ["WorkerArrays"]


class WorkerArrays:
    """The rows ``first .. first + len(copies) - 1`` of the shared array face.

    Args:
        copies: the worker's copies.
        first: the index of its first copy.
        slots: the shared arrays.
        autoreset_mode: the vector env's autoreset mode.

    Attributes:
        current: the index (in ``copies``) of the copy being reset or stepped, for errors.
    """

    def __init__(self, copies: Sequence[EnvCopy], first: int, slots: SlotArrays,
                 autoreset_mode: str) -> None:
        envs = [c.env for c in copies]
        self.copies = list(copies)
        self.rows = slice(first, first + len(copies))
        self.slots = slots
        self.book = CopyBook(f"copies {first} to {first + len(copies) - 1}", len(copies),
                             autoreset_mode, [e.possible_agents for e in envs],
                             [action_space_getter(e) for e in envs])
        first_env = envs[0]
        self.face = DictArrays(len(copies), autoreset_mode, slots.layout.groups,
                               first_env.get_observation_space, first_env.get_action_space)
        self.same_step = autoreset_mode == SAME_STEP
        self.out = _rows_of(slots, self.rows, self.same_step)
        # Discrete actions go to the copies as ints, as the vector env's own check passes them on
        self.discrete = {name for name, space in self.face.action_spaces.items()
                         if type(space) is gym.spaces.Discrete}
        self.current = 0

    def reset(self, resets: Sequence[Optional[tuple[Any, Any]]],
              only: bool = False) -> tuple[list[Any], list[str]]:
        """Reset the copies with ``(seed, options)`` (None: left alone by a reset_mask); write
        their rows (``only``: only the rows of the copies reset, for ``async_reset``, else
        every row); return their infos and the groups that have shown a mask."""
        which = [k for k, how in enumerate(resets) if how is not None] if only else None
        obs: list[Any] = []
        infos: list[Any] = []
        for self.current, (env_copy, how) in enumerate(zip(self.copies, resets)):
            if how is None:
                if only:
                    continue
                ob, info = self.book.kept_by_masked_reset(self.current)
            else:
                ob, info = env_copy.reset(*how)
            obs.append(ob)
            infos.append(info)
        mask = None if all(how is not None for how in resets) else \
            np.array([how is not None for how in resets])
        if which is None:
            self.book.record_reset(obs, infos, mask)
        else:
            self.book.record_reset(spread(which, obs, len(resets)),
                                   spread(which, infos, len(resets)), mask)
        self.face.reset(obs, infos, self.book.actors, None if only else mask, out=self.out,
                        rows=which)
        self.slots.final_row[self._global(which)] = False
        return infos, list(self.face.mask_size)

    def step(self, which: Optional[Sequence[int]] = None) -> tuple[list[Any], list[str]]:
        """Step the copies (``which``: only those, by their index here) with their rows of the
        action arrays; write their rows; return their infos and the groups that have shown a
        mask."""
        values = {name: actions[self.rows].tolist() if name in self.discrete else
                  actions[self.rows] for name, actions in self.slots.actions.items()}
        slot, copies, actors = self.face.slot, self.copies, self.book.actors
        results = []
        with actions_prechecked():
            for self.current in range(len(copies)) if which is None else which:
                action_dict = {}
                for agent in actors[self.current]:
                    name, j = slot[agent]
                    value = values[name][self.current][j]
                    action_dict[agent] = value.copy() if type(value) is np.ndarray else value
                results.append(copies[self.current].step(action_dict))
        stepped = copies if which is None else [copies[k] for k in which]
        self.book.record_step(results, [c.over for c in stepped], which)
        columns = tuple(list(column) for column in zip(*results))
        out = self.out
        self.face.step(columns, self.book.actors, out=out, rows=which)
        if self.same_step:
            if which is None:
                self.slots.final_row[self.rows] = out.episode_terminated | out.episode_truncated
            else:
                self.slots.final_row[self._global(which)] = \
                    out.episode_terminated[which] | out.episode_truncated[which]
        return columns[4], list(self.face.mask_size)

    def _global(self, which: Optional[Sequence[int]]) -> Any:
        """The rows of the shared arrays of the copies ``which`` (all of this worker's: None)."""
        return self.rows if which is None else [self.rows.start + k for k in which]


def _rows_of(slots: SlotArrays, rows: slice, same_step: bool) -> ArrayBatch:
    """Views of the rows ``rows`` of every array of ``slots``, as a batch to fill."""
    def view(value: Any) -> Any:
        return {key: view(sub) for key, sub in value.items()} if isinstance(value, dict) \
            else value[rows]

    flags = slots.flags
    return ArrayBatch(
        obs=view(slots.obs), rewards=view(slots.rewards), terminated=view(flags["terminated"]),
        truncated=view(flags["truncated"]), episode_terminated=slots.episode_terminated[rows],
        episode_truncated=slots.episode_truncated[rows], acting=view(flags["acting"]),
        alive=view(flags["alive"]), action_mask=view(slots.masks),
        final_obs=view(slots.final) if same_step else None)
