"""The registry: env ids to creators, families of ids, and envs from installed packages.

* :class:`Registry` (:mod:`~marlhub.registry.registry`): ``register``,
  ``register_family``, ``make``, ``registered``, ``entries``, ``spec``,
  ``unregister``, ``simultaneous_config``; fresh instances are independent.
* The default registry (:mod:`~marlhub.registry.default`) behind the
  module-level :func:`register_env`, :func:`make`, :func:`registered` and
  :func:`simultaneous_config` (the config that has every agent act each step):
  the built-in envs, the built-in families and the ``marlhub.envs`` entry
  points (:mod:`~marlhub.registry.entry_points` documents the convention).
* Ids and which names may be registered: :mod:`~marlhub.registry.ids`.
* :func:`register_with_gymnasium`: an id in Gymnasium's registry as
  ``marlhub/<name>``, in the Tuple convention (:mod:`~marlhub.registry.gymnasium_ids`;
  the plain names are there from the start), and :func:`register_with_ray`: in Ray's.
* :class:`EnvContext`, the config a creator receives; :class:`Family`, the
  protocol of id catalogues.

Example:
    >>> env = make("rock_paper_scissors")
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs)
    ['player1', 'player2']
"""

from __future__ import annotations

from marlhub.adapters.family import Family
from marlhub.context import EnvContext
from marlhub.registry.default import (
    create_default_registry,
    default_registry,
    make,
    register_env,
    registered,
    simultaneous_config,
)
from marlhub.registry.entry_points import ENTRY_POINT_GROUP
from marlhub.registry.gymnasium_ids import register_with_gymnasium
from marlhub.registry.ray import register_with_ray
from marlhub.registry.registry import Registry
from marlhub.registry.spec import EnvSpec, Listing, RegistryProblem

__all__ = [
    "ENTRY_POINT_GROUP",
    "EnvContext",
    "EnvSpec",
    "Family",
    "Listing",
    "Registry",
    "RegistryProblem",
    "create_default_registry",
    "default_registry",
    "make",
    "register_env",
    "register_with_gymnasium",
    "register_with_ray",
    "registered",
    "simultaneous_config",
]
