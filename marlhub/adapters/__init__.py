"""Adapters between the hub protocol and foreign env APIs.

One module per foreign API, each a symmetric pair ``from_x`` / ``to_x``; each
imports its backend only when called. :func:`to_hub` turns any supported env
object into a hub env, detecting its kind without importing a backend that
the object itself did not already bring in.

Example:
    >>> from marlhub.envs import RockPaperScissors
    >>> env = RockPaperScissors()
    >>> to_hub(env) is env
    True
"""

from __future__ import annotations

from typing import Any

from marlhub.core import is_multi_agent_env, missing_protocol_members
from marlhub.errors import ProtocolError

__all__ = ["to_hub"]


def to_hub(obj: Any) -> Any:
    """Return ``obj`` as a hub env: itself if it follows the protocol, else adapted.

    Raises:
        ProtocolError: ``obj`` is of no kind marlhub can adapt.
    """
    if is_multi_agent_env(obj):
        return obj
    raise ProtocolError(
        obj,
        missing_protocol_members(obj),
        expected="a MultiAgentEnv (or an env of a supported API)",
    )
