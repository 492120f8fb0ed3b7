"""Every exception and warning marlhub raises.

One root, :class:`MarlhubError`; each subclass also inherits the built-in that
matches its meaning, so ``except KeyError`` or ``except ValueError`` keeps
working in code that never heard of marlhub::

    MarlhubError
    ├── UnknownEnvError          (KeyError)     an id nobody registered
    ├── EnvRegistrationError     (ValueError)   a bad or taken name at register time
    ├── EnvCreationError         (RuntimeError) a creator raised; id and config attached
    ├── EntryPointError          (ImportError)  a ``marlhub.envs`` entry point that does not load
    ├── EnvContractError         (RuntimeError) an env broke a contract rule while being driven
    ├── ConfigError              (ValueError)   config keys or values an env does not accept
    │   └── UncopyableEnvError                  an env that cannot be cloned made an OpenSpiel game
    ├── MissingDependencyError   (ImportError)  an optional backend is not installed
    ├── ProtocolError            (TypeError)    an object does not follow the MultiAgentEnv protocol
    ├── ActionError              (ValueError)   an action dict the env cannot accept
    ├── ResetNeededError         (RuntimeError) step() before reset() or after the episode ended
    ├── NotParallelizableError   (ValueError)   a turn-based step where a parallel API needs all agents
    ├── AgentIdError             (ValueError)   an agent id that is unknown, repeated or missing
    ├── TargetError              (ValueError)   a conformance target that cannot be loaded
    ├── ConversionError          (ValueError)   a conversion to an API marlhub does not know
    ├── VectorRewardError        (ValueError)   vector rewards where a scalar is needed, bad weights
    ├── VectorEnvError           (ValueError)   a vector env call it cannot take (bad seeds, closed)
    ├── WorkerError              (RuntimeError) an async vector env's worker raised or died
    ├── RemoteEnvError           (ConnectionError) a remote env's server unreachable, gone or silent
    └── RemoteRequestError       (ValueError)   a request a remote env's server refused

    MarlhubWarning (UserWarning)

Each exception builds its message in ``__init__`` from the fields it keeps as
attributes, so the wording lives in one place and callers can inspect the
fields instead of parsing text.

Example:
    >>> from marlhub.errors import ActionError
    >>> err = ActionError("player_2", "missing", expected="an action for every actor")
    >>> isinstance(err, ValueError), err.agent_id
    (True, 'player_2')
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any, Optional

__all__ = [
    "ActionError", "AgentIdError", "ConfigError", "ConversionError", "EntryPointError",
    "EnvContractError", "EnvCreationError", "EnvRegistrationError", "EpisodeDroppedError",
    "ExternalEnvError", "ExternalTimeoutError", "MarlhubError", "MarlhubWarning",
    "MissingDependencyError", "NotParallelizableError", "ProtocolError", "RemoteEnvError",
    "RemoteRequestError", "ResetNeededError", "TargetError", "UncopyableEnvError",
    "UnknownEnvError", "VectorEnvError", "VectorRewardError", "WorkerError", "closest",
]


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` candidates that look like ``name``, best first.

    Example:
        >>> closest("tic_tac_to", ["tic_tac_toe", "traffic", "rock_paper_scissors"])
        ['tic_tac_toe']
    """
    pool = list(candidates)
    found = difflib.get_close_matches(name, pool, n=n, cutoff=0.6)
    if not found:
        # A prefix typed without its family ("leduc_poker" for "openspiel/leduc_poker").
        found = [c for c in pool if c.rsplit("/", 1)[-1] == name][:n]
    return found


def _quote_list(items: Sequence[Any], limit: int = 12) -> str:
    shown = ", ".join(repr(i) for i in list(items)[:limit])
    more = len(items) - limit
    return f"{shown}, ... ({more} more)" if more > 0 else shown


class MarlhubError(Exception):
    """Root of every error marlhub raises."""


class MarlhubWarning(UserWarning):
    """Root of every warning marlhub emits."""


