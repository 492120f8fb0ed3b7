"""OpenSpiel <-> hub: any pyspiel game as a hub env, and any hub env as a pyspiel game.

* :func:`from_openspiel` / :class:`OpenSpielEnv` (RLlib's name and layout):
  a ``pyspiel.Game``, game name, game string or ``pyspiel.State`` as a hub env;
  see :class:`OpenSpielEnv` for the semantics.
* :func:`to_openspiel`: a hub env registered as a pyspiel Python game, so
  ``pyspiel.load_game(name)`` and OpenSpiel's Python algorithms work on it.
* :func:`compare_with_native`: the adapted env and a native ``pyspiel.State``
  in lockstep (same actions, same chance outcomes), differences as findings.
* :func:`is_openspiel_object` tells :func:`marlhub.adapters.to_hub` what is ours,
  without importing pyspiel.

pyspiel is imported only when one of these is called; without it they raise
:class:`~marlhub.errors.MissingDependencyError` naming the ``openspiel`` extra.

Example:
    >>> env = from_openspiel("kuhn_poker")
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs), obs["player_0"]["action_mask"]
    (['player_0'], array([1, 1], dtype=int8))
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_0": 1})
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_1": 0})
    >>> terminateds["__all__"], rewards, env.state.returns()
    (True, {'player_0': 1.0, 'player_1': -1.0}, [1.0, -1.0])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from marlhub.adapters.openspiel.adapter import ILLEGAL_ACTION_MODES, OpenSpielEnv
from marlhub.adapters.openspiel.family import OpenSpielFamily
from marlhub.adapters.openspiel.games import describe_game, game_string, load_game
from marlhub.adapters.openspiel.lockstep import compare_with_native
from marlhub.adapters.openspiel.observation import OBSERVATION_KINDS, OpenSpielText
from marlhub.backends import derives_from

__all__ = [
    "ILLEGAL_ACTION_MODES",
    "OBSERVATION_KINDS",
    "OpenSpielEnv",
    "OpenSpielFamily",
    "OpenSpielText",
    "compare_with_native",
    "describe_game",
    "from_openspiel",
    "game_string",
    "is_openspiel_object",
    "load_game",
    "to_openspiel",
]

#: The pyspiel base classes whose instances (and subclasses') this adapter takes.
_PYSPIEL_BASES = {("pyspiel", "Game"), ("pyspiel", "State")}


def is_openspiel_object(obj: Any) -> bool:
    """Tell whether ``obj`` is a ``pyspiel.Game`` or ``pyspiel.State`` (Python games included).

    Looks only at the type's MRO, so it never imports pyspiel.

    Example:
        >>> is_openspiel_object("kuhn_poker"), is_openspiel_object(object())
        (False, False)
        >>> import pyspiel
        >>> is_openspiel_object(pyspiel.load_game("kuhn_poker"))
        True
    """
    return derives_from(obj, _PYSPIEL_BASES)


def to_openspiel(env_or_creator: Any, short_name: Optional[str] = None, **options: Any) -> Any:
    """Register a hub env as a pyspiel Python game; return the loaded ``pyspiel.Game``.

    Players are the env's ``possible_agents`` in order; every agent's action
    space must be Discrete (legal actions come from the action mask when there
    is one); the observation tensor is the player's last observation,
    flattened (padded to the largest; none for text observations), and the
    observation string is that observation; ``clone()`` deep-copies the env
    (live, PettingZoo's and Gymnasium's envs included); ``str(state)`` is every
    player's last observation and the actions so far; each new state builds a
    fresh env when first used and resets it with the game's ``seed``
    parameter, then seed + 1, and so on (so ``from_openspiel(game).reset(seed=s)``
    resets the env with ``s``). There is no information state: CFR and other
    algorithms over information states are refused with a ``ConfigError``.

    An :class:`OpenSpielEnv`, or a factory or registry id that makes one, is
    unwrapped to its game (with everything the game provides).

    Args:
        env_or_creator: a hub env, env class, factory or registry id (or an env
            of another supported API).
        short_name: the name for ``pyspiel.load_game``; default ``marlhub_<class>``.
        options: ``long_name``, ``dynamics`` (``"auto"``, ``"sequential"``,
            ``"simultaneous"``), ``reward_model`` (``"auto"``, ``"rewards"``,
            ``"terminal"``), ``zero_sum``, ``utility_range``, ``max_game_length``,
            ``probe_episodes``, ``seed``; see
            :func:`marlhub.adapters.openspiel.view.to_openspiel`.

    Raises:
        ConfigError: an action space that is not Discrete, or a bad option.
        EnvRegistrationError: ``short_name`` is one of OpenSpiel's own games.

    Example:
        >>> import pyspiel
        >>> from marlhub.envs import RockPaperScissors
        >>> game = to_openspiel(RockPaperScissors, short_name="hub_rps")
        >>> game.get_type().dynamics, pyspiel.load_game("hub_rps").num_players()
        (<Dynamics.SIMULTANEOUS: 0>, 2)
        >>> to_openspiel(from_openspiel(pyspiel.load_game("kuhn_poker")))
        kuhn_poker()
        >>> to_openspiel("openspiel/leduc_poker")
        leduc_poker()
    """
    from marlhub.adapters.openspiel.view import to_openspiel as register

    return register(env_or_creator, short_name, **options)


def from_openspiel(
    game_or_name_or_state: Any,
    *,
    params: Optional[Mapping[str, Any]] = None,
    observation: str = "auto",
    agent_ids: Union[str, Sequence[Any]] = "names",
    action_mask: str = "obs",
    max_steps: Optional[int] = None,
    illegal_action: str = "raise",
    illegal_reward: Optional[float] = None,
) -> OpenSpielEnv:
    """Return an OpenSpiel game as a hub env, in the hub layout.

    Agents are ``player_0``..``player_{n-1}``; each observation is
    ``{"observation": tensor or string, "action_mask": int8 0/1 array}``. The
    options are those of :class:`OpenSpielEnv`, whose defaults differ only in
    ``agent_ids`` (``"int"``) and ``action_mask`` (``"info"``), RLlib's layout.

    Args:
        game_or_name_or_state: a ``pyspiel.Game``, a game name or string
            (``"kuhn_poker(players=3)"``), or a ``pyspiel.State`` to start every
            episode from.
        params: game parameters, merged over those of the string.
        observation: which observation; see :class:`OpenSpielEnv`.
        agent_ids: ``"names"``, ``"int"`` or a sequence of one id per player.
        action_mask: ``"obs"`` (in a Dict observation) or ``"info"``.
        max_steps: truncate after this many steps (None: play to the end).
        illegal_action: ``"raise"``, ``"substitute"`` or ``"terminate"``.
        illegal_reward: the penalty of the last two.

    Raises:
        UnknownEnvError: no game of that name.
        ConfigError: bad parameters or options, or a mean-field game.
        MissingDependencyError: open_spiel is not installed.
    """
    return OpenSpielEnv(
        game_or_name_or_state,
        params=params,
        observation=observation,
        agent_ids=agent_ids,
        action_mask=action_mask,
        max_steps=max_steps,
        illegal_action=illegal_action,
        illegal_reward=illegal_reward,
    )
