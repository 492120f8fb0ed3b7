"""Loading OpenSpiel games by name, game string or object, with parameters checked first.

OpenSpiel's own errors for a mistyped name or parameter are long (every game
name, one a line) and are printed to the process's stderr by the C++ side
before the Python exception is raised. Here names and parameters are checked
against ``pyspiel.registered_games()`` first, so the user gets one clear
marlhub error, and the C++ stderr of a failing load is swallowed.

Example:
    >>> game = load_game("kuhn_poker(players=3)")
    >>> game.num_players(), game_string(game)
    (3, 'kuhn_poker(players=3)')
    >>> load_game("kuhn_poker", {"player": 3})
    Traceback (most recent call last):
    ...
    marlhub.errors.ConfigError: Bad config for 'kuhn_poker': unknown parameter 'player' ...
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Optional

from marlhub.backends import import_backend
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = [
    "check_parameters",
    "describe_game",
    "game_and_start",
    "game_string",
    "import_pyspiel",
    "native_stderr_captured",
    "is_mean_field",
    "load_game",
    "parse_game_string",
    "registered_game_types",
    "seed_parameter",
]

_PYTHON_GAMES_IMPORTED = False


def import_pyspiel(feature: str = "The OpenSpiel adapter") -> ModuleType:
    """Return the ``pyspiel`` module, or raise :class:`MissingDependencyError` naming the extra."""
    return import_backend("pyspiel", package="open_spiel", provides=("pyspiel",),
                          extra="openspiel", feature=feature)


def _import_python_games() -> None:
    """Register OpenSpiel's games written in Python (``python_*``), once."""
    global _PYTHON_GAMES_IMPORTED
    if _PYTHON_GAMES_IMPORTED:
        return
    _PYTHON_GAMES_IMPORTED = True
    with contextlib.suppress(Exception):  # an optional dependency of one of them may be missing
        import open_spiel.python.games  # noqa: F401


def registered_game_types() -> dict[str, Any]:
    """Return ``{short_name: pyspiel.GameType}`` for every registered game, Python ones included."""
    pyspiel = import_pyspiel()
    _import_python_games()
    return {t.short_name: t for t in pyspiel.registered_games()}


@contextlib.contextmanager
def native_stderr_captured() -> Iterator[list[bytes]]:
    """Redirect file descriptor 2 into a buffer for the duration (the C++ side prints there).

    The captured bytes are put in the yielded list. Callers drop them when they
    raise a translated error and pass them on when the call succeeded.
    """
    out: list[bytes] = []
    fd = 2  # the C++ side writes to the process's fd 2, whatever sys.stderr is
    try:
        os.fstat(fd)
    except OSError:  # no fd 2 at all
        yield out
        return
    with tempfile.TemporaryFile() as sink:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        saved = os.dup(fd)
        os.dup2(sink.fileno(), fd)
        try:
            yield out
        finally:
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            out.append(sink.read())


def parse_game_string(text: str) -> tuple[str, dict[str, Any]]:
    """Split an OpenSpiel game string into ``(name, parameters)``.

    Example:
        >>> parse_game_string("turn_based_simultaneous_game(game=goofspiel(num_cards=4))")
        ('turn_based_simultaneous_game', {'game': {'name': 'goofspiel', 'num_cards': 4}})
    """
    pyspiel = import_pyspiel()
    text = text.strip()
    if "(" not in text:
        return text, {}
    try:
        with native_stderr_captured():
            parsed = dict(pyspiel.game_parameters_from_string(text))
    except pyspiel.SpielError as exc:
        raise ConfigError(
            text,
            f"it is not a valid OpenSpiel game string ({exc})",
            fix="Write it as name(param=value,...), e.g. kuhn_poker(players=3) or "
            "turn_based_simultaneous_game(game=goofspiel(num_cards=4)).",
        ) from None
    name = str(parsed.pop("name", ""))
    return name, parsed


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "game"


def _spec_text(spec: Mapping[str, Any]) -> str:
    if not spec:
        return "no parameters"
    parts = []
    for key in sorted(spec):
        default = spec[key]
        shown = "<a game>" if isinstance(default, dict) else repr(default)
        parts.append(f"{key}={shown} ({_type_name(default)})")
    return ", ".join(parts)