class UnknownEnvError(MarlhubError, KeyError):
    """An env id that no registry entry or family resolves.

    Attributes:
        env_id: the id asked for.
        suggestions: registered ids that look like it, best first.
    """

    def __init__(self, env_id: str, suggestions: Sequence[str] = (), detail: str = "") -> None:
        self.env_id = env_id
        self.suggestions = list(suggestions)
        hint = f" Did you mean {_quote_list(self.suggestions)}?" if self.suggestions else ""
        extra = f" {detail}" if detail else ""
        self.message = (
            f"No env is registered as {env_id!r}.{extra}{hint} "
            "Run `marlhub list` to see every registered id, or register yours with "
            "marlhub.register_env(name, creator)."
        )
        super().__init__(self.message)

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class EnvRegistrationError(MarlhubError, ValueError):
    """A name that cannot be registered: taken, malformed, or a creator that is not callable."""

    def __init__(self, name: str, problem: str, fix: str) -> None:
        self.name = name
        self.problem = problem
        super().__init__(f"Cannot register {name!r}: {problem}. {fix}")


class EnvCreationError(MarlhubError, RuntimeError):
    """A registered creator raised while building an env.

    Attributes:
        env_id: the id being made.
        config: the config passed to the creator.
    """

    def __init__(self, env_id: str, config: Any, cause: BaseException) -> None:
        self.env_id = env_id
        self.config = config
        # A missing package (gymnasium's DependencyNotInstalled is no ImportError) is no
        # fault of the config, nor is anything raised when there was no config at all.
        if isinstance(cause, ImportError) or type(cause).__name__ == "DependencyNotInstalled":
            fix = ("A package the env needs is missing or moved: install what the message "
                   "names (`marlhub list` shows only ids whose entry point exists)")
        elif config:
            fix = "Check the config against what the env's constructor accepts"
        else:
            fix = "The env's creator raised without any config: the cause is in the env"
        super().__init__(
            f"Creating env {env_id!r} with config {dict(config) if config else {}!r} failed: "
            f"{type(cause).__name__}: {str(cause).rstrip('.')}. {fix}; the original error is "
            "chained below."
        )


class EntryPointError(MarlhubError, ImportError):
    """An entry point of group ``marlhub.envs`` that cannot be loaded into an env creator.

    Attributes:
        env_id: the entry point's name, the id it would register.
        value: what it points at, ``module:attr``.
        distribution: the distribution that declares it ("" when unknown).
    """

    def __init__(self, env_id: str, value: str, distribution: str, problem: str, *,
                 group: str = "marlhub.envs") -> None:
        self.env_id = env_id
        self.value = value
        self.distribution = distribution
        owner = f"distribution {distribution!r}" if distribution else "an unknown distribution"
        super().__init__(
            f"The entry point {env_id} = {value} (group {group!r}, from {owner}) cannot be "
            f"loaded: {problem}. Reinstall or fix that package, or uninstall it to drop the id; "
            f"marlhub.register_env({env_id!r}, creator) registers a replacement."
        )


class EnvContractError(MarlhubError, RuntimeError):
    """An env broke a rule of the contract while marlhub was driving it.

    Attributes:
        env_name: the env's class name (or id).
        rule: the id of the broken rule (see ``marlhub.contract.rules``).
    """

    def __init__(self, env_name: str, rule: str, problem: str) -> None:
        self.env_name = env_name
        self.rule = rule
        super().__init__(f"{env_name} broke the contract rule {rule!r}: {problem}. "
                         "Run `marlhub check` on it for a full report.")


class ConfigError(MarlhubError, ValueError):
    """Config keys or values an env does not accept.

    Attributes:
        env_id: the env being configured.
        unknown: the keys that were not accepted.
        accepted: the keys that would have been.
    """

    def __init__(self, env_id: str, problem: str, *, unknown: Sequence[str] = (),
                 accepted: Sequence[str] = (), fix: str = "") -> None:
        self.env_id = env_id
        self.unknown = list(unknown)
        self.accepted = list(accepted)
        if not fix and self.accepted:
            fix = f"Accepted keys: {_quote_list(sorted(self.accepted), limit=40)}."
        elif not fix:
            fix = "This env takes no config keys; pass config=None."
        super().__init__(f"Bad config for {env_id!r}: {problem}. {fix}")


