"""What both Gymnasium views of a hub env share: reading its outputs, and the env they step.

:class:`DrivenView` holds the hub env a view shows and the env it steps (the
hub env behind the illegal-action policy); :class:`HubDriver` keeps the last
observations, infos and done agents of the stepped env.
"""

from __future__ import annotations

from typing import Any

from marlhub.core import ALL, AgentID, MultiAgentDict
from marlhub.display import view_html
from marlhub.episode.status import flag
from marlhub.spaces import find_action_mask
from marlhub.wrappers.illegal import IllegalActionWrapper

__all__ = ["DEFAULT_ILLEGAL_ACTION", "DrivenView", "HubDriver"]

#: What a view does with masked-out actions unless told otherwise: Gymnasium's consumers
#: (``check_env``, learners without masking) send any action of the space.
DEFAULT_ILLEGAL_ACTION = "terminate"


class HubDriver:
    """Reads hub outputs: last observations and infos, done agents, whether the episode is over."""

    def __init__(self, hub_env: Any) -> None:
        self.hub_env = hub_env
        self.last_obs: MultiAgentDict = {}
        self.last_infos: MultiAgentDict = {}
        self.done: set[AgentID] = set()
        self.over = False
        self.actors: list[AgentID] = []

    def begin(self, obs: MultiAgentDict, infos: MultiAgentDict) -> None:
        self.last_obs = dict(obs)
        self.last_infos = {a: infos.get(a, {}) for a in obs}
        self.done = set()
        self.over = False
        self.actors = list(obs)

    def record(self, result: tuple[Any, ...]) -> None:
        obs, _, terminateds, truncateds, infos = result
        for agent, value in obs.items():
            self.last_obs[agent] = value
            self.last_infos[agent] = infos.get(agent, {})
        for table in (terminateds, truncateds):
            self.done.update(a for a, v in table.items() if a != ALL and v)
        self.over = flag(terminateds, ALL) or flag(truncateds, ALL)
        self.actors = [] if self.over else [a for a in obs if a not in self.done]

    def mask(self, agent: AgentID) -> Any:
        return find_action_mask(self.last_obs.get(agent), self.last_infos.get(agent))


class DrivenView:
    """What both views share: the hub env they show, and the env they step."""

    hub_env: Any
    #: The env the view steps: the hub env behind the illegal-action policy.
    _env: Any

    def _drive(self, hub_env: Any, illegal_action: str) -> None:
        self.hub_env = hub_env
        self.illegal_action = illegal_action
        self._env = (hub_env if illegal_action == "raise"
                     else IllegalActionWrapper(hub_env, illegal_action))

    def render(self) -> Any:
        """Render the hub env."""
        return self.hub_env.render()

    def _repr_html_(self) -> str:
        """In a notebook: what the view converts, and the hub env's agents."""
        agent = getattr(self, "agent_id", None)
        speaks = "Gymnasium Env" + (f" of {agent!r}" if agent is not None else " (joint)")
        return view_html(speaks, self.hub_env)

    def close(self) -> None:
        """Close the hub env."""
        close = getattr(self.hub_env, "close", None)
        if callable(close):
            close()
