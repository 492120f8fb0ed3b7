"""A hub -> hub wrapper that records each finished episode's per-agent returns, for learner tests.

Learners copy the envs they are given (SuperSuit's vector envs pickle them), so the
record lives in a table of this module, under the key the test chose: every copy
appends there. The returns are the hub env's own, summed as it paid them, so a
learner's episode returns can be compared with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Optional

from marlhub.core import ALL
from marlhub.wrappers.base import HubWrapper


class ReturnsRecorder(HubWrapper):
    """Record every finished episode's returns under ``FINISHED[key]``.

    Args:
        env: the hub env.
        key: where its episodes (and its copies') go.
        path: also append each episode's returns there, one JSON object a line (for
            learners that run the env in worker processes).
    """

    FINISHED: ClassVar[dict[str, list[dict[Any, float]]]] = {}

    def __init__(self, env: Any, key: str, path: Optional[Path] = None) -> None:
        super().__init__(env)
        self.key = key
        self.path = path
        self.FINISHED.setdefault(key, [])
        self.returns: dict[Any, float] = {}

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        self.returns = dict.fromkeys(self.possible_agents, 0.0)
        return self.env.reset(seed=seed, options=options)

    def step(self, action_dict: Any) -> Any:
        result = self.env.step(action_dict)
        for agent, reward in result[1].items():
            self.returns[agent] += float(reward)
        if result[2].get(ALL) or result[3].get(ALL):
            self.FINISHED[self.key].append(dict(self.returns))
            if self.path is not None:
                with open(self.path, "a") as log:
                    log.write(json.dumps(self.returns) + "\n")
        return result