class UncopyableEnvError(ConfigError):
    """An env made an OpenSpiel game whose copy mid-episode starts over (state outside Python:
    MAgent2's C engine, a Box2D world), which every OpenSpiel algorithm clones: a refusal by
    structure (``refused`` in ``--targets openspiel``). ``what`` did not pickle (or "")."""

    def __init__(self, env_id: str, what: str = "") -> None:
        self.what = what
        self.problem = ("a copy of the env in the middle of an episode starts over"
                        + (f" ({what})" if what else "") + ", and OpenSpiel clones states in "
                        "every algorithm (random_sim_test, MCTS, CFR)")
        super().__init__(env_id, self.problem, fix="Only envs whose whole state can be copied "
                         "in memory become OpenSpiel games; state kept outside Python (a C "
                         "engine's world, a ctypes pointer) cannot be.")


class MissingDependencyError(MarlhubError, ImportError):
    """An optional backend is needed but not installed.

    Attributes:
        package: the importable module that was missing.
        extra: the marlhub extra that installs it.
        install: the install command, when no marlhub extra covers the package
            (e.g. ``pip install 'pettingzoo[atari]'``).
    """

    def __init__(self, package: str, extra: str, feature: str, *, install: str = "") -> None:
        self.package = package
        self.extra = extra
        self.install = install or f"pip install 'marlhub[{extra}]'"
        super().__init__(
            f"{feature} needs the {package!r} package, which is not installed. "
            f"Install it with: {self.install}",
            name=package,
        )


class ProtocolError(MarlhubError, TypeError):
    """An object that does not follow the MultiAgentEnv protocol where one is needed."""

    def __init__(self, obj: Any, missing: Sequence[str], expected: str = "a MultiAgentEnv",
                 *, fix: str = "") -> None:
        self.obj = obj
        self.missing = list(missing)
        fix = fix or ("Subclass marlhub.MultiAgentEnv, or convert it first with "
                      "marlhub.convert(obj, to='marlhub').")
        got = f"{type(obj).__module__}.{type(obj).__qualname__}"
        super().__init__(f"Expected {expected}, got {got} which lacks {_quote_list(self.missing)}. "
                         f"{fix}")


class ActionError(MarlhubError, ValueError):
    """An action dict that the env cannot accept; the env state is left unchanged.

    Attributes:
        agent_id: the agent whose action is wrong (None when the dict itself is).
        actual: what was sent.
        expected: what would have been accepted.
        copy_index: the copy of a vector env the action was for (None outside one).
    """

    def __init__(self, agent_id: Any, actual: Any, *, expected: str, fix: str = "",
                 copy_index: Any = None) -> None:
        self.agent_id = agent_id
        self.actual = actual
        self.expected = expected
        self.copy_index = copy_index  # the copy of a vector env, when in one
        self.fix = fix
        who = f"for {agent_id!r}" if agent_id is not None else "in the action dict"
        if copy_index is not None:
            who += f" in copy {copy_index}"
        fix = fix or ("Send exactly one action for each agent in the last observation dict, "
                      "inside its action space and mask.")
        super().__init__(f"Bad action {who}: got {actual!r}, expected {expected}. {fix}")


class ResetNeededError(MarlhubError, RuntimeError):
    """step() called before reset() or after the episode ended.

    Built from the env's name and why it cannot step, or from a whole message of
    your own, as other exceptions are (one argument with a space in it).

    Attributes:
        env_name: the env's name ("" when built from a message).

    Example:
        >>> str(ResetNeededError("Nim", "reset() has not been called yet"))
        'Nim.step() was called but reset() has not been called yet. Call reset() to start a new episode.'
        >>> str(ResetNeededError("Nim"))
        'Nim.step() was called but the episode is over. Call reset() to start a new episode.'
        >>> str(ResetNeededError("The game is over; call reset()."))
        'The game is over; call reset().'
    """

    def __init__(self, env_name: str, why: Optional[str] = None) -> None:
        if why is None and any(c.isspace() for c in env_name):
            self.env_name = ""
            super().__init__(env_name)
            return
        self.env_name = env_name
        why = "the episode is over" if why is None else why
        super().__init__(f"{env_name}.step() was called but {why}. Call reset() to start a new "
                         "episode.")


