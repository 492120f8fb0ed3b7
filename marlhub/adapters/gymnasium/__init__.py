"""Gymnasium <-> hub: single-agent envs as agents, and hub envs as single-agent envs.

* :func:`make_multi_agent` (RLlib's function of that name) and
  :func:`from_gymnasium`: Gymnasium envs into the hub (``adapter.py``).
* :func:`to_gymnasium`: one agent's view of a hub env, the others driven by
  policies, or with ``joint=True`` all agents at once (``view.py``).
* :func:`compare_with_native`: the adapted env against native Gymnasium envs,
  step by step (``lockstep.py``); :class:`GymnasiumFamily` is the
  ``gymnasium/`` registry family (``family.py``).

Converting back unwraps: ``to_gymnasium(from_gymnasium(e)) is e``, and a view
made by :func:`to_gymnasium` goes back to its hub env where nothing is lost
(the joint view, or one agent's view of a one-agent env). Semantics:
docs/guides/gymnasium.rst.

Example:
    >>> import gymnasium as gym
    >>> native = gym.make("CartPole-v1")
    >>> to_gymnasium(from_gymnasium(native)) is native
    True
"""

from __future__ import annotations

from marlhub.adapters.gymnasium.adapter import (
    GymnasiumMultiEnv,
    accepted_config_keys,
    from_gymnasium,
    is_gymnasium_env,
    make_gymnasium_env,
    make_multi_agent,
)
from marlhub.adapters.gymnasium.family import GymnasiumFamily
from marlhub.adapters.gymnasium.lockstep import compare_with_native
from marlhub.adapters.gymnasium.view import (
    AgentView,
    JointView,
    Policies,
    Policy,
    to_gymnasium,
)

__all__ = [
    "AgentView",
    "GymnasiumFamily",
    "GymnasiumMultiEnv",
    "JointView",
    "Policies",
    "Policy",
    "accepted_config_keys",
    "compare_with_native",
    "from_gymnasium",
    "is_gymnasium_env",
    "make_gymnasium_env",
    "make_multi_agent",
    "to_gymnasium",
]
