"""The hub in one call: any supported env to any supported API.

:func:`convert` detects what it was given (a hub env, an RLlib ``MultiAgentEnv``,
a PettingZoo AEC or parallel env, an OpenSpiel game or state, a Gymnasium env, a
TorchRL env that :func:`~marlhub.adapters.torchrl.to_torchrl` made),
brings it to the hub, and hands it out in the requested API. Converting to the
API an env came from unwraps instead of stacking adapters:
``convert(pz_env, to="pettingzoo.aec") is pz_env``. The targets are those of
:data:`marlhub.adapters.apis.TARGETS`.

Example:
    >>> import marlhub
    >>> env = marlhub.convert(marlhub.make("rock_paper_scissors"), to="marlhub")
    >>> type(env).__name__
    'RockPaperScissors'
    >>> marlhub.convert(env, to="dm_env")
    Traceback (most recent call last):
    ...
    marlhub.errors.ConversionError: Cannot convert to 'dm_env': the supported targets are 'marlhub', 'pettingzoo.aec', 'pettingzoo.parallel', 'openspiel', 'rllib', 'gymnasium', 'gymnasium.tuple', 'torchrl'; pass one of them as `to`.
"""

from __future__ import annotations

from marlhub.adapters.apis import TARGETS, convert

__all__ = ["TARGETS", "convert"]