class NotParallelizableError(MarlhubError, ValueError):
    """A step where only some agents act, met by an API that needs every agent every step.

    Attributes:
        actors: the agents that act in the step.
        agents: the agents that would all have had to act.
    """

    def __init__(self, actors: Sequence[Any], agents: Sequence[Any], *,
                 needs: str = "the parallel API", fix: str = "") -> None:
        self.actors = list(actors)
        self.agents = list(agents)
        fix = fix or ("Use the AEC API for turn-based envs, or pass turn_based='pad' to give "
                      "the idle agents their last observation.")
        super().__init__(f"Only {_quote_list(self.actors)} act in this step but {needs} needs "
                         f"every live agent ({_quote_list(self.agents)}) to act. {fix}")


class AgentIdError(MarlhubError, ValueError):
    """An agent id that is unknown, repeated or missing where agent ids are given.

    Attributes:
        agent_id: the offending id (None when one is missing).
        known: the ids that would have been accepted.
    """

    def __init__(self, agent_id: Any, problem: str, *, known: Sequence[Any] = (), fix: str = "") -> None:
        self.agent_id = agent_id
        self.known = list(known)
        if not fix and self.known:
            near = closest(str(agent_id), [str(k) for k in self.known]) if agent_id is not None else []
            hint = [k for k in self.known if str(k) in near]
            did_you_mean = f" Did you mean {_quote_list(hint)}?" if hint else ""
            fix = f"The env's agents are {_quote_list(self.known)}.{did_you_mean}"
        super().__init__(f"{problem}. {fix}".rstrip())


class TargetError(MarlhubError, ValueError):
    """A conformance target (id, glob, module:attr, file:attr) that cannot be loaded."""

    def __init__(self, target: str, problem: str, fix: str = "") -> None:
        self.target = target
        fix = fix or ("A target is a registry id, a glob over ids ('openspiel/*'), "
                      "'package.module:attr' or 'path/to/file.py:attr', where attr is an env "
                      "class, instance or factory.")
        super().__init__(f"Cannot load target {target!r}: {problem}. {fix}")


class ConversionError(MarlhubError, ValueError):
    """A conversion to an API marlhub does not know (``convert(env, to="dm_env")``).

    Attributes:
        target: the requested API.
        supported: the APIs marlhub converts to.
    """

    def __init__(self, target: str, supported: Sequence[str]) -> None:
        self.target = target
        self.supported = list(supported)
        close = closest(str(target), self.supported) or [
            t for t in self.supported if t.startswith(f"{target}.")]
        hint = f" Did you mean {_quote_list(close)}?" if close else ""
        super().__init__(f"Cannot convert to {target!r}: the supported targets are "
                         f"{_quote_list(self.supported)}; pass one of them as `to`.{hint}")


class VectorRewardError(MarlhubError, ValueError):
    """Vector rewards (a declared reward space per agent) where one number per agent is needed,
    or scalarizing weights that do not fit them.

    Attributes:
        consumer: who needs scalars, or refused the weights (``"to_gymnasium"``).
        agent_id: the agent concerned (None when it is about every agent).
        space: its declared reward space (None when there is none).
    """

    def __init__(self, consumer: str, problem: str, *, agent_id: Any = None, space: Any = None,
                 fix: str = "") -> None:
        self.consumer, self.agent_id, self.space = consumer, agent_id, space
        fix = fix or ("Scalarize them first with explicit weights, one per objective: "
                      "marlhub.wrappers.ScalarizeRewards(env, weights).")
        super().__init__(f"{consumer}: {problem}. {fix}")


