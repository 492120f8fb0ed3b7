"""Where each copy of a vector env stands: who acts, which copy ended, which face holds it.

Every source keeps one :class:`CopyBook`: it records what each call did to each copy,
checks every action before any copy moves (naming the copy and the agent), and holds
the ``recv``/``send`` cycle.

Example:
    >>> import gymnasium as gym
    >>> spaces = {"a": gym.spaces.Discrete(2)}
    >>> book = CopyBook("Vec", 2, "next_step", [["a"], ["a"]], [spaces.__getitem__] * 2)
    >>> book.record_reset([{"a": 0}, {"a": 0}], [{}, {}])
    >>> book.check_actions([{"a": 1}, {"a": 5}])
    Traceback (most recent call last):
    ...
    marlhub.errors.ActionError: Bad action for 'a' in copy 1: got 5, expected an action in Discrete(2) (5 (int) is not an integer in [0, 1]). Send exactly one action for each agent in the last observation dict, inside its action space and mask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from typing import Any, Optional

import gymnasium as gym
import numpy as np

from marlhub.core import ALL, AgentID
from marlhub.episode.actions import ActionChecker, DiscreteCheck, action_masks
from marlhub.episode.status import NOT_RESET, done_agents, flag, require_running
from marlhub.errors import ActionError, VectorEnvError
from marlhub.spaces import ACTION_MASK_KEY, find_action_mask, raw_action_mask
from marlhub.vector.arguments import reset_mask_of
from marlhub.vector.autoreset import (
    DISABLED,
    ENDED,
    ENDED_AND_RESET,
    IDLE,
    NEXT_STEP,
    RESTARTED,
    STEPPED,
)
from marlhub.vector.ready import ReadyCopies, count_of, rows_of, spread

__all__ = ["ARRAYS", "DICTS", "CopyBook"]

#: The faces an episode is held in: lists of per-copy dicts, or arrays per group.
DICTS, ARRAYS = "dicts", "arrays"


class CopyBook:
    """The record of ``num_envs`` copies (their ``possible_agents`` and ``action_space_of``).

    Attributes:
        obs, infos, actors: each copy's last obs and infos, and its agents that act next.
        ended, final_flags: each copy's episode ended, with its ``__all__`` flags.
        outcomes: what the last call did to each copy, as its source reported.
        uniform: the check of the one Discrete space of every agent, when there is one.
        masks_binding: per copy, whether its masks are checked here (not advice).
        cycle: the ``recv``/``send`` cycle (:class:`~marlhub.vector.ready.ReadyCopies`).
        face: ``"dicts"`` or ``"arrays"``, the face that holds the episode (one per episode);
            ``faces_mix``: both read one state (a batched simulator's).
    """

    def __init__(self, env_name: str, num_envs: int, autoreset_mode: str,
                 possible_agents: Sequence[Sequence[AgentID]],
                 action_space_of: Sequence[Callable[[AgentID], gym.Space]],
                 masks_binding: Optional[Sequence[bool]] = None,
                 cycle: Optional[ReadyCopies] = None, faces_mix: bool = False) -> None:
        self.env_name = env_name
        self.num_envs = num_envs
        self.mode = autoreset_mode
        self.possible_agents = [list(p) for p in possible_agents]
        self.checkers = [ActionChecker(space_of) for space_of in action_space_of]
        self.uniform = _one_discrete_space(self.possible_agents, action_space_of)
        self.masks_binding = [True] * num_envs if masks_binding is None else list(masks_binding)
        self.obs: list[Mapping[Any, Any]] = [{} for _ in range(num_envs)]
        self.infos: list[Mapping[Any, Any]] = [{} for _ in range(num_envs)]
        self.actors: list[list[AgentID]] = [[] for _ in range(num_envs)]
        self.ended = [False] * num_envs
        self.final_flags: list[tuple[bool, bool]] = [(False, False)] * num_envs
        self.outcomes: list[int] = [RESTARTED] * num_envs
        self.started = False
        self.broken: Optional[str] = None
        self.cycle = cycle if cycle is not None else ReadyCopies(env_name, num_envs)
        self.face: Optional[str] = None
        self.faces_mix = faces_mix

    # -- one face per episode -----------------------------------------------------------

    def claim_face(self, face: str) -> None:
        """``face`` holds the episode from now on (a reset of every copy in it)."""
        self.face = face

    def check_face(self, face: str, call: str, cycle: bool = False) -> None:
        """Raise :class:`VectorEnvError` unless ``call`` of ``face`` (``cycle``: of the
        ``recv``/``send`` cycle) may go on in the episode under way."""
        if face == self.face or (face == DICTS and self.face is None) \
                or (self.faces_mix and not cycle):
            return
        if face == DICTS:
            twin = call.replace("(", "_arrays(")
            restart = "async_reset()" if call in ("send()", "recv()") else "reset()"
            raise VectorEnvError(self.env_name, f"{call} was called, but the array face holds "
                                 "the episode (one face per episode)",
                                 f"Call {twin}, or {restart} to start an episode of dicts.")
        start = "async_reset_arrays()" if call.startswith(("send", "recv", "async")) \
            else "reset_arrays()"
        raise VectorEnvError(self.env_name, f"{call} was called, but the array face holds no "
                             "episode (one face per episode)", f"Call {start} first.")

    # -- the recv()/send() cycle ----------------------------------------------------------

    def start_reset(self, options: Optional[Mapping[str, Any]], face: str
                    ) -> tuple[Optional[np.ndarray], Optional[dict[str, Any]], list[int]]:
        """Check that ``async_reset`` of ``face`` may reset the copies of ``options``; return
        the mask, the copies' options and rows (the caller claims ``face`` for every copy)."""
        mask, rest = reset_mask_of(self.env_name, options, self.num_envs)
        rows = rows_of(mask, self.num_envs)
        call = "async_reset()" if face == DICTS else "async_reset_arrays()"
        if mask is None:
            self.cycle.check_idle(call)
        else:
            self.check_face(face, call, cycle=True)
            self.cycle.check_resettable(rows)
        return mask, rest, rows

    def check_send(self, actions: Any, copy_ids: Any) -> tuple[list[int], list[Any]]:
        """The copies ``send(actions, copy_ids)`` steps and their checked action dicts."""
        rows = self.cycle.check_send(copy_ids, count_of(self.env_name, actions))
        return rows, self.check_rows(actions, rows)


    def arrived(self, rows: Sequence[int], results: Sequence[Any],
                ended: Optional[Sequence[bool]] = None) -> None:
        """The results of the copies ``rows`` wait for ``recv``; under ``disabled`` a copy whose
        episode ended (``ended[k]``, or as recorded) is parked when handed out."""
        park = self.mode == DISABLED
        arrive = self.cycle.arrive
        for k, i in enumerate(rows):
            arrive(i, results[k], park and (self.ended[i] if ended is None else ended[k]))

    def arrive_step(self, rows: Sequence[int], results: Sequence[tuple[Any, ...]],
                    outcomes: Sequence[int]) -> None:
        """Record the copies' step results (:meth:`record_step`) and hand them to ``recv``."""
        self.record_step(results, outcomes, rows)
        self.arrived(rows, results)

    def arrive_reset(self, rows: Sequence[int], obs: Sequence[Any], infos: Sequence[Any]) -> None:
        """Record a reset of the copies ``rows`` and hand it to ``recv`` as a step's results."""
        self.record_reset(spread(rows, obs, self.num_envs), spread(rows, infos, self.num_envs),
                          np.isin(np.arange(self.num_envs), rows))
        self.arrived(rows, [(ob, {}, {ALL: False}, {ALL: False}, info)
                            for ob, info in zip(obs, infos)])

    # -- recording ----------------------------------------------------------------

    def record_reset(self, obs: Sequence[Mapping[Any, Any]], infos: Sequence[Mapping[Any, Any]],
                     mask: Any = None) -> None:
        """Record a reset of every copy (or of the copies ``mask`` selects)."""
        for i in range(self.num_envs):
            if mask is None or mask[i]:
                self.obs[i] = obs[i]
                self.infos[i] = infos[i] if isinstance(infos[i], Mapping) else {}
                self.actors[i] = list(obs[i])
                self.ended[i] = False
                self.outcomes[i] = RESTARTED
        self.started = True
        self.broken = None

    def record_step(self, results: Iterable[tuple[Any, ...]], outcomes: Sequence[int],
                    rows: Optional[Sequence[int]] = None) -> None:
        """Record each copy's 5-tuple and its source's ``outcome`` (never worked out again
        here); ``rows``: the copies of ``results`` when not all in order."""
        ended, actors, outcomes_of = self.ended, self.actors, self.outcomes
        for k, (obs, _, terminateds, truncateds, infos) in enumerate(results):
            i = k if rows is None else rows[k]
            self.obs[i] = obs
            self.infos[i] = infos if type(infos) is dict or isinstance(infos, Mapping) else {}
            outcome = outcomes_of[i] = outcomes[k]
            if outcome == STEPPED:
                if len(terminateds) == 1 and len(truncateds) == 1:
                    actors[i] = list(obs)  # the done dicts hold only __all__: nobody is done
                else:
                    done = done_agents(terminateds, truncateds)
                    actors[i] = [a for a in obs if a not in done] if done else list(obs)
                continue
            ended[i] = outcome in (ENDED, IDLE)
            actors[i] = [] if ended[i] else list(obs)
            if outcome in (ENDED, ENDED_AND_RESET):
                self.final_flags[i] = (flag(terminateds, ALL), flag(truncateds, ALL))

    def kept_by_masked_reset(self, i: int) -> tuple[dict[Any, Any], dict[Any, Any]]:
        """What a copy a ``reset_mask`` leaves alone returns: its actors' obs and infos."""
        actors = self.actors[i]
        obs, infos = self.obs[i], self.infos[i]
        return ({a: obs[a] for a in actors if a in obs},
                {a: infos[a] for a in actors if a in infos})

    # -- checking -----------------------------------------------------------------

    def check_running(self) -> None:
        """Raise :class:`~marlhub.errors.ResetNeededError` before the first reset or when broken."""
        require_running(self.env_name, NOT_RESET if not self.started else self.broken)

    def check_actions(self, actions: Any) -> Sequence[Any]:
        """Check the whole action list before any copy moves; return the dicts to step the
        copies with inside :func:`~marlhub.episode.prechecked.actions_prechecked` (converted
        where the copy's own check would: a 0-d array of a Discrete action as an int).

        Raises:
            ResetNeededError: before the first ``reset``, or after a copy raised.
            ActionError: a bad list or action dict (copy and agent named).
        """
        if not self.started or self.broken is not None:
            self.check_running()
        if type(actions) is not list or len(actions) != self.num_envs:
            self._check_list(actions)
        uniform = self.uniform
        ended, all_actors, all_obs, all_infos = self.ended, self.actors, self.obs, self.infos
        values: list[Any] = []
        checked = actions
        next_step = self.mode == NEXT_STEP
        for i, action_dict in enumerate(actions):
            if ended[i]:
                if not next_step:  # next_step: reset in this call, the action dict ignored
                    self._check_ended(i, action_dict)
                continue
            # the common case (one Discrete space, the actors' order): checked at once below
            if uniform is None or type(action_dict) is not dict \
                    or list(action_dict) != all_actors[i]:
                checked = self._converted(checked, actions, i)
                continue
            obs, infos = all_obs[i], all_infos[i]
            binding = self.masks_binding[i]
            for agent, action in action_dict.items():
                observation = obs.get(agent)
                # An array holds no mask; with no info either, there is none to look for.
                if binding and not (type(observation) is np.ndarray and not infos):
                    mask = observation.get(ACTION_MASK_KEY) if type(observation) is dict \
                        else None
                    if mask is None:
                        mask = raw_action_mask(observation, infos.get(agent))
                    if mask is not None:
                        if not uniform.check(action, mask):
                            self._check_copy(i, action_dict)  # raises, saying why
                        continue
                values.append(action)
        if values and uniform is not None and not uniform.check_all(values):
            for i, action_dict in enumerate(actions):  # find the copy and agent
                if not self.ended[i]:
                    checked = self._converted(checked, actions, i)
        return checked

    def _converted(self, checked: Sequence[Any], actions: Sequence[Any], i: int) -> Sequence[Any]:
        """``checked`` with copy ``i``'s dict as its check passes it on (copied on change)."""
        passed = self._check_copy(i, actions[i])
        if passed is actions[i]:
            return checked
        checked = list(checked) if checked is actions else checked
        checked[i] = passed  # type: ignore[index]
        return checked

    def check_rows(self, actions: Sequence[Any], rows: Sequence[int]) -> list[Any]:
        """:meth:`check_actions` for the copies ``rows`` only (``actions[k]`` is ``rows[k]``'s)."""
        if not self.started or self.broken is not None:
            self.check_running()
        checked = list(actions)
        for k, i in enumerate(rows):
            if self.ended[i]:
                self._check_ended(i, actions[k])
            else:
                checked[k] = self._check_copy(i, actions[k])
        return checked

    def _check_list(self, actions: Any) -> None:
        if isinstance(actions, (str, bytes, Mapping)) or not isinstance(actions, Sequence) \
                or len(actions) != self.num_envs:
            size = (f"{len(actions)} items" if isinstance(actions, Sized)
                    and not isinstance(actions, (str, bytes, Mapping)) else
                    f"a {type(actions).__name__}")
            raise ActionError(
                None, _short(actions),
                expected=f"a list of {self.num_envs} action dicts, one per copy (got {size})",
                fix=f"Pass one dict per copy of {self.env_name}, in copy order; a copy with "
                "nobody to act takes {}.")

    def _check_copy(self, i: int, action_dict: Any) -> Any:
        actors, obs, infos = self.actors[i], self.obs[i], self.infos[i]
        masks = action_masks(actors, obs, infos) if self.masks_binding[i] else None
        if masks is not None:  # as arrays (Gymnasium's tuple masks of MultiDiscrete made flat)
            masks = {a: find_action_mask(obs.get(a), infos.get(a)) for a in actors}
        try:
            return self.checkers[i].check_dict(
                f"copy {i} of {self.env_name}", action_dict, actors=actors,
                possible_agents=self.possible_agents[i], masks=masks)
        except ActionError as exc:
            raise ActionError(exc.agent_id, exc.actual, expected=exc.expected, fix=exc.fix,
                              copy_index=i) from None

    def _check_ended(self, i: int, action_dict: Any) -> None:
        if self.mode == NEXT_STEP or action_dict is None:
            return  # reset in this call: the action dict is ignored
        if isinstance(action_dict, Mapping) and not action_dict:
            return
        raise ActionError(
            None, action_dict, copy_index=i,
            expected="{} (its episode ended and autoreset_mode is 'disabled')",
            fix=f"Send {{}} for copy {i} until you reset it with "
            "reset(options={'reset_mask': mask}), mask[i] True for the copies to restart.")


def _one_discrete_space(possible_agents: Sequence[Sequence[AgentID]],
                        action_space_of: Sequence[Callable[[AgentID], gym.Space]]
                        ) -> Optional[DiscreteCheck]:
    """The check of the one Discrete space every agent of every copy acts in, or None."""
    found = set()
    for agents, space_of in zip(possible_agents, action_space_of):
        for agent in agents:
            space = space_of(agent)
            if type(space) is not gym.spaces.Discrete:
                return None
            found.add((int(space.start), int(space.n)))
    if len(found) != 1:
        return None
    start, n = found.pop()
    return DiscreteCheck(start, n)


def _short(value: Any, limit: int = 120) -> Any:
    text = repr(value)
    return value if len(text) <= limit else text[: limit - 3] + "..."
