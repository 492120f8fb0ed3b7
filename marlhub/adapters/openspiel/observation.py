"""What an OpenSpiel player observes, read through pyspiel's observer objects.

An :class:`Observer` picks the first kind of observation the game provides, in
the order observation tensor -> information state tensor -> observation string
-> information state string (or the kind asked for). With ``"auto"``, a string
is handed out as its UTF-8 bytes in a fixed-size ``uint8`` array (zero-padded),
which every consumer (PettingZoo's ``api_test``, TorchRL, neural networks) can
take; ask for ``"string"`` to get the text itself. Tensors are read through a
``pyspiel._Observation`` whose tensor is a numpy view of the C++ buffer: one
``set_from`` and one copy per observation, no per-step list conversion.

Python games are read through the same C++ wrapper (``game.make_observer``),
which concatenates the observer's named pieces; reading the Python observer's
``tensor`` directly would miss pieces that some games rebind instead of
writing in place.

Example:
    >>> import pyspiel
    >>> game = pyspiel.load_game("kuhn_poker")
    >>> observer = Observer(game, "auto")
    >>> observer.kind, observer.space
    ('observation_tensor', Box(-inf, inf, (7,), float32))
    >>> state = game.new_initial_state()
    >>> state.apply_action(0); state.apply_action(1)
    >>> observer(state, 0)
    array([1., 0., 1., 0., 0., 1., 1.], dtype=float32)
    >>> Observer(game, "string")(state, 0)
    '011'
    >>> coin = Observer(pyspiel.load_game("coin_game"), "auto")
    >>> coin.kind, coin.space.dtype, coin.space.shape[0] >= 64
    ('observation_string', dtype('uint8'), True)
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
import numpy as np

from marlhub.adapters.openspiel.games import (
    game_string,
    import_pyspiel,
    native_stderr_captured,
)
from marlhub.errors import ConfigError, EnvContractError

__all__ = ["OBSERVATION_KINDS", "Observer", "OpenSpielText", "text_bytes"]

#: Values of the ``observation`` option.
OBSERVATION_KINDS = (
    "auto",
    "observation_tensor",
    "information_state_tensor",
    "string",
    "observation_string",
    "information_state_string",
)

_CANDIDATES = {
    "auto": ("observation_tensor", "information_state_tensor",
             "observation_string", "information_state_string"),
    "string": ("observation_string", "information_state_string"),
}

#: GameType flag that says whether a game provides each concrete kind.
_FLAG = {
    "observation_tensor": "provides_observation_tensor",
    "information_state_tensor": "provides_information_state_tensor",
    "observation_string": "provides_observation_string",
    "information_state_string": "provides_information_state_string",
}


class OpenSpielText(gym.spaces.Text):
    """A Text space that holds any string up to ``max_length`` characters.

    OpenSpiel's observation strings use any character (board glyphs, newlines,
    card suits), which gymnasium's default alphanumeric charset rejects.

    Example:
        >>> OpenSpielText().contains("x.o\\n♠A")
        True
    """

    def __init__(self, max_length: int = 1 << 20) -> None:
        super().__init__(max_length, min_length=0)

    def contains(self, x: Any) -> bool:
        """Return True for any ``str`` no longer than ``max_length``."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"OpenSpielText(max_length={self.max_length})"


def text_bytes(text: str, size: int) -> np.ndarray:
    """Return ``text`` as ``size`` UTF-8 bytes: zero-padded, cut at ``size`` if longer.

    Example:
        >>> text_bytes("ab", 4)
        array([97, 98,  0,  0], dtype=uint8)
    """
    data = np.frombuffer(text.encode("utf-8")[:size], np.uint8)
    out = np.zeros(size, np.uint8)
    out[: data.size] = data
    return out