class RemoteEnvError(MarlhubError, ConnectionError):
    """A remote env's server could not be reached, went away, or did not answer in time.

    Attributes:
        address: the server's ``HOST:PORT``.
        call: the dm_env_rpc request under way (``"Step"``, ``"Reset"``, ``"connect"``...).
        reason: what happened.
    """

    def __init__(self, address: str, call: str, reason: str, *, fix: str = "") -> None:
        self.address = address
        self.call = call
        self.reason = reason
        # The connection and each call after it have their own time limits (config keys).
        key = "connect_timeout" if call == "connect" else "timeout"
        fix = fix or ("Check that the server (`marlhub serve ID`) runs at that address and is "
                      "reachable, or give it longer: "
                      f"marlhub.make('remote/HOST:PORT', {{'{key}': seconds}}).")
        super().__init__(f"The remote env at {address} failed in {call}: {reason}. {fix}")


class RemoteRequestError(MarlhubError, ValueError):
    """A request that a remote env's server refused (dm_env_rpc answers with a gRPC status).

    Attributes:
        call: the dm_env_rpc request (``"CreateWorld"``, ``"JoinWorld"``, ``"Step"``...).
        detail: the server's message.
        code: the gRPC status code's name (``"INVALID_ARGUMENT"``...).
        address: the server's ``HOST:PORT`` (None on the server's own side).
    """

    def __init__(self, call: str, detail: str, *, code: str = "FAILED_PRECONDITION",
                 address: Any = None, fix: str = "") -> None:
        self.call = call
        self.detail = detail
        self.code = code
        self.address = address
        where = f"The server at {address} refused {call}" if address else f"{call} was refused"
        super().__init__(f"{where} ({code}): {detail}" + (f" {fix}" if fix else ""))


class VectorEnvError(MarlhubError, ValueError):
    """A call a vector env cannot take: bad seeds or ``reset_mask``, or the env is closed.

    Attributes:
        env_name: the vector env (``"AsyncVectorMultiAgentEnv(tic_tac_toe, num_envs=4)"``).
        problem: what was wrong, with the value given.
    """

    def __init__(self, env_name: str, problem: str, fix: str) -> None:
        self.env_name = env_name
        self.problem = problem
        super().__init__(f"{env_name}: {problem}. {fix}")


class WorkerError(MarlhubError, RuntimeError):
    """A worker process of an async vector env raised, died or did not answer.

    Attributes:
        copy_index: the copy concerned (the first of the worker's copies when it died).
        worker_index: the worker process.
        copies: every copy the worker holds.
        call: what the worker was doing (``"step"``, ``"reset"``, ``"call('render')"``).
        reason: what happened (``"raised ValueError: ..."``, ``"is gone: ..."``).
        exception_type: the name of the exception raised in the worker ("" when it died).
        worker_traceback: the worker's traceback ("" when it died).
        exitcode: the process's exit code when it died (negative: killed by that signal).
    """

    def __init__(self, *, copy_index: int, worker_index: int, copies: Sequence[int], call: str,
                 reason: str, exception_type: str = "", worker_traceback: str = "",
                 exitcode: Any = None, fix: str = "") -> None:
        self.copy_index = copy_index
        self.worker_index = worker_index
        self.copies = list(copies)
        self.call = call
        self.reason = reason
        self.exception_type = exception_type
        self.worker_traceback = worker_traceback
        self.exitcode = exitcode
        held = ", ".join(str(c) for c in self.copies)
        message = (f"Copy {copy_index} (worker {worker_index}, which holds copies {held}) "
                   f"{reason} during {call}.")
        if fix:
            message += f" {fix}"
        if worker_traceback:
            message += f"\nThe worker's traceback:\n{worker_traceback.rstrip()}"
        super().__init__(message)


class ExternalEnvError(MarlhubError, RuntimeError):
    """An external simulator's call that cannot be taken (bad values, an ended episode, a learner
    gone), or a failure on the learner's side; ``source`` is who, ``problem`` what was wrong."""

    def __init__(self, source: str, problem: str, fix: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}. {fix}")


class ExternalTimeoutError(ExternalEnvError, TimeoutError):
    """The learner waited for a simulator's request longer than its ``timeout``."""


class EpisodeDroppedError(ExternalEnvError):
    """The learner let go of a simulator's episode (reset mid-episode, time-out, close)."""
