"""Gymnasium <-> hub: single-agent envs as agents, and hub envs as single-agent envs.

* :func:`make_multi_agent` (RLlib's function of that name) and
  :func:`from_gymnasium`: Gymnasium envs into the hub (``adapter.py``).
* :func:`to_gymnasium`: one agent's view of a hub env, the others driven by
  policies, or with ``joint=True`` all agents at once (``view.py``).
* :func:`from_gymnasium_tuple` and :func:`to_gymnasium_tuple`: the Tuple
  convention of EPyMARL, ``lbforaging`` and ``rware`` (one env for the team,
  ``Tuple`` spaces over agents), in (``tuple_agents.py``) and out (``tuple_view.py``).
* :func:`compare_with_native` and :func:`compare_tuple_with_native`: the adapted
  env against native Gymnasium envs, step by step (``lockstep.py``);
  :class:`GymnasiumFamily` is the ``gymnasium/`` registry family (``family.py``),
  and ``lbforaging/`` and ``rware/`` are families of Tuple envs (``family_tuple.py``).

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
from marlhub.adapters.gymnasium.lockstep import compare_tuple_with_native, compare_with_native
from marlhub.adapters.gymnasium.tuple_agents import (
    TupleAgentsEnv,
    from_gymnasium_tuple,
    is_tuple_team,
)
from marlhub.adapters.gymnasium.tuple_view import TupleView, to_gymnasium_tuple
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
    "TupleAgentsEnv",
    "TupleView",
    "accepted_config_keys",
    "compare_tuple_with_native",
    "compare_with_native",
    "from_gymnasium",
    "from_gymnasium_tuple",
    "is_gymnasium_env",
    "is_tuple_team",
    "make_gymnasium_env",
    "make_multi_agent",
    "to_gymnasium",
    "to_gymnasium_tuple",
]
