"""PettingZoo <-> hub, both directions, AEC and parallel.

* :func:`from_pettingzoo` turns a PettingZoo AEC or parallel env into a hub env
  (:class:`PettingZooEnv` / :class:`ParallelPettingZooEnv`, drop-in for RLlib's
  classes of the same names).
* :func:`to_pettingzoo` turns any hub env (or anything :func:`~marlhub.adapters.to_hub`
  accepts) into a PettingZoo AEC env, or a parallel env when every agent acts in
  every step.
* :func:`compare_with_native` steps an adapted env and a second native instance in
  lockstep and reports every difference as an ``equiv.*`` finding.

Converting back unwraps: ``to_pettingzoo(from_pettingzoo(e)) is e`` and
``from_pettingzoo(to_pettingzoo(h)) is h``. Semantics: docs/guides/pettingzoo.rst.
PettingZoo is imported only when a conversion needs it.

Example:
    >>> import pettingzoo
    >>> native = pettingzoo.make("aec", "classic/connect_four-v3")
    >>> env = from_pettingzoo(native)
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs)
    ['player_0']
    >>> to_pettingzoo(env) is native
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional

from marlhub.adapters.apis import to_hub
from marlhub.adapters.pettingzoo.adapter import PettingZooEnv
from marlhub.adapters.pettingzoo.adapter_parallel import ParallelPettingZooEnv
from marlhub.adapters.pettingzoo.family import PettingZooFamily
from marlhub.adapters.pettingzoo.lockstep import compare_with_native
from marlhub.backends import import_backend
from marlhub.core import MultiAgentEnv, missing_protocol_members
from marlhub.episode.play import RandomEpisode
from marlhub.errors import NotParallelizableError, ProtocolError
from marlhub.wrappers.rename import RenameAgents, string_ids

if TYPE_CHECKING:
    from marlhub.adapters.pettingzoo.view import HubAECEnv, HubParallelEnv

__all__ = [
    "HubAECEnv",
    "HubParallelEnv",
    "ParallelPettingZooEnv",
    "PettingZooEnv",
    "PettingZooFamily",
    "compare_with_native",
    "from_pettingzoo",
    "is_pettingzoo_env",
    "pettingzoo_kind",
    "require_simultaneous",
    "to_pettingzoo",
]

_BASES: dict[tuple[str, str], Literal["aec", "parallel"]] = {
    ("pettingzoo.utils.env", "AECEnv"): "aec",
    ("pettingzoo.utils.env", "ParallelEnv"): "parallel",
}


def pettingzoo_kind(obj: Any) -> Literal["aec", "parallel", ""]:
    """Return ``"aec"`` or ``"parallel"`` for a PettingZoo env, ``""`` for anything else.

    Looks at the classes ``obj`` is an instance of, so PettingZoo is never
    imported for an object that does not come from it. Objects that quack like
    an AEC env (``agent_iter``, ``last``, ``observe``, ``agent_selection``
    machinery) without subclassing it count as AEC.

    Example:
        >>> pettingzoo_kind(object())
        ''
    """
    if isinstance(obj, type):
        return ""
    for cls in type(obj).__mro__:
        kind = _BASES.get((cls.__module__, cls.__name__))
        if kind:
            return kind
    aec_methods = ("agent_iter", "last", "observe", "step")
    if all(callable(getattr(obj, name, None)) for name in aec_methods):
        return "aec"
    return ""


def is_pettingzoo_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a PettingZoo AEC or parallel env (wrapped or not).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_pettingzoo_env(TicTacToe())
        False
    """
    return bool(pettingzoo_kind(obj))


def from_pettingzoo(env: Any) -> MultiAgentEnv:
    """Return a PettingZoo env as a hub env; a view made by :func:`to_pettingzoo` unwraps.

    Args:
        env: a PettingZoo ``AECEnv`` or ``ParallelEnv``, wrapped or not
            (SuperSuit and PettingZoo wrappers included).

    Returns:
        :class:`PettingZooEnv` for an AEC env, :class:`ParallelPettingZooEnv` for a
        parallel one, or the hub env itself when ``env`` came from :func:`to_pettingzoo`.

    Raises:
        ProtocolError: ``env`` is not a PettingZoo env.
    """
    if getattr(type(env), "_marlhub_view_of_hub", False):
        hub = env.hub_env
        # to_pettingzoo gave the agents string names; the hub env behind had others.
        return hub.env if getattr(env, "renamed_for_pettingzoo", False) else hub
    kind = pettingzoo_kind(env)
    if kind == "aec":
        return PettingZooEnv(env)
    if kind == "parallel":
        return ParallelPettingZooEnv(env)
    raise ProtocolError(
        env, missing_protocol_members(env),
        expected="a PettingZoo AECEnv or ParallelEnv (wrapped or not)",
    )


