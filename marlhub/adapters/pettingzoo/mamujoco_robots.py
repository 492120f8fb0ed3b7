"""MaMuJoCo's robots and their partitions, read from MaMuJoCo's own code.

MaMuJoCo (``gymnasium_robotics.mamujoco_v1``) keeps no table of what it can
build: its ``get_parts_and_edges(label, partitioning)`` is one branch per robot
(``if label in ["HalfCheetah"]:``) that tests the partitions it knows
(``partitioning == "6x1"``), and its env's ``_create_base_gym_env`` is one branch
per robot that builds the single-agent MuJoCo env the agents share. This module
reads both functions' source (with :mod:`ast`, nothing is run), so a robot or a
partition added in a new release is there without a change here:

* the robots: every name either function branches on;
* a robot's partitions: the strings its ``get_parts_and_edges`` branch compares
  ``partitioning`` with (``"2x3"``, ``"6x1"``; ``"9|8"`` for Humanoid);
* *sized* robots, whose branch splits ``partitioning`` at ``"x"``
  (ManySegmentAnt, ManySegmentSwimmer): any ``<agents>x<segments per agent>``;
* *whole* robots, which MaMuJoCo also builds with ``agent_conf=None``, the whole
  robot as one agent: those whose branch tests ``partitioning is None``, and those
  with no branch (InvertedPendulum: MaMuJoCo has no partition of it);
* where the config's remaining keywords go: the Gymnasium id the robot's
  ``_create_base_gym_env`` branch passes to ``gymnasium.make(..., **kwargs)``
  (``"HalfCheetah-v5"``, ``"Ant-v5"`` for ManySegmentAnt, with the keywords MaMuJoCo
  sets itself, such as ``xml_file``), or None where the branch passes them nowhere.

Example:
    >>> from gymnasium_robotics.envs.multiagent_mujoco import mujoco_multi, obsk
    >>> robots = read_robots(obsk.get_parts_and_edges,
    ...                      mujoco_multi.MultiAgentMujocoEnv._create_base_gym_env)
    >>> robots["HalfCheetah"].partitions, robots["HalfCheetah"].whole
    (('2x3', '6x1'), True)
    >>> robots["ManySegmentAnt"].sized, robots["ManySegmentAnt"].base[0]
    (True, 'Ant-v5')
    >>> sorted(robots["ManySegmentAnt"].base[1])  # the keywords MaMuJoCo sets itself
    ['render_mode', 'xml_file']
    >>> robots["InvertedPendulum"].partitions, robots["CoupledHalfCheetah"].base
    ((), None)
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional

__all__ = ["SIZED", "Robot", "read_robots"]

#: A sized robot's partition: ``<agents>x<segments per agent>``, both at least 1.
SIZED = re.compile(r"[1-9][0-9]*x[1-9][0-9]*")


@dataclass(frozen=True)
class Robot:
    """One robot MaMuJoCo builds, and how it may be split into agents.

    Attributes:
        name: MaMuJoCo's name of the robot (its ``scenario``).
        partitions: the ``agent_conf`` values MaMuJoCo names for it.
        sized: it takes any ``<agents>x<segments per agent>`` (:data:`SIZED`).
        whole: MaMuJoCo builds it with ``agent_conf=None``, as one agent.
        base: ``(Gymnasium id, keywords MaMuJoCo sets itself)`` of the
            ``gymnasium.make`` that gets the config's other keywords, or None
            where MaMuJoCo passes them nowhere.
    """

    name: str
    partitions: tuple[str, ...] = ()
    sized: bool = False
    whole: bool = False
    base: Optional[tuple[str, frozenset[str]]] = None


def read_robots(parts_and_edges: Callable[..., Any],
                create_base_env: Callable[..., Any]) -> dict[str, Robot]:
    """Read every robot from MaMuJoCo's ``get_parts_and_edges`` and ``_create_base_gym_env``.

    Returns:
        Robot name -> :class:`Robot`, sorted by name.

    Raises:
        OSError: the functions' source is not installed (a package of bytecode only).
    """
    found: dict[str, dict[str, Any]] = {}
    for labels, body in _branches(parts_and_edges, "label"):
        partitions, sized, whole = _partitioning(body)
        for label in labels:
            found.setdefault(label, {}).update(partitions=partitions, sized=sized, whole=whole)
    for labels, body in _branches(create_base_env, "scenario"):
        base = _gymnasium_make(body)
        for label in labels:
            entry = found.setdefault(label, {"whole": True})  # no partition: only whole
            if base is not None:
                gym_id, fixed = base
                entry["base"] = (gym_id(label), fixed)
    return {name: Robot(name, **found[name]) for name in sorted(found)}


def _branches(function: Callable[..., Any], variable: str) -> Iterator[tuple[list[str], list]]:
    """``(names, body)`` of each ``if <variable> in [names]:`` (or ``== name``) of ``function``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    names_of = getattr(function, "__globals__", {})
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        test = node.test
        if not (isinstance(test, ast.Compare) and _is_name(test.left, variable)
                and len(test.ops) == 1 and isinstance(test.ops[0], (ast.In, ast.Eq))):
            continue
        names = _strings(test.comparators[0], names_of)
        if names:
            yield names, node.body


def _strings(node: ast.expr, names_of: dict[str, Any]) -> list[str]:
    """The strings a literal (or a module-level list named by the expression) holds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Name):
        value = names_of.get(node.id)
        if isinstance(value, (list, tuple)):
            return [v for v in value if isinstance(v, str)]
    return []


def _partitioning(body: list) -> tuple[tuple[str, ...], bool, bool]:
    """What a ``get_parts_and_edges`` branch accepts: (named partitions, sized, whole)."""
    partitions: list[str] = []
    sized = whole = False
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(node, ast.Compare) and _is_name(node.left, "partitioning"):
            op, right = node.ops[0], node.comparators[0]
            if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) \
                    and isinstance(right.value, str) and right.value not in partitions:
                partitions.append(right.value)
            whole |= isinstance(op, ast.Is) and isinstance(right, ast.Constant) \
                and right.value is None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "split" and _is_name(node.func.value, "partitioning"):
            sized = True
    return tuple(partitions), sized, whole


def _gymnasium_make(body: list) -> Optional[tuple[Callable[[str], str], frozenset[str]]]:
    """The ``gymnasium.make(id, ..., **kwargs)`` of a ``_create_base_gym_env`` branch.

    Returns ``(robot name -> Gymnasium id, keywords the call sets)``, or None when the
    branch hands ``**kwargs`` to no ``make``.
    """
    for node in (n for stmt in body for n in ast.walk(stmt)):
        if not (isinstance(node, ast.Call) and _called(node) == "make" and node.args
                and any(k.arg is None for k in node.keywords)):
            continue
        fixed = frozenset(k.arg for k in node.keywords if k.arg is not None)
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            gym_id = first.value
            return (lambda robot: gym_id), fixed
        if isinstance(first, ast.JoinedStr):  # f"{scenario}-v5"
            parts = first.values
            return (lambda robot: "".join(
                str(p.value) if isinstance(p, ast.Constant) else robot for p in parts)), fixed
    return None


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
