"""hub -> RLlib: :class:`HubRLlibEnv`, a real ``ray.rllib`` ``MultiAgentEnv`` around a hub env.

The class derives from Ray's, so it is built on first use
(:func:`hub_rllib_env_class`, or the module attribute ``HubRLlibEnv``): importing
this module imports no Ray. Its behaviour lives in :class:`HubRLlibEnvMixin`.

Example:
    >>> "ray" in HubRLlibEnvMixin.__module__
    False
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import gymnasium as gym

from marlhub.adapters.rllib.carry import RewardCarrier
from marlhub.adapters.rllib.guard import EpisodeGuard
from marlhub.adapters.rllib.masking import MaskLayout, mask_into_infos
from marlhub.backends import mixed_into
from marlhub.contract.transition import SpaceCache
from marlhub.core import ALL, COMMON, AgentID, MultiAgentDict, ResetResult, StepResult
from marlhub.rewards import reward_space_of, vector_reward_agents
from marlhub.wrappers.illegal import IllegalActionWrapper

__all__ = ["DEFAULT_ILLEGAL_ACTION", "HubRLlibEnvMixin", "hub_rllib_env_class"]

#: What a masked-out action does unless told otherwise: RLlib samples from the whole
#: action space (its env checker too), so the hub's ActionError would stop it.
DEFAULT_ILLEGAL_ACTION = "terminate"


class HubRLlibEnvMixin:
    """A hub env as an instance of RLlib's own ``MultiAgentEnv`` class (HubRLlibEnv's code).

    ``reset``, ``step``, ``render`` and ``close`` go straight to the hub env; other
    public attributes are read from it. ``observation_spaces`` and
    ``action_spaces`` hold every possible agent's spaces, and
    ``observation_space`` / ``action_space`` the ``Dict`` of them.

    ``agents`` is the hub env's live agents plus the agents that the last step
    reported done: RLlib's own checker
    (``ray.rllib.utils.pre_checks.env.check_multiagent_environments``, run by
    every ``MultiAgentEnvRunner`` when it builds its env) wants every key of a
    step's results to be in ``agents``, including the agent that the step
    terminated. The hub env itself keeps the contract's meaning (no done agent).

    Args:
        env: the hub env.
        check: judge every reset and step against the rules whose breach makes
            RLlib raise (see :mod:`marlhub.adapters.rllib.guard`) and raise
            :class:`~marlhub.errors.EnvContractError` naming the rule.
        illegal_action: what a masked-out action does (RLlib samples from the
            whole action space): ``"terminate"``, ``"substitute"`` or ``"raise"``
            (see :class:`~marlhub.wrappers.illegal.IllegalActionWrapper`).
        mask_observation: give observations as ``{"observations", "action_mask"}``
            for RLlib's action-masking RLModule (:mod:`~marlhub.adapters.rllib.masking`).
        carry_rewards: shape the steps so that RLlib's episodes keep every reward
            (:mod:`~marlhub.adapters.rllib.carry`): rewards of an agent that has not
            acted yet come with its first transition, an agent that ends without a
            final observation gets its last one again, and an agent paid but
            never asked to act gets one last observation to act on (its action is
            dropped) that carries its reward.

    Attributes:
        env: the hub env.
    """

    #: Tells :func:`marlhub.adapters.rllib.from_rllib` to hand back ``env`` itself.
    _marlhub_view_of_hub = True
    # Provided by gymnasium.Env in the built class.
    metadata: dict[str, Any]
    render_mode: Optional[str]

    def __init__(self, env: Any, *, check: bool = True,
                 illegal_action: str = DEFAULT_ILLEGAL_ACTION,
                 mask_observation: bool = False, carry_rewards: bool = True) -> None:
        self.__dict__["env"] = env
        self.__dict__["_initialized"] = False
        self.__dict__["_driven"] = (env if illegal_action == "raise"
                                    else IllegalActionWrapper(env, illegal_action))
        possible = list(env.possible_agents)
        self._agent_ids = set(possible)
        self._named_last: list[AgentID] = []
        super().__init__()
        self.action_spaces = {a: env.get_action_space(a) for a in possible}
        self._layouts = ({a: MaskLayout(env.get_observation_space(a), self.action_spaces[a])
                          for a in possible} if mask_observation else {})
        self.observation_spaces = {
            a: self._layouts[a].space if mask_observation else env.get_observation_space(a)
            for a in possible
        }
        self.observation_space = gym.spaces.Dict(self.observation_spaces)
        self.action_space = gym.spaces.Dict(self.action_spaces)
        self._guard: Optional[EpisodeGuard] = (
            EpisodeGuard(type(env).__name__, possible, SpaceCache(env)) if check else None
        )
        self._carrier: Optional[RewardCarrier] = RewardCarrier(
            vector_reward_agents(env)) if carry_rewards else None
        self.metadata = getattr(env, "metadata", self.metadata)
        self.render_mode = getattr(env, "render_mode", None)
        self._initialized = True

    # -- agents (views of the hub env's) -------------------------------------------

    @property
    def possible_agents(self) -> list[AgentID]:
        """Every agent that may ever appear: the hub env's ``possible_agents``."""
        return list(self.env.possible_agents)

    @possible_agents.setter
    def possible_agents(self, value: Any) -> None:
        self._refuse_assignment("possible_agents")

    @property
    def agents(self) -> list[AgentID]:
        """The hub env's live agents, then the agents the last step reported done."""
        live = list(self._driven.agents)
        if self._named_last:
            live += [a for a in self._named_last if a not in live]
        return live

    @agents.setter
    def agents(self, value: Any) -> None:
        self._refuse_assignment("agents")

    def get_reward_space(self, agent_id: AgentID) -> Optional[gym.Space]:
        """The hub env's reward space of ``agent_id``: None for one number, else the space of
        its reward arrays (multi-objective envs), which this view passes on unchanged."""
        return reward_space_of(self.env, agent_id)

    def _refuse_assignment(self, name: str) -> None:
        # RLlib's base __init__ fills in empty agent lists; the hub env owns them.
        if self.__dict__.get("_initialized"):
            raise AttributeError(
                f"{name} of a HubRLlibEnv is read from the hub env it wraps and cannot be "
                f"assigned; change {name} on the hub env (.env) instead."
            )

    # -- the episode --------------------------------------------------------------

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the hub env; return its ``(obs, infos)``."""
        obs, infos = self._driven.reset(seed=seed, options=options)
        obs, infos = self._present(obs, infos)
        self._named_last = []
        if self._guard is not None:
            self._guard.on_reset(obs, infos, agents=list(self._driven.agents))
        if self._carrier is not None:
            self._carrier.on_reset(obs)
        return obs, infos

    def _present(self, obs: MultiAgentDict, infos: MultiAgentDict) -> tuple[Any, Any]:
        """Masks into infos, and observations in the masked layout when asked for."""
        with_masks = mask_into_infos(obs, infos)
        if self._layouts:
            obs = {a: self._layouts[a].observation(o, with_masks.get(a)) for a, o in obs.items()}
        return obs, with_masks

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Pickles of 0.1.0 have none of these: they stepped the hub env itself, unmasked and
        # without carrying rewards.
        state.setdefault("_driven", state["env"])
        state.setdefault("_layouts", {})
        state.setdefault("_carrier", None)
        self.__dict__.update(state)

    def step(self, action_dict: MultiAgentDict) -> StepResult:
        """Step the hub env; return its ``(obs, rewards, terminateds, truncateds, infos)``."""
        carrier = self._carrier
        if carrier is not None and carrier.deferred_end:
            result = carrier.finish(action_dict)
        else:
            result = self._step_env(action_dict)
            if carrier is not None:
                result = carrier.on_step(action_dict, result)
        named: dict[AgentID, None] = {}
        for table in result:
            named.update(dict.fromkeys(table))
        named.pop(ALL, None)
        named.pop(COMMON, None)
        self._named_last = list(named)
        return result

    def _step_env(self, action_dict: MultiAgentDict) -> StepResult:
        """Step the hub env (without the actions of agents it is done with); judge the step."""
        guard = self._guard
        before = list(self._driven.agents) if guard is not None else None
        sent = action_dict if self._carrier is None else self._carrier.actions_for_env(action_dict)
        obs, rewards, terminateds, truncateds, infos = self._driven.step(sent)
        obs, infos = self._present(obs, infos)
        result = (obs, rewards, terminateds, truncateds, infos)
        if guard is not None:
            guard.on_step(
                sent, result, agents_before=before,
                agents_after=list(self._driven.agents),
                possible_now=self.env.possible_agents,
            )
        return result

    def render(self) -> Any:
        """Render the hub env."""
        return self.env.render()

    def close(self) -> None:
        """Close the hub env."""
        self.env.close()

    def __getattr__(self, name: str) -> Any:
        # Only called for names not found on the wrapper: read public ones from the hub env.
        env = self.__dict__.get("env")
        if env is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(env, name)

    def __repr__(self) -> str:
        return f"<HubRLlibEnv of {self.env!r}>"


@functools.cache
def hub_rllib_env_class() -> type:
    """Return ``HubRLlibEnv``: :class:`HubRLlibEnvMixin` on RLlib's ``MultiAgentEnv`` (imports Ray).

    Raises:
        ImportError: Ray (``ray[rllib]``) is not installed.
    """
    from ray.rllib.env.multi_agent_env import (  # type: ignore[import-not-found, unused-ignore]
        MultiAgentEnv as RLlibMultiAgentEnv,
    )

    return mixed_into(HubRLlibEnvMixin, RLlibMultiAgentEnv, name="HubRLlibEnv", module=__name__)


def __getattr__(name: str) -> Any:
    if name == "HubRLlibEnv":
        return hub_rllib_env_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
