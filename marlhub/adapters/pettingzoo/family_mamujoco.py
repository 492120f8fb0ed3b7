"""The ``mamujoco/`` family: MaMuJoCo's robots, one agent per part, as PettingZoo parallel envs.

MaMuJoCo (``gymnasium_robotics.mamujoco_v1``, in ``gymnasium-robotics``) splits one
MuJoCo robot into agents that each move some of its joints:
``mamujoco_v1.parallel_env("HalfCheetah", "6x1")`` is six agents, a leg joint each.
An id names the robot and the partition (MaMuJoCo's ``scenario`` and ``agent_conf``):

* ``mamujoco/HalfCheetah-6x1``: the robot, a hyphen, one of the partitions MaMuJoCo
  names for it (``Ant-2x4d``, ``Humanoid-9|8``: quote that one in a shell);
* ``mamujoco/ManySegmentAnt-2x3``: the robots of any size take any
  ``<agents>x<segments per agent>``; ``marlhub list`` shows one size of each;
* ``mamujoco/HalfCheetah``: no partition is ``agent_conf=None``, the whole robot as
  one agent, where MaMuJoCo builds that (every robot but the sized ones; the only form
  of InvertedPendulum and InvertedDoublePendulum, which MaMuJoCo does not split).

The robots and partitions are read from MaMuJoCo's own code
(:mod:`marlhub.adapters.pettingzoo.mamujoco_robots`), never tabled here. The rest
of the config goes to MaMuJoCo's constructor: its own keys (``agent_obsk``, how
many joints away an agent sees, default 1; ``local_categories``,
``global_categories``, ``agent_factorization``, ``render_mode``, ``gym_env``) and
the keywords it passes to ``gymnasium.make`` for the robot's single-agent env
(``max_episode_steps``, ``ctrl_cost_weight``, ...). Keys are checked before
anything is built; an unknown one is refused with the accepted ones.

The env made is MaMuJoCo's own parallel env, which the registry turns into a hub
env with the PettingZoo parallel adapter. Its global state, ``state()`` (the
single-agent env's observation, for a centralised critic), gets the
``state_space`` that PettingZoo's convention asks for and MaMuJoCo leaves out, so
the targets that take a global state carry it (TorchRL's ``"state"``, skrl's
``state()``, RLlib's view). :meth:`MaMuJoCoFamily.lockstep` compares the hub env
with MaMuJoCo's env stepped through PettingZoo's own code, global state included.

Example:
    >>> family = MaMuJoCoFamily()
    >>> "mamujoco/HalfCheetah-6x1" in dict(family.ids())
    True
    >>> env = family.make("HalfCheetah-6x1", EnvContext({"agent_obsk": 0}))
    >>> env.possible_agents[:2], env.action_space("agent_0")
    (['agent_0', 'agent_1'], Box(-1.0, 1.0, (1,), float32))
    >>> env.state_space
    Box(-inf, inf, (17,), float64)
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional

from marlhub.adapters.pettingzoo.mamujoco_robots import SIZED, Robot, read_robots
from marlhub.backends import import_backend
from marlhub.context import EnvContext
from marlhub.contract.findings import Finding
from marlhub.contract.rules import (
    ENV_COPYABLE,
    EQUIV_TRAJECTORY,
    OBS_UNTOUCHED,
    SEED_REPRODUCIBLE,
    VECTOR_EQUIV,
)
from marlhub.errors import ConfigError, UnknownEnvError, closest

__all__ = ["MaMuJoCoFamily"]

#: MaMuJoCo's public module, and the module of its env class.
_MODULE = "gymnasium_robotics.envs.multiagent_mujoco.mamujoco_v1"
_ENV_MODULE = "gymnasium_robotics.envs.multiagent_mujoco.mujoco_multi"
#: The size ``marlhub list`` shows of a robot of any size (two agents of three segments).
LISTED_SIZE = "2x3"
#: The constructor's arguments that the id gives.
_IN_THE_ID = ("scenario", "agent_conf")
#: Threads of one process take turns before the lock file (see _one_builder_at_a_time).
_BUILDING = threading.Lock()
_PUSHER_3P = (
    "MaMuJoCo's Pusher '3p' partition (gymnasium-robotics 1.3.1 to 1.4.2) labels two of "
    "agent_0's joints 'r_wrist_roll_joint', and an agent's observation lists its joints ordered "
    "by label out of a set of nodes hashed by address, so those two joints' values come in "
    "either order, another in each env built (two instances reset with one seed observe "
    "different agent_0 arrays); reproduce: a, b = (mamujoco_v1.parallel_env('Pusher', '3p') "
    "for _ in '12'); a.reset(seed=0)[0]['agent_0'] vs b.reset(seed=0)[0]['agent_0']")


class MaMuJoCoFamily:
    """``mamujoco/<robot>[-<partition>]``: MaMuJoCo's parallel env (see the module doc)."""

    name = "mamujoco"
    description = (
        "MaMuJoCo's robots split into agents (mamujoco/HalfCheetah-6x1; mamujoco/HalfCheetah: "
        "the whole robot as one agent); config: agent_obsk, max_episode_steps, MaMuJoCo's and "
        "the MuJoCo env's keywords"
    )
    #: The marlhub extra that installs MaMuJoCo (gymnasium-robotics and mujoco).
    extra = "mamujoco"
    #: ``{rule id: reason}`` that every MaMuJoCo env is known to break natively.
    package_faults: Mapping[str, str] = {
        ENV_COPYABLE: (
            "MaMuJoCo's parallel env (gymnasium-robotics 1.3.1 to 1.4.2) holds its robot in "
            "a Gymnasium MuJoCo env, which copy.deepcopy and pickle rebuild from its "
            "constructor's arguments (gymnasium's EzPickle), back at its start, so a copy "
            "taken mid-episode plays on from another state; reproduce: env = "
            "mamujoco_v1.parallel_env('HalfCheetah', '6x1'); env.reset(seed=0); step 10 "
            "times; copy.deepcopy(env).step(a) observes other values than env.step(a)"),
    }
    #: Rules every env of a robot is known to break natively, by robot.
    robot_faults: Mapping[str, Mapping[str, str]] = {
        robot: {OBS_UNTOUCHED: (
            f"Gymnasium's {robot}-v5 before Gymnasium 1.4 (1.1.1 at marlhub's oldest end) puts "
            "MuJoCo's own arrays data.ten_length and data.ten_velocity in its infos "
            "('tendon_length', 'tendon_velocity'), which the next step overwrites in place, "
            "and MaMuJoCo hands those infos to every agent; reproduce: infos = "
            f"mamujoco_v1.parallel_env('{robot}', None).reset(seed=0)[1]; step once; "
            "infos['agent_0']['tendon_length'] has changed")}
        for robot in ("Humanoid", "HumanoidStandup")
    }
    #: Rules the native env of an id (``rest``) is known to break, beyond the above.
    faults: Mapping[str, Mapping[str, str]] = {
        "Pusher-3p": {
            **{rule: _PUSHER_3P for rule in (SEED_REPRODUCIBLE, EQUIV_TRAJECTORY, VECTOR_EQUIV)},
            "target.pettingzoo.aec": "PettingZoo's seed_test builds two envs and compares "
            f"their observations under one seed, which differ in one try of two: {_PUSHER_3P}",
        },
    }

    def __init__(self) -> None:
        self._robots: Optional[dict[str, Robot]] = None
        self._lock = threading.Lock()

    def known_faults(self, rest: str) -> dict[str, str]:
        """Return ``{rule id: reason}`` for rules the native env ``rest`` is known to break."""
        robot = self.robot_faults.get(rest.partition("-")[0], {})
        return {**self.package_faults, **robot, **self.faults.get(rest, {})}

    # -- the catalogue -----------------------------------------------------------------

    def _backend(self) -> Any:
        feature = f"The {self.name}/ env family"
        import_backend("mujoco", package="mujoco", extra=self.extra, feature=feature)
        return import_backend(_MODULE, package="gymnasium_robotics", extra=self.extra,
                              feature=feature)

    def _env_class(self) -> Any:
        self._backend()
        return importlib.import_module(_ENV_MODULE).MultiAgentMujocoEnv

    def robots(self) -> Mapping[str, Robot]:
        """Return MaMuJoCo's robots, read once from its code.

        Raises:
            MissingDependencyError: gymnasium-robotics or mujoco is not installed.
        """
        with self._lock:
            if self._robots is None:
                module = self._backend()
                try:
                    self._robots = read_robots(module.get_parts_and_edges,
                                               self._env_class()._create_base_gym_env)
                except (OSError, TypeError):  # no source to read: every id says so when made
                    self._robots = {}
            return self._robots

    def ids(self) -> Iterable[tuple[str, str]]:
        """Yield ``(id, description)`` for every robot and partition MaMuJoCo names.

        Raises:
            MissingDependencyError: gymnasium-robotics or mujoco is not installed.
        """
        parts = self._backend().get_parts_and_edges
        for robot in self.robots().values():
            if robot.whole:
                yield (f"{self.name}/{robot.name}",
                       f"MaMuJoCo {robot.name}, one agent (the whole robot)")
            sizes = (LISTED_SIZE,) if robot.sized else robot.partitions
            for conf in sizes:
                agents = len(parts(robot.name, conf)[0])
                what = f"MaMuJoCo {robot.name}, {agents} agents (agent_conf {conf!r}"
                what += ", or any '<agents>x<segments per agent>')" if robot.sized else ")"
                yield f"{self.name}/{robot.name}-{conf}", what

    def parse(self, rest: str) -> tuple[Robot, Optional[str]]:
        """Return the robot and the partition (None: the whole robot) that ``rest`` names.

        Raises:
            UnknownEnvError: MaMuJoCo has no such robot, or no such partition of it
                (with the closest ids).
        """
        name, hyphen, conf = rest.partition("-")
        robots = self.robots()
        robot = robots.get(name)
        full = f"{self.name}/{rest}"
        if robot is None:
            known = [i for i, _ in self.ids()]
            near = closest(full, known) or [i for i in known if i.split("/")[1].split("-")[0]
                                             in closest(name, robots)]
            names = ", ".join(robots) or "unreadable here (no source of gymnasium_robotics)"
            detail = f"MaMuJoCo has no robot {name!r}; its robots are {names}."
            raise UnknownEnvError(full, near[:6], detail)
        if not hyphen and robot.whole:
            return robot, None
        if (robot.sized and SIZED.fullmatch(conf)) or conf in robot.partitions:
            return robot, conf
        raise UnknownEnvError(full, self._near(robot, conf), self._partitions_of(robot))

    def _near(self, robot: Robot, conf: str) -> list[str]:
        prefix = f"{self.name}/{robot.name}"
        confs = (LISTED_SIZE,) if robot.sized else robot.partitions
        near = [f"{prefix}-{c}" for c in closest(conf, confs)] or [f"{prefix}-{c}" for c in confs]
        return near + ([prefix] if robot.whole and not conf else [])

    def _partitions_of(self, robot: Robot) -> str:
        ways = [repr(c) for c in robot.partitions]
        if robot.sized:
            ways.append("any '<agents>x<segments per agent>' such as '2x3'")
        text = f"MaMuJoCo splits {robot.name} as {' or '.join(ways)}" if ways else \
            f"MaMuJoCo does not split {robot.name}"
        if robot.whole:
            text += f" (mamujoco/{robot.name}, without a partition, is the whole robot)"
        else:
            text += "; it has no whole-robot form"
        return text + "."

    # -- making envs -------------------------------------------------------------------

    def make(self, rest: str, config: EnvContext) -> Any:
        """Return MaMuJoCo's parallel env for ``rest``, with ``state_space`` and ``render_mode``.

        Raises:
            UnknownEnvError: no such robot or partition (with close matches).
            ConfigError: a key MaMuJoCo does not take for this robot, a key the id
                gives, or a value it cannot take.
            MissingDependencyError: gymnasium-robotics or mujoco is not installed.
        """
        return _completed(self._native(rest, config))

    def _native(self, rest: str, config: Optional[Mapping[str, Any]]) -> Any:
        """MaMuJoCo's parallel env for ``rest``, as its constructor builds it."""
        robot, conf = self.parse(rest)
        kwargs = self._kwargs(rest, robot, conf, config)
        module = self._backend()
        try:
            if not robot.sized:
                return module.parallel_env(robot.name, conf, **kwargs)
            with _one_builder_at_a_time():
                return module.parallel_env(robot.name, conf, **kwargs)
        except TypeError as exc:  # a keyword the MuJoCo env rejects after all
            if "keyword argument" not in str(exc):
                raise
            raise ConfigError(f"{self.name}/{rest}", f"MaMuJoCo's env rejected it ({exc})",
                              accepted=self.accepted(robot)) from exc

    def accepted(self, robot: Robot) -> list[str]:
        """Return the config keys ``robot`` takes: MaMuJoCo's own, then its MuJoCo env's."""
        own = self._own_keys()
        if robot.base is None:
            return own
        gym_id, fixed = robot.base
        return sorted({*own, *(_gymnasium_keys(gym_id) - fixed)})

    def _own_keys(self) -> list[str]:
        params = inspect.signature(self._env_class().__init__).parameters
        return [p.name for p in params.values() if p.name not in ("self", *_IN_THE_ID)
                and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]

    def _kwargs(self, rest: str, robot: Robot, conf: Optional[str],
                config: Optional[Mapping[str, Any]]) -> dict[str, Any]:
        """Check ``config`` for ``robot`` split by ``conf``; return the constructor's keywords."""
        full = f"{self.name}/{rest}"
        kwargs = dict(config or {})
        given = [k for k in _IN_THE_ID if k in kwargs]
        if given:
            raise ConfigError(full, f"{_quoted(given)} is given by the id", unknown=given,
                              fix="Drop it from the config: the id names the robot and its "
                              "partition, mamujoco/<robot>-<partition>. "
                              + self._partitions_of(robot))
        accepted = self.accepted(robot)
        unknown = [k for k in kwargs if k not in accepted]
        if unknown:
            why = ""
            if robot.base is None:
                why = f" (MaMuJoCo passes no keywords on to the MuJoCo env of {robot.name})"
            elif set(unknown) & robot.base[1]:
                why = f" (MaMuJoCo sets {_quoted(sorted(set(unknown) & robot.base[1]))} itself)"
            noun = "key" if len(unknown) == 1 else "keys"
            raise ConfigError(full, f"unknown {noun} {_quoted(unknown)}{why}", unknown=unknown,
                              accepted=accepted)
        _check_values(full, robot, conf, kwargs)
        return kwargs

    # -- lockstep ----------------------------------------------------------------------

    def lockstep(self, rest: str, config: EnvContext, *, episodes: int, seed: int,
                 max_steps: int) -> list[Finding]:
        """Compare the hub env with MaMuJoCo's own parallel env, global state included.

        The native side is a second MaMuJoCo env (with the ``render_mode`` that
        PettingZoo's ``parallel_to_aec`` reads), stepped through PettingZoo's own code
        (see :func:`marlhub.adapters.pettingzoo.compare_with_native`).
        """
        from marlhub.adapters.pettingzoo import compare_with_native

        ctx = dict(config or {})
        robot, conf = self.parse(rest)
        self._kwargs(rest, robot, conf, ctx)  # config errors surface here, before any episode
        return compare_with_native(lambda: self.make(rest, EnvContext(ctx)), episodes=episodes,
                                   seed=seed, max_steps=max_steps, global_state=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


@contextlib.contextmanager
def _one_builder_at_a_time() -> Iterator[None]:
    """Hold a lock, across processes, while MaMuJoCo builds a robot of any size.

    MaMuJoCo writes such a robot's model to one file in its package, named by the
    size, loads it and deletes it: two processes that build one size at once (a
    vector env's workers) delete each other's file.
    """
    uid = getattr(os, "getuid", lambda: "")()
    path = os.path.join(tempfile.gettempdir(), f"marlhub-mamujoco-build{uid}.lock")
    with _BUILDING, open(path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _completed(env: Any) -> Any:
    """Give MaMuJoCo's env the attributes of PettingZoo's API that it leaves out.

    ``state_space`` (PettingZoo's name for the space of ``state()``, which in MaMuJoCo
    is the single-agent env's observation) lets the targets that take a global state
    carry it; ``render_mode`` is the single-agent env's, which ``render()`` draws.
    """
    inner = env.single_agent_env
    if getattr(env, "state_space", None) is None:
        env.state_space = inner.observation_space
    if getattr(env, "render_mode", None) is None:
        env.render_mode = inner.render_mode
    return env


def _check_values(full: str, robot: Robot, conf: Optional[str], kwargs: Mapping[str, Any]) -> None:
    """Refuse values MaMuJoCo would take for something else, or fail on deep inside."""
    if "agent_obsk" in kwargs:
        obsk = kwargs["agent_obsk"]
        if conf is None:
            raise ConfigError(full, "'agent_obsk' has no effect on the whole robot, one agent "
                              "that observes everything", unknown=["agent_obsk"],
                              fix=f"Drop it, or split the robot into agents with a partition "
                              f"(mamujoco/{robot.name}-<partition>).")
        if obsk is None:
            raise ConfigError(full, "agent_obsk=None makes MaMuJoCo one agent over the whole "
                              f"robot, whatever the partition {conf!r} says",
                              fix=f"Use the id mamujoco/{robot.name} for the whole robot, or "
                              "give agent_obsk a whole number of joints (0, 1, 2...).")
        if isinstance(obsk, bool) or not isinstance(obsk, int) or obsk < 0:
            raise ConfigError(full, f"agent_obsk must be a whole number of joints >= 0, got "
                              f"{obsk!r}", fix="Pass 0 (an agent sees its own joints), 1 (the "
                              "default: and their neighbours), 2...")
    steps = kwargs.get("max_episode_steps")
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps < 1):
        raise ConfigError(full, f"max_episode_steps must be a whole number >= 1, got {steps!r}",
                          fix="Pass the number of steps an episode may last, e.g. 100, or omit "
                          "it for the MuJoCo env's own limit.")


def _gymnasium_keys(gym_id: str) -> set[str]:
    """The keys ``gymnasium.make(gym_id, **keys)`` takes, down the env's ``**kwargs`` chain.

    Past the env's own class only keys with a default count: a base class's required
    arguments (MuJoCo's ``model_path``) are the subclass's to pass.
    """
    import gymnasium as gym

    from marlhub.adapters.gymnasium.adapter import accepted_config_keys

    keys = set(accepted_config_keys(gym_id, ()))
    try:
        from gymnasium.envs.registration import load_env_creator

        entry = gym.spec(gym_id).entry_point
        creator = load_env_creator(entry) if isinstance(entry, str) else entry
    except Exception:  # an entry point that does not load: making the env says why
        return keys
    inits = [c.__dict__["__init__"] for c in getattr(creator, "__mro__", ())
             if "__init__" in c.__dict__]
    for depth, init in enumerate(inits):
        params = inspect.signature(init).parameters.values()
        keys |= {p.name for p in params if p.name != "self" and (depth == 0 or p.default is not
                 p.empty) and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return keys


def _quoted(keys: Iterable[str]) -> str:
    return ", ".join(repr(k) for k in keys)