def to_pettingzoo(env: Any, api: str = "aec", turn_based: str = "raise") -> Any:
    """Return ``env`` as a PettingZoo env; an env made by :func:`from_pettingzoo` unwraps.

    Args:
        env: a hub env, or anything :func:`marlhub.adapters.to_hub` accepts.
        api: ``"aec"`` (any env: one agent acts at a time, actions buffered until
            every actor of the hub step has acted) or ``"parallel"`` (every live
            agent acts in every step). Agent ids that are not strings are named
            ``agent_<id>`` (PettingZoo's agents are strings); converting back
            restores them.
        turn_based: for ``api="parallel"``: ``"raise"`` makes a step where only some
            live agents act raise :class:`~marlhub.errors.NotParallelizableError`;
            ``"pad"`` gives idle agents their last observation and
            ``infos[a]["is_acting"] = False`` and ignores their actions.

    Returns:
        A PettingZoo ``AECEnv`` or ``ParallelEnv``.

    Raises:
        ValueError: ``api`` or ``turn_based`` is none of the accepted values.
        MissingDependencyError: PettingZoo is not installed.
        ProtocolError: ``env`` cannot be turned into a hub env.

    Example:
        >>> from marlhub.envs import RockPaperScissors
        >>> par = to_pettingzoo(RockPaperScissors(), api="parallel")
        >>> obs, infos = par.reset(seed=0)
        >>> par.agents, int(obs["player1"])
        (['player1', 'player2'], 0)
    """
    if api not in ("aec", "parallel"):
        raise ValueError(f"api must be 'aec' or 'parallel', got {api!r}.")
    if turn_based not in ("raise", "pad"):
        raise ValueError(f"turn_based must be 'raise' or 'pad', got {turn_based!r}.")
    if api == "aec" and type(env) is PettingZooEnv:
        return env.env
    if api == "parallel" and type(env) is ParallelPettingZooEnv:
        return env.par_env
    kind = pettingzoo_kind(env)
    if kind == api:
        return env
    if kind == "":
        hub = to_hub(env)
    else:
        hub = from_pettingzoo(env)
    views = _views_module()
    # PettingZoo names agents with strings (TorchRL's wrapper and SuperSuit rely on it).
    renamed = not all(isinstance(a, str) for a in hub.possible_agents)
    named = RenameAgents(hub, string_ids(list(hub.possible_agents))) if renamed else hub
    view = (views.HubAECEnv(named) if api == "aec"
            else views.HubParallelEnv(named, turn_based=turn_based))
    view.renamed_for_pettingzoo = renamed
    return view


def require_simultaneous(make_fresh: Any, *, turn_based: str = "raise", seed: int = 0,
                         max_steps: int = 200, env_id: Optional[str] = None,
                         aec_of_parallel: bool = False, **options: Any) -> None:
    """Refuse, up front, an env that ``to_pettingzoo(..., api="parallel")`` cannot take.

    Plays one seeded random episode of ``make_fresh()``; a step where only some
    live agents act means the env is turn-based. Nothing is checked with
    ``turn_based="pad"``, which takes any env, nor for a native PettingZoo
    parallel env, which the conversion hands back itself.

    Args:
        make_fresh: makes a fresh instance of the env.
        turn_based: the converter's option; ``"pad"`` takes any env.
        seed: the probe episode's seed.
        max_steps: the most steps the probe plays.
        env_id: the registry id of the env, for the message.
        aec_of_parallel: the env is the AEC version of a natively parallel env (its
            config chose ``api='aec'``): the message says how to get the parallel one
            instead of calling the env turn-based.

    Raises:
        NotParallelizableError: a step of the probe was turn-based.

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> require_simultaneous(TicTacToe)
        Traceback (most recent call last):
        ...
        marlhub.errors.NotParallelizableError: Only 'player2' act in this step but the parallel API needs every live agent ('player1', 'player2') to act. The env is turn-based: use to='pettingzoo.aec', or turn_based='pad' to give the idle agents their last observation.
    """
    if turn_based != "raise":
        return
    env = to_hub(make_fresh())
    if type(env) is ParallelPettingZooEnv:
        return  # to_pettingzoo hands back the native parallel env itself
    for step in RandomEpisode(env, seed, max_steps=max_steps):
        live = list(getattr(env, "agents", None) or step.actors)
        if not step.over and set(step.actors) != set(live):
            raise NotParallelizableError(step.actors, live,
                                         fix=_parallel_fix(env_id, aec_of_parallel))


def _parallel_fix(env_id: Optional[str], aec_of_parallel: bool) -> str:
    """How to get a parallel env, for the env at hand."""
    if aec_of_parallel:
        name = repr(env_id) if env_id else "The env"
        return (f"{name} was built as the AEC version of an env that exists natively in "
                "parallel: pass {'api': 'parallel'} in its config (or drop 'api') to build "
                "its parallel version.")
    return ("The env is turn-based: use to='pettingzoo.aec', or turn_based='pad' to give the "
            "idle agents their last observation.")


def _views_module() -> Any:
    return import_backend("marlhub.adapters.pettingzoo.view", package="pettingzoo",
                          extra="pettingzoo", feature="to_pettingzoo()")


def __getattr__(name: str) -> Any:
    if name in ("HubAECEnv", "HubParallelEnv"):
        return getattr(_views_module(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
