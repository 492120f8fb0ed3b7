"""TorchRL -> hub: :class:`TorchRLHubEnv`, any TorchRL multi-agent ``EnvBase`` as a hub env.

Where each agent's data sits is :mod:`~marlhub.adapters.torchrl.agents`'s. A
hub step builds one action tensordict (actors' actions; zeros for agents that
do not act, which TorchRL's masked envs ignore), calls the env's own
``step`` and reads the ``"next"`` tensordict back; the env's state carries on
through TorchRL's ``step_mdp``, as in TorchRL's own ``rollout``.

Example:
    >>> import marlhub
    >>> from marlhub.adapters.torchrl import to_torchrl
    >>> env = TorchRLHubEnv(to_torchrl(marlhub.make("openspiel/tic_tac_toe")))
    >>> obs, infos = env.reset(seed=0)
    >>> list(obs), obs["player_0"]["action_mask"].tolist()
    (['player_0'], [1, 1, 1, 1, 1, 1, 1, 1, 1])
    >>> obs, rewards, terminateds, truncateds, infos = env.step({"player_0": 4})
    >>> list(obs), rewards, terminateds["__all__"], obs["player_1"]["action_mask"][4]
    (['player_1'], {'player_0': 0.0, 'player_1': 0.0}, False, np.int8(0))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from marlhub.adapters.torchrl.agents import GroupLayout, TorchRLAgents
from marlhub.core import (
    ALL,
    COMMON,
    AgentID,
    MultiAgentDict,
    MultiAgentEnv,
    ResetResult,
    StepResult,
)
from marlhub.episode.actions import ActionChecker, check_keys
from marlhub.episode.status import EPISODE_OVER, NOT_RESET, require_running
from marlhub.errors import ConfigError
from marlhub.spaces import raw_action_mask

__all__ = ["TorchRLHubEnv"]


class TorchRLHubEnv(MultiAgentEnv):
    """A TorchRL multi-agent env (``EnvBase`` with a ``group_map``) as a hub env.

    * **Agents** are the ``group_map``'s own names (``"<group>_<i>"`` when two
      groups share a name); spaces come from the env's specs
      (:mod:`~marlhub.adapters.torchrl.spec_spaces`): ``Categorical`` and
      ``OneHot`` actions are ``Discrete``, bounded ones ``Box``.
    * **Who acts**: the agents whose ``(group, "mask")`` is True, or every agent
      not done when the group has no mask; only they get observations.
    * **Rewards** go to every agent live in the step, idle ones included, as
      the env paid them (a root ``"reward"`` goes to every agent).
    * **Done**: an agent whose own flags turn True leaves; the root ``"done"``
      (or every agent gone) ends the episode with the root's flags.
    * **Infos**: ``(group, "info")`` entries per agent; root observation entries
      (a global ``"state"``) under ``infos["__common__"]``.
    * **Seeds**: ``reset(seed=s)`` calls the env's ``set_seed(s)`` first.

    Args:
        env: the TorchRL env, with batch size ``()`` or ``(1,)``.

    Raises:
        ConfigError: a batched env (``batch_size=[n]``, n > 1): the hub env is one copy.
        ProtocolError: the env has no ``group_map``.
    """

    def __init__(self, env: Any) -> None:
        super().__init__()
        batch = tuple(env.batch_size)
        if batch not in ((), (1,)):
            raise ConfigError(
                "from_torchrl", f"the env is batched (batch_size={list(batch)}): it holds "
                f"{batch} copies, and a hub env is one",
                fix="Make the env with one copy (VmasEnv(..., num_envs=1), no SerialEnv / "
                    "ParallelEnv around it) and batch hub envs with marlhub.make_vec.")
        self.torchrl_env = env
        self._layout = TorchRLAgents(env)
        self._batched = batch == (1,)
        self.possible_agents = list(self._layout.agents)
        self.agents = []
        self.observation_spaces = dict(self._layout.observation_spaces)
        self.action_spaces = dict(self._layout.action_spaces)
        self._checker = ActionChecker(self.action_spaces.__getitem__)
        self._name = type(env).__name__
        self._cannot_step: Optional[str] = NOT_RESET
        self._td: Any = None
        self._finished: set[AgentID] = set()
        self._actors: list[AgentID] = []
        self._obs: MultiAgentDict = {}
        self._infos: dict[Any, Any] = {}
        zeros = self._unbatch(env.full_action_spec.zero())
        self._zero_actions = {name: zeros.get(key).numpy()
                              for name, key in self._layout.action_keys.items()}

    # -- the episode ------------------------------------------------------------

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the TorchRL env (``set_seed(seed)`` first when a seed is given)."""
        super().reset(seed=seed)
        if seed is not None:
            self.torchrl_env.set_seed(seed)
        # Options go to the env's own reset (PettingZooWrapper passes them on), when given.
        td = self.torchrl_env.reset(options=options) if options else self.torchrl_env.reset()
        self._td = td
        self._finished = set()
        self.agents = list(self.possible_agents)
        obs, infos, _ = self._read(self._unbatch(td), rewards=False)
        self._cannot_step = None if obs else EPISODE_OVER
        return obs, infos

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Apply the actors' actions in one TorchRL step.

        Raises:
            ResetNeededError: before ``reset()`` or after ``__all__``.
            ActionError: a missing or extra agent, or an action outside its space or
                mask; nothing was applied.
        """
        require_running(self._name, self._cannot_step)
        check_keys(self._name, action_dict, actors=self._actors,
                   possible_agents=self.possible_agents)
        actions = {a: self._checker.check(a, action_dict[a],
                                          raw_action_mask(self._obs.get(a), self._infos.get(a)))
                   for a in self._actors}
        td = self._td
        for name, group in self._layout.groups.items():
            td.set(self._layout.action_keys[name], self._action_tensor(group, actions))
        from torchrl.envs.utils import step_mdp

        out = self.torchrl_env.step(td)
        nxt = self._unbatch(out.get("next"))
        self._td = step_mdp(out)
        obs, infos, (rewards, terminateds, truncateds) = self._read(nxt, rewards=True)
        return obs, rewards, terminateds, truncateds, infos

    def close(self) -> None:
        """Close the TorchRL env."""
        if not getattr(self.torchrl_env, "is_closed", True):
            self.torchrl_env.close()

    # -- tensordicts -------------------------------------------------------------

    def _unbatch(self, td: Any) -> Any:
        return td[0] if self._batched else td

    def _action_tensor(self, group: GroupLayout, actions: Mapping[AgentID, Any]) -> Any:
        """The group's action tensor: the actors' encoded actions, zeros elsewhere."""
        import torch

        array = self._zero_actions[group.name].copy()
        for i, agent in enumerate(group.agents):
            if agent in actions:
                array[i] = np.asarray(group.codecs[i][1].encode(actions[agent])).reshape(
                    array.shape[1:])
        tensor = torch.from_numpy(array)
        return tensor.unsqueeze(0) if self._batched else tensor

    def _read(self, td: Any, *, rewards: bool) -> tuple[MultiAgentDict, dict[Any, Any], Any]:
        """Observations, infos and (for a step) rewards and done dicts of ``td``."""
        root_flags = {k: bool(td.get(k).any()) for k in self._layout.root_done_keys}
        live = [a for a in self.possible_agents if a not in self._finished]
        obs: MultiAgentDict = {}
        infos: dict[Any, Any] = {}
        paid: dict[AgentID, float] = {}
        terms: dict[Any, bool] = {}
        truncs: dict[Any, bool] = {}
        actors: list[AgentID] = []
        root_reward = (float(td.get("reward").reshape(-1)[0]) if rewards and
                       self._layout.root_reward else None)
        for group in self._layout.groups.values():
            data = td.get(group.name)
            own = {k: data.get(k).reshape(len(group.agents)).numpy() for k in group.done_keys}
            acting = data.get("mask").reshape(-1).numpy() if group.has_mask else None
            reward = (data.get("reward").reshape(len(group.agents)).numpy()
                      if rewards and group.has_reward else None)
            for i, agent in enumerate(group.agents):
                if agent in self._finished:
                    continue
                if rewards:
                    paid[agent] = float(reward[i]) if reward is not None else float(root_reward or 0)
                term, trunc = _flags(own, i, root_flags)
                if term or trunc:
                    terms[agent], truncs[agent] = term, trunc
                    self._finished.add(agent)
                elif acting is None or acting[i]:
                    actors.append(agent)
                if agent in actors or agent in terms:
                    obs[agent] = self._observation(group, data, i)
                    if group.has_info:
                        infos[agent] = _numpy(data.get("info")[i])
        common = self._root_entries(td)
        if common:
            infos[COMMON] = common
        over = any(root_flags.values()) or not actors
        if over:
            self._close_episode(live, terms, truncs, root_flags)
            self._final_observations(td, obs, infos, live)
        terms[ALL] = over and not truncs.get(ALL, False)
        truncs.setdefault(ALL, False)
        self.agents = [a for a in self.possible_agents if a not in self._finished]
        self._actors, self._obs, self._infos = actors if not over else [], obs, infos
        return obs, infos, (paid, terms, truncs)

    def _close_episode(self, live: list[AgentID], terms: dict[Any, bool],
                       truncs: dict[Any, bool], root_flags: Mapping[str, bool]) -> None:
        """End the episode: every live agent takes the root's flags."""
        truncated = root_flags.get("truncated", False) and not root_flags.get("terminated", False)
        if not root_flags and any(truncs.values()) and not any(terms.values()):
            truncated = True
        for agent in live:
            if agent not in terms:
                terms[agent], truncs[agent] = not truncated, truncated
                self._finished.add(agent)
        truncs[ALL] = truncated
        self._cannot_step = EPISODE_OVER

    def _final_observations(self, td: Any, obs: MultiAgentDict, infos: dict[Any, Any],
                            live: list[AgentID]) -> None:
        """At the end, every agent that was live observes the final state (as PettingZoo's do)."""
        for group in self._layout.groups.values():
            data = td.get(group.name)
            for i, agent in enumerate(group.agents):
                if agent in live and agent not in obs:
                    obs[agent] = self._observation(group, data, i)
                    if group.has_info:
                        infos[agent] = _numpy(data.get("info")[i])

    def _observation(self, group: GroupLayout, data: Any, i: int) -> Any:
        codec = group.codecs[i][0]
        if group.observed == ["observation"]:
            return codec.decode(data.get("observation")[i].numpy())
        values: dict[str, Any] = {}
        for key in group.observed:
            value = _numpy(data.get(key)[i])
            if key == "observation" and group.merged:
                values.update(value)
            else:
                values[key] = value
        return codec.decode(values)

    def _root_entries(self, td: Any) -> dict[str, Any]:
        """The env's observation entries outside every group (a global state)."""
        skip = {*self._layout.groups, *self._layout.root_done_keys, "reward"}
        return {k: _numpy(td.get(k)) for k in td.keys()
                if isinstance(k, str) and k not in skip
                and k in self.torchrl_env.full_observation_spec.keys()}


def _flags(own: Mapping[str, np.ndarray], i: int, root: Mapping[str, bool]) -> tuple[bool, bool]:
    """An agent's (terminated, truncated): its group's flags, else the root's."""
    source: Mapping[str, Any] = {k: bool(v[i]) for k, v in own.items()} if own else root
    truncated = bool(source.get("truncated", False))
    terminated = bool(source.get("terminated", False)) or (
        bool(source.get("done", False)) and not truncated)
    return terminated, truncated


def _numpy(value: Any) -> Any:
    """A tensor as a numpy array, a tensordict as a dict of them."""
    if hasattr(value, "keys"):
        return {k: _numpy(value.get(k)) for k in value.keys()}
    return value.detach().cpu().numpy()
