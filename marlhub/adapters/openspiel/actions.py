"""Options and action checks of the OpenSpiel adapter (:class:`OpenSpielEnv`'s mixin).

Every malformed action dict is an :class:`~marlhub.errors.ActionError` that
leaves the state as it was; a legal-looking but masked-out action follows the
env's ``illegal_action`` mode.

Example:
    >>> make_ids(None, "names", 2), make_ids(None, "int", 2)
    (['player_0', 'player_1'], [0, 1])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from marlhub.adapters.openspiel.games import game_string
from marlhub.core import COMMON, MultiAgentDict, StepResult
from marlhub.episode.actions import check_action, check_keys
from marlhub.episode.status import EPISODE_OVER, NOT_RESET
from marlhub.errors import ActionError, ConfigError, EnvContractError, ResetNeededError

__all__ = ["ILLEGAL_ACTION_MODES", "ActionChecks", "check_options", "make_ids"]

#: Values of the ``illegal_action`` option.
ILLEGAL_ACTION_MODES = ("raise", "substitute", "terminate")


def check_options(game: Any, action_mask: str, max_steps: Any, illegal_action: str) -> None:
    """Raise :class:`~marlhub.errors.ConfigError` for a bad adapter option."""
    label = game_string(game)
    if action_mask not in ("obs", "info"):
        raise ConfigError(label, f"action_mask={action_mask!r} is not 'obs' or 'info'",
                          fix="Use action_mask='obs' (inside a Dict observation) or 'info'.")
    if max_steps is not None and (
        isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer))
        or max_steps < 1
    ):
        raise ConfigError(label, f"max_steps={max_steps!r} is not a positive integer",
                          fix="Pass a positive int, or None to play every game to its end.")
    if illegal_action not in ILLEGAL_ACTION_MODES:
        raise ConfigError(
            label, f"illegal_action={illegal_action!r} is not a known mode",
            fix=f"Use one of {', '.join(repr(m) for m in ILLEGAL_ACTION_MODES)}.",
        )


def make_ids(game: Any, agent_ids: Union[str, Sequence[Any]], n: int) -> list[Any]:
    """Return the agent id of each of the ``n`` players (see ``OpenSpielEnv``'s ``agent_ids``)."""
    if agent_ids == "int":
        return list(range(n))
    if agent_ids == "names":
        spec = getattr(game, "spec", None)  # a game made by to_openspiel
        original = list(getattr(spec, "agents", ()))
        if len(original) == n and len(set(map(repr, original))) == n:
            return original
        return [f"player_{p}" for p in range(n)]
    if isinstance(agent_ids, str) or not isinstance(agent_ids, Sequence):
        raise ConfigError(
            game_string(game), f"agent_ids={agent_ids!r} is not 'int', 'names' or a sequence",
            fix=f"Pass 'int', 'names' or a list of {n} distinct hashable ids.",
        )
    ids = list(agent_ids)
    if len(ids) != n or len(set(ids)) != n:
        raise ConfigError(
            game_string(game),
            f"agent_ids has {len(ids)} ids ({len(set(ids))} distinct) for {n} players",
            fix=f"Pass exactly {n} distinct ids, one per player in player order.",
        )
    return ids


class ActionChecks:
    """Legal-action masks, validation of action dicts and the illegal-action modes.

    The mixin of :class:`OpenSpielEnv`; relies on its ``_ids``, ``_player_of``,
    ``_actors``, ``_masks``, ``_over``, ``_simultaneous_node``, ``_zero_mask``, ``_state``,
    ``num_actions``, ``num_players``, ``illegal_action``, ``illegal_reward``,
    ``np_random``, ``actors``, ``_observe_all`` and ``_after_actions``.
    """

    _ids: list[Any]
    _player_of: dict[Any, int]
    _actors: tuple[int, ...]
    _masks: dict[int, np.ndarray]
    _zero_mask: np.ndarray
    _state: Any
    _steps: int
    _over: bool
    _simultaneous_node: bool
    num_actions: int
    num_players: int
    illegal_action: str
    illegal_reward: float
    np_random: np.random.Generator

    _action_space: Any
    game: Any

    if TYPE_CHECKING:  # OpenSpielEnv defines it as a read-only property

        @property
        def actors(self) -> list[Any]: ...

    def _observe_all(self, infos: MultiAgentDict) -> MultiAgentDict:
        raise NotImplementedError

    def _after_actions(self, offenders: Optional[dict[int, int]]) -> StepResult:
        raise NotImplementedError

    def _flags(self, value: bool) -> dict[Any, bool]:
        raise NotImplementedError

    # -- legal-action masks: int8 0/1 arrays over Discrete(num_actions) --------------

    def _native_mask(self, player: int) -> Any:
        """The legal-action mask of ``player`` in a C++ game (None when it has none)."""
        legal = self._state.legal_actions_mask(player)  # a list of 0s and 1s
        return np.frombuffer(bytearray(legal), np.int8) if 1 in legal else None

    def _checked_mask(self, player: int) -> Any:
        """The legal-action mask of ``player``, checked against the action space."""
        # Not state.legal_actions_mask(): it writes out of bounds in games whose legal
        # actions exceed num_distinct_actions(), which a Python game can do (chat_game);
        # a broken game must raise, not crash.
        legal = self._state.legal_actions(player)
        if not legal:
            return None
        if legal[-1] >= self.num_actions or legal[0] < 0:
            raise EnvContractError(
                game_string(self.game), "space.defined",
                f"player {player} has legal actions {legal[:10]} but the game declares "
                f"num_distinct_actions()={self.num_actions}, so they are outside the action "
                f"space Discrete({self.num_actions}); the game's definition is inconsistent",
            )
        mask = self._zero_mask.copy()
        mask[legal] = 1
        return mask

    # -- actions -------------------------------------------------------------------

    def _step_checked(self, action_dict: MultiAgentDict) -> StepResult:
        """:meth:`step` for every other case: checks the dict, then applies it."""
        if self._over:
            raise ResetNeededError(type(self).__name__,
                                   NOT_RESET if self._state is None else EPISODE_OVER)
        actors = self._actors
        state = self._state
        if len(actors) == 1 and type(action_dict) is dict and len(action_dict) == 1:
            # The fast path: one actor, one action.
            player = actors[0]
            aid = self._ids[player]
            if aid not in action_dict:
                self._check_keys(action_dict)
            action = action_dict[aid]
            if type(action) is not int or not 0 <= action < self.num_actions:
                action = self._as_action(aid, action)
            if self._masks[player][action]:
                if self._simultaneous_node:
                    state.apply_actions([action if p == player else 0
                                         for p in range(self.num_players)])
                else:
                    state.apply_action(action)
                return self._after_actions(None)
            chosen, offenders = self._handle_illegal({player: action})
        else:
            if not isinstance(action_dict, Mapping) or len(action_dict) != len(actors):
                self._check_keys(action_dict)  # raises: not exactly the actors' keys
            chosen = self._as_actions(action_dict)  # raises for a missing actor too
            masks = self._masks
            illegal = {p: a for p, a in chosen.items() if not masks[p][a]}
            offenders = None
            if illegal:
                chosen, offenders = self._handle_illegal(chosen, illegal)
        if chosen is None:  # terminate on an illegal action
            return self._terminate_illegal(offenders or {})
        if not self._simultaneous_node:
            state.apply_action(chosen[actors[0]])
        else:
            state.apply_actions([chosen.get(p, 0) for p in range(self.num_players)])
        return self._after_actions(offenders)

    def _check_keys(self, action_dict: Any) -> None:
        check_keys(game_string(self.game), action_dict, actors=self.actors,
                   possible_agents=self._ids,
                   finished=())  # every player's part ends with the game

    def _as_action(self, aid: Any, action: Any) -> int:
        action = check_action(aid, self._action_space, action)
        return int(action)

    def _as_actions(self, action_dict: Any) -> dict[int, int]:
        """Each actor's action as a plain int in the action space (as many keys as actors)."""
        n = self.num_actions
        chosen = {}
        for p in self._actors:
            aid = self._ids[p]
            if aid not in action_dict:
                self._check_keys(action_dict)  # raises: an actor is missing
            action = action_dict[aid]
            # A plain int in range is what check_action hands back: skip its look-ups.
            if type(action) is not int or not 0 <= action < n:
                action = self._as_action(aid, action)
            chosen[p] = action
        return chosen

    def _legal_text(self, player: int, limit: int = 20) -> str:
        legal = [int(a) for a in np.flatnonzero(self._masks[player])]
        shown = []
        for a in legal[:limit]:
            try:
                shown.append(f"{a} ({self._state.action_to_string(player, a)})")
            except Exception:  # a game without action strings
                shown.append(str(a))
        more = f", ... ({len(legal) - limit} more)" if len(legal) > limit else ""
        return "[" + ", ".join(shown) + more + "]"

    def _handle_illegal(
        self, chosen: dict[int, int], illegal: Optional[dict[int, int]] = None
    ) -> tuple[Optional[dict[int, int]], dict[int, int]]:
        illegal = chosen if illegal is None else illegal
        if self.illegal_action == "raise":
            player, action = next(iter(illegal.items()))
            raise ActionError(
                self._ids[player], action,
                expected=f"a legal action; the legal ones are {self._legal_text(player)}",
                fix="Choose an action whose entry in the action mask is 1; the state was not "
                "changed.",
            )
        if self.illegal_action == "terminate":
            return None, dict(illegal)
        chosen = dict(chosen)
        for p in illegal:
            legal = np.flatnonzero(self._masks[p])
            chosen[p] = int(legal[self.np_random.integers(legal.size)])
        return chosen, dict(illegal)

    def _terminate_illegal(self, offenders: dict[int, int]) -> StepResult:
        self._steps += 1
        rewards = {aid: 0.0 for aid in self._ids}
        for p in offenders:
            rewards[self._ids[p]] = self.illegal_reward
        infos: MultiAgentDict = {
            COMMON: {"illegal_actions": {self._ids[p]: a for p, a in offenders.items()}}
        }
        obs = self._observe_all(infos)
        return obs, rewards, self._flags(True), self._flags(False), infos
