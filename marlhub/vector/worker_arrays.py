"""A worker's copies as rows of the shared array face (``array_face=True``).

:class:`WorkerArrays` runs in a worker of an async vector env: it reads its
copies' actions from the shared action arrays (the parent checked them, all
at once, before any copy moved), steps the copies inside
:func:`~marlhub.episode.prechecked.actions_prechecked`, keeps who acts
(:class:`~marlhub.vector.book.CopyBook`) and builds its rows with
:class:`~marlhub.vector.arrays.DictArrays`, then writes them into the
shared block (:class:`~marlhub.vector.slot_memory.SlotArrays`). Only the
copies' infos dicts go back through the pipe, in one message per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from marlhub.episode.play import action_space_getter
from marlhub.episode.prechecked import actions_prechecked
from marlhub.vector.arrays import ArrayBatch, DictArrays
from marlhub.vector.book import CopyBook
from marlhub.vector.copies import EnvCopy
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
        self.current = 0

    def reset(self, resets: Sequence[Optional[tuple[Any, Any]]]) -> tuple[list[Any], list[str]]:
        """Reset the copies with ``(seed, options)`` (None: left alone by a reset_mask); write
        their rows; return their infos and the groups that have shown a mask."""
        obs: list[Any] = []
        infos: list[Any] = []
        for self.current, (env_copy, how) in enumerate(zip(self.copies, resets)):
            if how is None:
                ob, info = self.book.kept_by_masked_reset(self.current)
            else:
                ob, info = env_copy.reset(*how)
            obs.append(ob)
            infos.append(info)
        mask = None if all(how is not None for how in resets) else \
            np.array([how is not None for how in resets])
        self.book.record_reset(obs, infos, mask)
        return self._write(self.face.reset(obs, infos, self.book.actors, mask))

    def step(self) -> tuple[list[Any], list[str]]:
        """Step the copies with their rows of the action arrays; write their rows; return
        their infos and the groups that have shown a mask."""
        values = {name: actions[self.rows] for name, actions in self.slots.actions.items()}
        slot = self.face.slot
        results = []
        with actions_prechecked():
            for self.current, (env_copy, actors) in enumerate(zip(self.copies,
                                                                  self.book.actors)):
                action_dict = {}
                for agent in actors:
                    name, j = slot[agent]
                    value = values[name][self.current, j]
                    action_dict[agent] = value.copy() if value.ndim else value
                results.append(env_copy.step(action_dict))
        self.book.record_step(results, [c.over for c in self.copies])
        columns = tuple(list(column) for column in zip(*results))
        return self._write(self.face.step(columns, self.book.actors))

    def _write(self, batch: ArrayBatch) -> tuple[list[Any], list[str]]:
        self.slots.write(self.rows, batch)
        return list(batch.infos), list(batch.action_mask)
