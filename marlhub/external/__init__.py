"""Simulators that drive: external envs that run their own loop and ask for actions.

In process, subclass :class:`ExternalMultiAgentEnv` and pass it to
:func:`from_external`; over the network, the learner makes
``marlhub.make_vec("external/HOST:PORT", N)`` (it listens) and simulators in
any language connect as gRPC clients (:class:`PolicyClient` in Python; the
wire is ``external.proto``, shipped in this package: :data:`PROTO_PATH`).
Either way the learner gets a hub env or vector env whose copies are the
simulators' concurrent episodes. The guide's "External simulators" page
tells the whole story.
"""

from marlhub.external.client import PolicyClient
from marlhub.external.copies import OFF_POLICY_ACTION, ExternalCopy
from marlhub.external.proto import PROTO_PATH
from marlhub.external.simulator import ExternalMultiAgentEnv, from_external
from marlhub.external.vector import ExternalVectorEnv

__all__ = [
    "OFF_POLICY_ACTION",
    "PROTO_PATH",
    "ExternalCopy",
    "ExternalMultiAgentEnv",
    "ExternalVectorEnv",
    "PolicyClient",
    "from_external",
]