def _longest_text(game: Any, read: Callable[[Any, int], Any], episodes: int = 3,
                  max_moves: int = 300) -> int:
    """The longest string (in bytes) ``read`` gives over a few random plays of ``game``."""
    rng = np.random.default_rng(0)
    longest = 0
    for _ in range(episodes):
        state = game.new_initial_state()
        for _ in range(max_moves):
            if not state.is_chance_node():
                for player in range(game.num_players()):
                    longest = max(longest, len(str(read(state, player)).encode("utf-8")))
            if state.is_terminal():
                break
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes())
                state.apply_action(int(rng.choice(outcomes, p=np.asarray(probs) / sum(probs))))
            elif state.is_simultaneous_node():
                state.apply_actions([int(rng.choice(state.legal_actions(p)))
                                     if state.legal_actions(p) else 0
                                     for p in range(game.num_players())])
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
    return longest


class Observer:
    """Reads one kind of observation of any player from a state, as a fresh array or a string.

    Args:
        game: the ``pyspiel.Game``.
        kind: one of :data:`OBSERVATION_KINDS`; ``"auto"`` and ``"string"`` pick
            the first kind the game provides.

    Attributes:
        kind: the concrete kind in use.
        space: its gymnasium space: a flat float32 ``Box``, a ``uint8`` ``Box`` of
            UTF-8 bytes (a string kind under ``"auto"``), or an :class:`OpenSpielText`.
        is_tensor: whether observations are arrays.
        text_size: the byte length of encoded strings (0 when strings are text).
        option: the ``kind`` that builds this same observer again.

    Raises:
        ConfigError: an unknown kind, or one the game does not provide.
    """

    space: gym.Space
    read: Callable[[Any, int], Any]

    def __init__(self, game: Any, kind: str = "auto") -> None:
        if kind not in OBSERVATION_KINDS:
            raise ConfigError(
                game_string(game),
                f"observation={kind!r} is not a kind of OpenSpiel observation",
                fix=f"Use one of {', '.join(repr(k) for k in OBSERVATION_KINDS)}.",
            )
        self.text_size = 0
        if self._pick(game, kind):
            self.option = self.kind
            if kind == "auto" and not self.is_tensor:
                self._encode_text(game)
                self.option = "auto"
            return
        raise ConfigError(
            game_string(game),
            f"observation={kind!r} is not available ({'; '.join(self._problems)})",
            fix="Pick a kind the game provides: observation='auto' takes the first of "
            "observation_tensor, information_state_tensor, observation_string, "
            "information_state_string that works.",
        )

    def _pick(self, game: Any, kind: str) -> bool:
        """Set up the first available candidate of ``kind``; False (and ``_problems``) if none."""
        self._problems: list[str] = []
        candidates = _CANDIDATES.get(kind, (kind,))
        for candidate in candidates:
            reason = self._try(game, candidate, trust_flags=True)
            if reason is None:
                return True
            self._problems.append(f"{candidate}: {reason}")
        if hasattr(game, "make_py_observer"):
            # Python games often leave the provides_* flags False but observe anyway.
            return any(self._try(game, c, trust_flags=False) is None for c in candidates)
        return False

    def _encode_text(self, game: Any) -> None:
        """Hand strings out as UTF-8 bytes, sized with room to spare over a few random plays."""
        read_text = self.read
        longest = _longest_text(game, read_text)
        size = self.text_size = max(64, 1 << int(2 * longest).bit_length())
        self.space = gym.spaces.Box(0, 255, (size,), np.uint8)

        def read_bytes(state: Any, player: int) -> np.ndarray:
            return text_bytes(str(read_text(state, player)), size)

        self.read = read_bytes

    def _try(self, game: Any, kind: str, *, trust_flags: bool) -> str | None:
        """Set up ``kind``; return None on success, else why it is not available."""
        pyspiel = import_pyspiel()
        if trust_flags and not getattr(game.get_type(), _FLAG[kind]):
            return f"the game's type says {_FLAG[kind]}=False"
        perfect_recall = kind.startswith("information_state")
        self._python: Any = None  # the game's Python observer (untyped pyspiel object)
        if hasattr(game, "make_py_observer"):  # a game written in Python
            return self._try_python(game, kind, perfect_recall)
        self.kind = kind
        self.is_tensor = kind.endswith("tensor")
        if not self.is_tensor:
            # Strings come straight from the State: some games (crossword) cannot
            # build an observer at all because they lack a tensor shape.
            self.read = getattr(pyspiel.State, kind)
            self.space = OpenSpielText()
            return None
        try:
            with native_stderr_captured():
                if perfect_recall:
                    obs_type = pyspiel.IIGObservationType(perfect_recall=True)
                    native = game.make_observer(obs_type, {})
                else:
                    native = game.make_observer({})
                if native is None:
                    return "the game has no observer for it"
                observation = pyspiel._Observation(game, native)
        except Exception as exc:  # pyspiel raises SpielError or RuntimeError here
            return f"{type(exc).__name__}: {exc}"
        if not observation.has_tensor():
            return "the game's observer has no tensor"
        self._native = observation
        self.buffer = np.frombuffer(observation, np.float32)
        if self.buffer.size == 0:
            return "the tensor is empty"
        self.space = gym.spaces.Box(-np.inf, np.inf, (self.buffer.size,), np.float32)
        set_from, buffer = observation.set_from, self.buffer

        def read_tensor(state: Any, player: int) -> np.ndarray:
            set_from(state, player)
            return buffer.copy()

        self.read = read_tensor
        return None

    def _try_python(self, game: Any, kind: str, perfect_recall: bool) -> str | None:
        """Set up ``kind`` for a Python game, reading its Python observer directly.

        Going through the C++ wrapper would copy the observer's pieces into a
        buffer sized once, without bounds checks; a Python observer whose pieces
        change size would then corrupt memory instead of raising.
        """
        pyspiel = import_pyspiel()
        try:
            observer = game.make_py_observer(
                pyspiel.IIGObservationType(perfect_recall=perfect_recall), {}
            )
        except Exception as exc:  # a Python game may raise anything for an unsupported type
            return f"{type(exc).__name__}: {exc}"
        if observer is None:
            return "the game has no observer for it"
        self.kind = kind
        self._python = observer
        self.read = self._read_python
        self.is_tensor = kind.endswith("tensor")
        if self.is_tensor:
            tensor = getattr(observer, "tensor", None)
            if tensor is None or np.size(tensor) == 0:
                return "the game's observer has no tensor"
            self.size = int(np.size(tensor))
            self.space = gym.spaces.Box(-np.inf, np.inf, (self.size,), np.float32)
        else:
            self.space = OpenSpielText()
        return None

    def __call__(self, state: Any, player: int) -> Any:
        """Return ``player``'s observation of ``state``: a new float32 array or a string."""
        return self.read(state, player)

    def _read_python(self, state: Any, player: int) -> Any:
        observer = self._python
        if not self.is_tensor:
            text = observer.string_from(state, player)
            return "" if text is None else str(text)
        observer.set_from(state, player)
        pieces = list(getattr(observer, "dict", {}).values())
        # The pieces in order are the tensor (what the C++ side writes); some games
        # rebind a piece instead of writing into the tensor.
        if pieces:
            flat = np.concatenate([np.asarray(v, np.float32).ravel() for v in pieces])
        else:
            flat = np.asarray(observer.tensor, np.float32).ravel().copy()
        if flat.size != self.size:
            raise EnvContractError(
                str(state.get_game()), "obs.in_space",
                f"the game's observer wrote {flat.size} values for player {player}, but its "
                f"tensor has {self.size}",
            )
        return flat

    def native(self, state: Any, player: int) -> Any:
        """Return the same observation read through the State's own methods (for comparisons)."""
        if self.kind == "observation_tensor":
            return np.asarray(state.observation_tensor(player), np.float32)
        if self.kind == "information_state_tensor":
            return np.asarray(state.information_state_tensor(player), np.float32)
        if self.kind == "observation_string":
            text = state.observation_string(player)
        else:
            text = state.information_state_string(player)
        return text_bytes(text, self.text_size) if self.text_size else text
