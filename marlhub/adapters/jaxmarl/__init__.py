"""JaxMARL -> hub: JAX multi-agent envs as hub envs, batched under ``jax.vmap``, and ``jaxmarl/``.

* :func:`from_jaxmarl` gives a JaxMARL env (``jaxmarl.make(...)``) as a
  :class:`~marlhub.adapters.jaxmarl.adapter.JaxMarlHubEnv` (``adapter.py``), its
  keys derived as JaxMARL's examples derive them (``functions.py``).
* The ``jaxmarl/`` registry family (``family.py``) lists JaxMARL's own registry
  (``jaxmarl/MPE_simple_spread_v3``, ``jaxmarl/hanabi``, ``jaxmarl/SMAX`` ...), each
  env made once per name and config (``natives.py``);
  ``marlhub.make_vec("jaxmarl/<env>", N)`` is ONE batch of ``N`` copies under
  ``jax.vmap`` and ``jit`` (``batched.py``); ``--against-native`` compares with
  JaxMARL's own ``step`` (``lockstep.py``).

JaxMARL needs Python 3.11 or newer (pip extra ``jaxmarl``); importing this
package imports neither JAX nor JaxMARL.

Example:
    >>> import marlhub
    >>> env = marlhub.make("jaxmarl/MPE_simple_spread_v3")
    >>> type(env).__name__, env.possible_agents
    ('JaxMarlHubEnv', ['agent_0', 'agent_1', 'agent_2'])
"""

from __future__ import annotations

import contextlib
import importlib
import io
from typing import Any

from marlhub.backends import derives_from, import_backend

__all__ = ["from_jaxmarl", "is_jaxmarl_env"]

_JAXMARL_BASE = ("jaxmarl.environments.multi_agent_env", "MultiAgentEnv")


def is_jaxmarl_env(obj: Any) -> bool:
    """Tell whether ``obj`` is a JaxMARL ``MultiAgentEnv`` (never imports JaxMARL).

    Example:
        >>> from marlhub.envs import TicTacToe
        >>> is_jaxmarl_env(TicTacToe())
        False
    """
    return derives_from(obj, [_JAXMARL_BASE])


def from_jaxmarl(env: Any) -> Any:
    """Return a JaxMARL env as a hub env (``JaxMarlHubEnv``).

    Raises:
        MissingDependencyError: JaxMARL is not installed.
    """
    import_jaxmarl("from_jaxmarl()")
    return importlib.import_module("marlhub.adapters.jaxmarl.adapter").JaxMarlHubEnv(env)


def import_jaxmarl(feature: str) -> Any:
    """Import JaxMARL for ``feature``, or raise MissingDependencyError naming the extra.

    JaxMARL 0.2 prints two lines about its git submodules when imported; they go nowhere.
    """
    with contextlib.redirect_stdout(io.StringIO()):
        return import_backend("jaxmarl", package="jaxmarl", extra="jaxmarl", feature=feature,
                              provides=("jax",))
