"""Adapters between the hub protocol and foreign env APIs.

One module per foreign API, each a symmetric pair ``from_x`` / ``to_x``; each
imports its backend only when called. :func:`to_hub` turns any supported env
object into a hub env, asking each adapter module whether the object is of its
kind; those tests look at the object's type and never import a backend the
object itself did not already bring in.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors()
    >>> to_hub(env) is env
    True
"""

from __future__ import annotations

import importlib
from typing import Any

from marlhub.core import MultiAgentEnv, is_multi_agent_env, missing_protocol_members
from marlhub.errors import ProtocolError

__all__ = ["SOURCE_KINDS", "to_hub"]

#: ``(adapter module, "is it of this kind?" function, converter)`` for each
#: foreign API that :func:`to_hub` accepts, tried in order.
SOURCE_KINDS: list[tuple[str, str, str]] = [
    ("marlhub.adapters.pettingzoo", "is_pettingzoo_env", "from_pettingzoo"),
    ("marlhub.adapters.openspiel", "is_openspiel_object", "from_openspiel"),
    # Only marlhub's own RLlib views are unwrapped; other RLlib envs are hub envs
    # by duck typing and reach the conformance suite unrepaired.
    ("marlhub.adapters.rllib", "is_rllib_view_of_hub", "from_rllib"),
    ("marlhub.adapters.gymnasium", "is_gymnasium_env", "from_gymnasium"),
]


def to_hub(obj: Any, **options: Any) -> Any:
    """Return ``obj`` as a hub env: itself if it follows the protocol, else adapted.

    Args:
        obj: a hub env, an RLlib ``MultiAgentEnv``, or an env of a supported API.
        options: passed to the adapter's ``from_x`` when one is needed.

    Raises:
        ProtocolError: ``obj`` is of no kind marlhub can adapt.
    """
    if isinstance(obj, MultiAgentEnv):
        return obj
    # Foreign kinds first: a PettingZoo env has reset/step/possible_agents too,
    # so duck typing alone would take it for a hub env.
    for module_name, test_name, convert_name in SOURCE_KINDS:
        module = importlib.import_module(module_name)
        if getattr(module, test_name)(obj):
            return getattr(module, convert_name)(obj, **options)
    if is_multi_agent_env(obj):
        return obj
    raise ProtocolError(
        obj,
        missing_protocol_members(obj),
        expected="a MultiAgentEnv or an env of a supported API (PettingZoo AEC or parallel, "
        "an OpenSpiel game or state)",
    )