def _coerce(name: str, key: str, default: Any, value: Any) -> Any:
    """Return ``value`` converted to the type of the parameter's default, or raise ConfigError."""
    kind = _type_name(default)
    if kind == "game":
        try:
            return _nested_game(value)
        except (ConfigError, UnknownEnvError):  # the nested game's own, clearer error
            raise
        except ValueError:
            pass
    try:
        if kind == "bool":
            if isinstance(value, (bool,)) or (isinstance(value, int) and value in (0, 1)):
                return bool(value)
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
        elif kind == "int":
            if isinstance(value, int) and not isinstance(value, bool):
                return int(value)
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str):
                return int(value)
        elif kind == "float":
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, str):
                return float(value)
        elif isinstance(value, str):
            return value
    except ValueError:
        pass
    raise ConfigError(
        name,
        f"parameter {key!r} must be {'a game (string or dict)' if kind == 'game' else kind}, "
        f"got {value!r} ({type(value).__name__})",
        fix=f"{name} accepts: {_spec_text(registered_game_types()[name].parameter_specification)}.",
    )


def _nested_game(value: Any) -> dict[str, Any]:
    """A game-valued parameter as the ``{"name": ..., **params}`` dict pyspiel takes."""
    if isinstance(value, str):
        inner, params = parse_game_string(value)
    elif isinstance(value, Mapping) and "name" in value:
        params = {k: v for k, v in value.items() if k != "name"}
        inner = str(value["name"])
    elif hasattr(value, "get_type") and hasattr(value, "get_parameters"):  # a pyspiel.Game
        inner, params = value.get_type().short_name, dict(value.get_parameters())
    else:
        raise ValueError(value)
    return {"name": inner, **check_parameters(inner, params)}


