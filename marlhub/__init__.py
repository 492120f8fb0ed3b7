"""marlhub: one hub between PettingZoo, OpenSpiel, Gymnasium and RLlib's MultiAgentEnv.

Example:
    >>> import marlhub
    >>> env = marlhub.make("rock_paper_scissors")
    >>> obs, infos = env.reset(seed=0)
    >>> sorted(obs)
    ['player1', 'player2']
"""

from marlhub import _renamed
from marlhub.convert import convert
from marlhub.core import (
    ALL,
    COMMON,
    ENV_STATE,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    is_multi_agent_env,
)
from marlhub.episode.prechecked import actions_prechecked
from marlhub.episode.status import actors
from marlhub.errors import (
    ActionError,
    AgentIdError,
    ConfigError,
    ConversionError,
    EntryPointError,
    EnvContractError,
    EnvCreationError,
    EnvRegistrationError,
    EpisodeDroppedError,
    ExternalEnvError,
    ExternalTimeoutError,
    MarlhubError,
    MarlhubWarning,
    MissingDependencyError,
    NotParallelizableError,
    ProtocolError,
    RemoteEnvError,
    RemoteRequestError,
    ResetNeededError,
    TargetError,
    UnknownEnvError,
    VectorEnvError,
    WorkerError,
)
from marlhub.registry import EnvContext, Registry, make, register_env, registered
from marlhub.registry.vector import make_vec
from marlhub.version import __version__
from marlhub.wrappers import GroupAgentsWrapper  # also what with_agent_groups builds

_renamed.install()


__all__ = [
    "ALL",
    "ActionError",
    "AgentID",
    "AgentIdError",
    "COMMON",
    "ConfigError",
    "ConversionError",
    "ENV_STATE",
    "EntryPointError",
    "EnvContext",
    "EnvContractError",
    "EnvCreationError",
    "EnvRegistrationError",
    "EpisodeDroppedError",
    "ExternalEnvError",
    "ExternalTimeoutError",
    "GroupAgentsWrapper",
    "MarlhubError",
    "MarlhubWarning",
    "MissingDependencyError",
    "MultiAgentDict",
    "MultiAgentEnv",
    "NotParallelizableError",
    "ProtocolError",
    "Registry",
    "RemoteEnvError",
    "RemoteRequestError",
    "ResetNeededError",
    "TargetError",
    "UnknownEnvError",
    "VectorEnvError",
    "WorkerError",
    "__version__",
    "actions_prechecked",
    "actors",
    "convert",
    "is_multi_agent_env",
    "make",
    "make_vec",
    "register_env",
    "registered",
]
