"""The ``openspiel/`` family: every OpenSpiel game, by OpenSpiel's own game string.

``openspiel/kuhn_poker`` is ``from_openspiel(pyspiel.load_game("kuhn_poker"))``;
parameters use OpenSpiel's syntax, nested games included:
``openspiel/kuhn_poker(players=3)``,
``openspiel/turn_based_simultaneous_game(game=goofspiel(num_cards=4))``.
Config keys that are parameters of the game become game parameters (over those
of the string); the keys ``observation``, ``agent_ids``, ``action_mask``,
``max_steps``, ``illegal_action`` and ``illegal_reward`` are options of
:func:`~marlhub.adapters.openspiel.from_openspiel`; anything else is refused
with the accepted keys. :meth:`OpenSpielFamily.ids` lists every registered
game (``pyspiel.registered_names()``, Python games included) with its dynamics
and player count, or what it needs to be played.

pyspiel is imported only when an id of the family is listed or made.

Example:
    >>> family = OpenSpielFamily()
    >>> env = family.make("kuhn_poker", EnvContext({"players": 3}))
    >>> env.possible_agents, str(env.game)
    (['player_0', 'player_1', 'player_2'], 'kuhn_poker(players=3)')
    >>> dict(family.ids())["openspiel/leduc_poker"]
    'Leduc Poker: sequential, 2 players, chance, imperfect information'
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional

from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import (
    ENV_COPYABLE,
    ENV_RAISED,
    EQUIV_TRAJECTORY,
    SEED_REPRODUCIBLE,
)
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["ADAPTER_OPTIONS", "PARAMETERISED_EXAMPLES", "OpenSpielFamily"]

#: Config keys that configure the adapter rather than the game.
ADAPTER_OPTIONS = (
    "observation", "agent_ids", "action_mask", "max_steps", "illegal_action", "illegal_reward",
)


#: A game string that builds each registered game that has no usable defaults.
PARAMETERISED_EXAMPLES = {
    "add_noise": "add_noise(epsilon=1.0,seed=1,game=kuhn_poker())",
    "cached_tree": "cached_tree(game=kuhn_poker())",
    "misere": "misere(game=kuhn_poker())",
    "normal_form_extensive_game": "normal_form_extensive_game(game=kuhn_poker())",
    "repeated_game": "repeated_game(stage_game=matrix_rps(),num_repetitions=3)",
    "repeated_poker": "repeated_poker(max_num_hands=2,reset_stacks=True,"
                      "universal_poker_game_string=universal_poker())",
    "restricted_nash_response": "restricted_nash_response(game=kuhn_poker())",
    "start_at": "start_at(game=kuhn_poker(),history=0;1)",
    "turn_based_simultaneous_game": "turn_based_simultaneous_game(game=goofspiel(num_cards=4))",
    "zerosum": "zerosum(game=kuhn_poker())",
}


#: Rules that OpenSpiel games themselves break, by game name: the conformance
#: suite reports their findings as warnings naming the upstream fault.
KNOWN_FAULTS: dict[str, dict[str, str]] = {
    "chat_game": {
        rule: "open_spiel 2.0.2's chat_game offers legal actions beyond the "
        "num_distinct_actions() it declares; pyspiel's own legal_actions_mask() writes out of "
        "bounds on it, so the adapter refuses it"
        for rule in (ENV_RAISED, EQUIV_TRAJECTORY)  # the lockstep cannot start it either
    },
    "bridge_uncontested_bidding": {
        ENV_COPYABLE: "open_spiel 2.0.2 pickles a bridge_uncontested_bidding state as its "
        "history, and the unpickled state scores the same deal and bids otherwise (returns "
        "-185 for -170; clone() keeps them): pickle.loads(pickle.dumps(state)).returns() "
        "differs from state.returns() in 18 of 20 random episodes",
    },
    "python_dynamic_routing": {
        SEED_REPRODUCIBLE: "open_spiel 2.0.2's python_dynamic_routing observer keeps values from "
        "earlier calls, so one state can give different observations",
    },
    # What pyspiel.random_sim_test says of the native game itself (--targets openspiel gives
    # the native game back).
    "python_ant_foraging": {
        "target.openspiel": "open_spiel 2.0.2's python_ant_foraging fails pyspiel's own "
        "random_sim_test: the rewards of an episode do not add up to its returns",
    },
    "python_hangman": {
        "target.openspiel": "open_spiel 2.0.2's python_hangman lacks _action_to_string, which "
        "pyspiel's own random_sim_test calls",
    },
}


class OpenSpielFamily:
    """Resolve ``openspiel/<game string>`` through ``pyspiel.load_game`` and ``from_openspiel``."""

    name = "openspiel"
    description = (
        "OpenSpiel games by game string (openspiel/kuhn_poker(players=3)); config: game "
        "parameters, plus adapter options (observation, agent_ids, max_steps, ...)"
    )

    def __init__(self) -> None:
        self._listing: Optional[list[tuple[str, str]]] = None

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the game named in ``rest`` is known to break."""
        return dict(KNOWN_FAULTS.get(rest.split("(", 1)[0].strip(), {}))

    # -- the catalogue -------------------------------------------------------------

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every registered OpenSpiel game.

        Games that load with their default parameters are described by dynamics,
        player count, chance and information; the others say what they need.

        Raises:
            MissingDependencyError: open_spiel is not installed.
        """
        if self._listing is None:
            from marlhub.adapters.openspiel.games import registered_game_types

            types = registered_game_types()
            self._listing = [(f"{self.name}/{n}", _describe(n, types[n])) for n in sorted(types)]
        return list(self._listing)

    # -- making envs ---------------------------------------------------------------

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return ``from_openspiel(rest, params=..., **options)`` split from ``config``.

        Raises:
            UnknownEnvError: OpenSpiel has no such game (with close matches).
            ConfigError: a malformed game string, a key that is neither a parameter
                of the game nor an adapter option, a mistyped value, or a game
                that cannot be played (mean-field, action structs only).
            MissingDependencyError: open_spiel is not installed.
        """
        from marlhub.adapters.openspiel import from_openspiel

        game, params, options = self._prepare(rest, config)
        return from_openspiel(game, params=params, **options)

    def _prepare(self, rest: str, config: Optional[EnvContext]) -> tuple[str, dict, dict]:
        from marlhub.adapters.openspiel.games import (
            _spec_text,
            parse_game_string,
            registered_game_types,
        )

        full = f"{self.name}/{rest}"
        name, _ = parse_game_string(rest)
        types = registered_game_types()
        if name not in types:
            known = [f"{self.name}/{n}" for n in types]
            raise UnknownEnvError(
                full, closest(full, known),
                detail=f"OpenSpiel has no game named {name!r} (see pyspiel.registered_names()).",
            )
        spec = dict(types[name].parameter_specification)
        params: dict[str, Any] = {}
        options: dict[str, Any] = {}
        unknown = []
        for key, value in (config or {}).items():
            if key in spec:
                params[key] = value
            elif key in ADAPTER_OPTIONS:
                options[key] = value
            else:
                unknown.append(key)
        if unknown:
            raise ConfigError(
                full,
                f"unknown key{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(k) for k in unknown)}: neither a parameter of {name} nor an "
                "adapter option",
                unknown=unknown,
                accepted=[*spec, *ADAPTER_OPTIONS],
                fix=f"{name} accepts the parameters {_spec_text(spec)}; the adapter takes "
                f"{', '.join(ADAPTER_OPTIONS)}.",
            )
        return rest, params, options

    # -- lockstep ------------------------------------------------------------------

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int, seed: int,
                 max_steps: int) -> list[Finding]:
        """Compare the adapted game with a native ``pyspiel.State`` given the same actions.

        Both get the same player actions and the same chance outcomes; see
        :func:`marlhub.adapters.openspiel.compare_with_native`.

        Returns:
            ``equiv.trajectory`` / ``equiv.returns`` findings; empty when they agree.
        """
        from marlhub.adapters.openspiel import compare_with_native

        env = self.make(rest, EnvContext(dict(config or {})))
        return compare_with_native(env, episodes=episodes, seed=seed, max_steps=max_steps)

    def __repr__(self) -> str:
        return "OpenSpielFamily()"


def _describe(name: str, game_type: Any) -> str:
    """One line for ``marlhub list``: the game's shape, or why it cannot be made as is."""
    from marlhub.adapters.openspiel.games import (
        describe_game,
        import_pyspiel,
        is_mean_field,
        native_stderr_captured,
    )

    pyspiel = import_pyspiel()
    title = str(game_type.long_name).rstrip(".")
    if is_mean_field(game_type):
        return f"{title}: mean-field game, not playable agent by agent"
    try:
        with native_stderr_captured():  # the C++ side prints failures and warnings
            game = pyspiel.load_game(name)
    except Exception as exc:  # SpielError mostly
        missing = re.findall(r"Missing parameter (\w+)", str(exc))
        example = PARAMETERISED_EXAMPLES.get(name)
        if missing:
            hint = f", e.g. openspiel/{example}" if example else ""
            return f"{title}: needs parameter {', '.join(missing)}{hint}"
        params = ", ".join(sorted(game_type.parameter_specification)) or "none"
        return (f"{title}: does not load with default parameters "
                f"({type(exc).__name__}: {exc}); parameters: {params}")
    if game.num_distinct_actions() < 1:
        return f"{title}: action structs only, no integer actions (not adaptable)"
    return describe_game(game)