def check_parameters(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Check a game name and its parameters against OpenSpiel's registry; return them coerced.

    Values are converted to the type of each parameter's default where that is
    lossless (``"3"`` or ``3.0`` for an int, ``1`` for a float, a game string for
    a game), and nested games are checked too.

    Raises:
        UnknownEnvError: ``name`` is not a registered game (with close matches).
        ConfigError: a parameter that the game does not accept, or of the wrong type.

    Example:
        >>> check_parameters("goofspiel", {"num_cards": "4"})
        {'num_cards': 4}
    """
    types = registered_game_types()
    if name not in types:
        raise UnknownEnvError(
            name,
            closest(name, list(types)),
            detail="OpenSpiel has no game of that name (see pyspiel.registered_names()).",
        )
    spec = dict(types[name].parameter_specification)
    unknown = [k for k in params if k not in spec]
    if unknown:
        raise ConfigError(
            name,
            f"unknown parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)} for OpenSpiel game {name!r}",
            unknown=unknown,
            accepted=list(spec),
            fix=f"{name} accepts: {_spec_text(spec)}.",
        )
    return {key: _coerce(name, key, spec[key], value) for key, value in params.items()}


def load_game(game: Any, params: Optional[Mapping[str, Any]] = None) -> Any:
    """Return a ``pyspiel.Game`` from a game object, a name or a game string, plus parameters.

    Args:
        game: a ``pyspiel.Game`` (returned as is when ``params`` is empty), a
            short name (``"kuhn_poker"``) or a game string (``"kuhn_poker(players=3)"``).
        params: game parameters; they override those in the string.

    Raises:
        UnknownEnvError: no game of that name.
        ConfigError: unknown or mistyped parameters, missing required ones, or a
            game OpenSpiel refuses to build with them.
    """
    pyspiel = import_pyspiel()
    if isinstance(game, pyspiel.Game):
        if not params:
            return game
        name, base = game.get_type().short_name, dict(game.get_parameters())
    elif isinstance(game, str):
        name, base = parse_game_string(game)
    else:
        raise TypeError(
            f"Expected an OpenSpiel game, game name or game string, got {type(game).__name__}."
        )
    merged = check_parameters(name, {**base, **(params or {})})
    try:
        with native_stderr_captured() as captured:
            loaded = pyspiel.load_game(name, merged)
    except Exception as exc:  # SpielError mostly; IndexError or RuntimeError from some games
        shown = ", ".join(f"{k}={v!r}" for k, v in merged.items())
        label = f"{name}({shown})" if merged else name
        raise ConfigError(
            label,
            f"OpenSpiel cannot build this game: {type(exc).__name__}: {exc}",
            fix=f"{name} accepts: "
            f"{_spec_text(registered_game_types()[name].parameter_specification)}; "
            "parameters without a usable default must be given, e.g. "
            "turn_based_simultaneous_game(game=goofspiel(num_cards=4)).",
        ) from None
    _pass_on(captured)
    return loaded


def _pass_on(captured: list[bytes]) -> None:
    """Write what the C++ side printed during a successful call back to stderr (its warnings)."""
    text = b"".join(captured)
    if text:
        with contextlib.suppress(Exception):
            sys.stderr.write(text.decode(errors="replace"))
            sys.stderr.flush()


def game_string(game: Any) -> str:
    """Return the string that ``pyspiel.load_game`` turns back into ``game``.

    Example:
        >>> game_string(load_game("goofspiel", {"num_cards": 4}))
        'goofspiel(num_cards=4)'
    """
    return str(game)


def is_mean_field(game_type: Any) -> bool:
    """Tell whether a ``pyspiel.GameType`` is a mean-field game (not playable agent by agent)."""
    return str(game_type.dynamics).endswith("MEAN_FIELD")


def describe_game(game: Any) -> str:
    """Return one line: dynamics, players, chance and information, e.g. for ``marlhub list``.

    Example:
        >>> describe_game(load_game("kuhn_poker"))
        'Kuhn Poker: sequential, 2 players, chance, imperfect information'
    """
    t = game.get_type()
    dynamics = str(t.dynamics).rsplit(".", 1)[-1].lower().replace("_", "-")
    chance = "deterministic" if str(t.chance_mode).endswith("DETERMINISTIC") else "chance"
    info = {"PERFECT_INFORMATION": "perfect information", "ONE_SHOT": "one-shot"}.get(
        str(t.information).rsplit(".", 1)[-1], "imperfect information"
    )
    players = game.num_players()
    return (
        f"{t.long_name}: {dynamics}, {players} player{'s' if players != 1 else ''}, "
        f"{chance}, {info}"
    )


def game_and_start(source: Any, params: Optional[Mapping[str, Any]] = None) -> tuple[Any, Any]:
    """Return ``(game, start state or None)`` for what ``OpenSpielEnv`` was given.

    Args:
        source: a game, a game name or string, or a (non-terminal) ``pyspiel.State``.
        params: game parameters, merged over those of the string (not with a state).

    Raises:
        ConfigError: parameters with a state, a terminal state, a mean-field game,
            or a game whose players act through action structs only.
    """
    pyspiel = import_pyspiel()
    start = None
    if isinstance(source, pyspiel.State):
        if params:
            raise ConfigError(
                str(source.get_game()), "params cannot be given with a start state",
                fix="Build the state from a game loaded with those parameters.",
            )
        if source.is_terminal():
            raise ConfigError(
                str(source.get_game()),
                "the start state is terminal, so there is nothing left to play",
                fix="Pass a state that is not terminal, or the game itself.",
            )
        start = source.clone()
        game = source.get_game()
    else:
        game = load_game(source, params)
    if is_mean_field(game.get_type()):
        raise ConfigError(
            game_string(game),
            "mean-field games (dynamics MEAN_FIELD) model a population through a "
            "distribution, not individual agents taking turns, so they cannot be played "
            "as a multi-agent env",
            fix="Use open_spiel.python.mfg for mean-field games.",
        )
    if game.num_distinct_actions() < 1:
        raise ConfigError(
            game_string(game),
            f"the game declares num_distinct_actions()={game.num_distinct_actions()}: its "
            "players act through action structs only, which have no Discrete action space",
            fix="Only games with integer actions can be adapted.",
        )
    return game, start


def seed_parameter(game: Any) -> Optional[str]:
    """Return the name of the seed parameter of a game that draws chance from its own RNG.

    Such games (SAMPLED_STOCHASTIC) are reloaded with it set to the seed on a
    seeded reset; None for other games.
    """
    game_type = game.get_type()
    if not str(game_type.chance_mode).endswith("SAMPLED_STOCHASTIC"):
        return None
    spec = game_type.parameter_specification
    return next((k for k in ("rng_seed", "seed") if k in spec), None)
