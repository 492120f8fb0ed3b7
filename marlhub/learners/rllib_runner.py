"""RLlib samples from marlhub's vector envs: an env runner for ``num_envs_per_env_runner`` copies.

RLlib's ``MultiAgentEnvRunner`` vectorizes multi-agent envs only in its own
process (its ``make_vec`` refuses ``gym_env_vectorize_mode="async"``).
:class:`VectorEnvRunner` is that env runner with one change: it builds a
:class:`~marlhub.vector.SyncVectorMultiAgentEnv` or, for
``gym_env_vectorize_mode="async"``, an
:class:`~marlhub.vector.AsyncVectorMultiAgentEnv` whose copies run in worker
processes. The env is found as RLlib finds it (a name registered with
``ray.tune.registry.register_env``, for marlhub ids by
``marlhub.registry.register_with_ray``, or an env class); copy ``i`` gets
RLlib's ``EnvContext`` with ``vector_index=i``. Everything else (episodes,
connectors, metrics) is RLlib's own::

    from marlhub.registry import register_with_ray
    from marlhub.learners.rllib_runner import VectorEnvRunner

    (name,) = register_with_ray("tic_tac_toe")
    config = (PPOConfig().environment(name)
              .env_runners(env_runner_cls=VectorEnvRunner.with_options(num_workers=2),
                           num_envs_per_env_runner=8, gym_env_vectorize_mode="async")
              .multi_agent(...))

Importing this module imports no Ray; ``VectorEnvRunner`` (the module attribute, or
:func:`vector_env_runner_class`) does. Its behaviour lives in :class:`VectorEnvRunnerMixin`.
(It was ``marlhub.vector.rllib``, which still imports: ``marlhub._renamed``.)
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from marlhub.backends import import_backend, mixed_into
from marlhub.vector.base import VectorMultiAgentEnv, adopt_ray_base
from marlhub.vector.sources.in_process import SyncVectorMultiAgentEnv
from marlhub.vector.sources.workers import AsyncVectorMultiAgentEnv

# VectorEnvRunner itself is built on first use (module __getattr__), as it imports Ray.
__all__ = ["VectorEnvRunnerMixin", "env_fns_for_config", "vector_env_runner_class"]

_FEATURE = "marlhub.learners.rllib_runner (RLlib's env runner on marlhub's vector envs)"


def _ray(module: str) -> Any:
    return import_backend(module, package="ray", extra="rllib", feature=_FEATURE)


def _registered_creator(config: Any) -> Any:
    """The creator registered with ``ray.tune.registry.register_env`` under the config's env
    name, or None (the env is a class, a Gymnasium id, or a name nobody registered)."""
    tune_registry = _ray("ray.tune.registry")
    env = config.env
    if not isinstance(env, str) or not tune_registry._global_registry.contains(
            tune_registry.ENV_CREATOR, env):
        return None
    return tune_registry._global_registry.get(tune_registry.ENV_CREATOR, env)


def env_fns_for_config(config: Any, env_context: Any, num_envs: int) -> list[Callable[[], Any]]:
    """Return one picklable ``env_fn`` per copy for an RLlib ``AlgorithmConfig``'s env.

    The env is resolved as RLlib's env runners resolve it: a name registered with
    ``ray.tune.registry.register_env`` gives its creator; anything else goes to
    RLlib's own ``_gym_env_creator`` (an env class, or a Gymnasium id).
    """
    creator = _registered_creator(config)
    if creator is not None:
        return [functools.partial(creator, env_context.copy_with_overrides(vector_index=i))
                for i in range(num_envs)]
    gym_env_creator = _ray("ray.rllib.env.utils")._gym_env_creator
    return [functools.partial(gym_env_creator, env_descriptor=config.env,
                              env_context=env_context.copy_with_overrides(vector_index=i))
            for i in range(num_envs)]


class VectorEnvRunnerMixin:
    """What ``VectorEnvRunner`` adds to RLlib's ``MultiAgentEnvRunner``: a marlhub vector env.

    ``gym_env_vectorize_mode="async"`` runs the ``num_envs_per_env_runner`` copies in
    worker processes; ``"sync"`` (RLlib's default) in the runner itself. Copies are
    reset as RLlib's runner reads them (``autoreset_mode="next_step"``), and a
    masked-out action goes to its copy, whose own policy answers it (``to_rllib``'s
    ``illegal_action``), as in RLlib's runner (``check_masks=False``).

    Attributes:
        vector_options: options of the async env: ``num_workers`` (None: one per core,
            at most one per copy), ``context`` (the ``multiprocessing`` start method),
            ``timeout`` (seconds to wait for the workers in a call; a dead worker
            raises at once either way); set them with :meth:`with_options`.
    """

    vector_options: dict[str, Any] = {}
    # Set by RLlib's runner.
    env: Any
    config: Any
    worker_index: Any
    num_envs: int
    metrics: Any
    _callbacks: Any
    _needs_initial_reset: bool

    @classmethod
    def with_options(cls, *, num_workers: Optional[int] = None, context: Optional[str] = None,
                     timeout: Optional[float] = None) -> type:
        """Return a subclass whose async vector envs use these options.

        Example:
            >>> VectorEnvRunnerMixin.with_options(num_workers=2).vector_options["num_workers"]
            2
        """
        options = {"num_workers": num_workers, "context": context, "timeout": timeout}
        return type(cls.__name__, (cls,), {"vector_options": options,
                                           "__module__": cls.__module__})

    def make_env(self) -> None:
        """Build the vector env of ``num_envs_per_env_runner`` copies (RLlib calls this)."""
        if self.env is not None:
            self.env.close()
            self.env = None
        config = self.config
        env_context = config.env_config
        context_class = _ray("ray.rllib.env.env_context").EnvContext
        if not isinstance(env_context, context_class):
            env_context = context_class(env_context, worker_index=self.worker_index,
                                        num_workers=config.num_env_runners,
                                        remote=config.remote_worker_envs)
        own = _own_vector_env(config, env_context, config.num_envs_per_env_runner)
        if own is not None:  # external/ ids: one server, its concurrent episodes the copies
            self.env = own
        else:
            env_fns = env_fns_for_config(config, env_context, config.num_envs_per_env_runner)
            if not config.disable_env_checking:
                _check_one_copy(env_fns[0])
            self.env = self._vector_env(env_fns)
        self.num_envs = self.env.num_envs
        self._needs_initial_reset = True
        _ray("ray.rllib.callbacks.utils").make_callback(
            "on_environment_created", callbacks_objects=self._callbacks,
            callbacks_functions=config.callbacks_on_environment_created,
            kwargs=dict(env_runner=self, metrics_logger=self.metrics, env=self.env.unwrapped,
                        env_context=env_context))

    def _vector_env(self, env_fns: list[Callable[[], Any]]) -> VectorMultiAgentEnv:
        mode = self.config.gym_env_vectorize_mode
        mode = str(getattr(mode, "value", mode)).lower()
        # The copies' own illegal-action policy (to_rllib's illegal_action) answers
        # masked-out actions, as in RLlib's runner: check_masks=False.
        if mode == "async":
            return AsyncVectorMultiAgentEnv(env_fns, autoreset_mode="next_step",
                                            check_masks=False, **self.vector_options)
        return SyncVectorMultiAgentEnv(env_fns, autoreset_mode="next_step", check_masks=False)


def _own_vector_env(config: Any, env_context: Any, num_envs: int) -> Optional[VectorMultiAgentEnv]:
    """The vector env a registered creator makes itself (``make_vector``: marlhub's
    ``external/`` ids), or None."""
    make_vector = getattr(_registered_creator(config), "make_vector", None)
    return make_vector(env_context, num_envs) if callable(make_vector) else None


def _check_one_copy(env_fn: Callable[[], Any]) -> None:
    """Run RLlib's own checker on one copy made here (the async copies live in workers)."""
    check = _ray("ray.rllib.utils.pre_checks.env").check_multiagent_environments
    env = env_fn()
    try:
        check(getattr(env, "unwrapped", env))
    finally:
        env.close()


@functools.cache
def vector_env_runner_class() -> type:
    """Return ``VectorEnvRunner``: :class:`VectorEnvRunnerMixin` on RLlib's ``MultiAgentEnvRunner``.

    Raises:
        MissingDependencyError: Ray (``ray[rllib]``) is not installed.
    """
    base = _ray("ray.rllib.env.multi_agent_env_runner").MultiAgentEnvRunner
    adopt_ray_base()
    return mixed_into(VectorEnvRunnerMixin, base, name="VectorEnvRunner", module=__name__)


def __getattr__(name: str) -> Any:
    if name == "VectorEnvRunner":
        return vector_env_runner_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
