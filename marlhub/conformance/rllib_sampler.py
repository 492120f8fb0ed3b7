"""RLlib's own sampler on the converted env: every agent keeps, in RLlib's episodes, what it earned.

RLlib's checker steps an env once; RLlib's ``MultiAgentEnvRunner`` (the new
API stack's sampler) is stricter: it files each step into a
``MultiAgentEpisode``, cuts episodes into chunks at its sample boundaries, and
drops some rewards without an error (see :mod:`marlhub.adapters.rllib.carry`).
:func:`compare_rllib_sampler` builds RLlib's runner locally (no Ray cluster,
no RLModule: RLlib samples random actions) on ``to_rllib(make_env())``,
samples one env step per call, so that a boundary falls inside every episode,
and compares each agent's sum of rewards in RLlib's finished episodes with
what the hub env paid it in the same episode (recorded under the view), and
RLlib's end of each episode with the hub's (truncated stays truncated, so values
are bootstrapped).

Example:
    >>> import marlhub
    >>> compare_rllib_sampler(lambda: marlhub.make("rock_paper_scissors"), steps=30) is None
    True
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping
from typing import Any, Callable, Optional

from marlhub.backends import import_backend
from marlhub.core import ALL, AgentID, MultiAgentDict, ResetResult, StepResult
from marlhub.wrappers.base import HubWrapper

__all__ = ["compare_rllib_sampler"]


class _Payments(HubWrapper):
    """Record what the hub env pays each agent, by episode and step, under the RLlib view."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.episodes: list[dict[AgentID, list[tuple[int, float]]]] = []
        self.seeds: list[Optional[int]] = []
        #: Per episode: how it ended (truncated, at which step), once it has.
        self.ends: list[Optional[tuple[bool, int]]] = []
        self._step = 0

    def forget(self) -> None:
        """Drop what was recorded so far."""
        self.episodes, self.seeds, self.ends = [], [], []

    def reset(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, *, seed: Optional[int] = None, options: Optional[dict] = None
    ) -> ResetResult:
        """Reset the env and start recording a new episode."""
        result = self.env.reset(seed=seed, options=options)
        self.episodes.append({})
        self.seeds.append(seed)
        self.ends.append(None)
        self._step = 0
        return result

    def step(  # type: ignore[override]  # per-agent dicts, see MultiAgentEnv
        self, action_dict: MultiAgentDict
    ) -> StepResult:
        """Step the env and record its rewards."""
        result = self.env.step(action_dict)
        self._step += 1
        for agent, reward in result[1].items():
            self.episodes[-1].setdefault(agent, []).append((self._step, float(reward)))
        terminated, truncated = bool(result[2].get(ALL)), bool(result[3].get(ALL))
        if terminated or truncated:
            self.ends[-1] = (truncated and not terminated, self._step)
        return result


def compare_rllib_sampler(make_env: Callable[[], Any], *, seed: int = 0, steps: int = 300,
                          options: Optional[Mapping[str, Any]] = None,
                          max_seconds: Optional[float] = None) -> Optional[str]:
    """Return where RLlib's sampler lost or added a reward of an agent, or None.

    Args:
        make_env: builds a fresh hub env.
        seed: RLlib's seed (the first reset) and the random actions' seed.
        steps: how many env steps to sample, one per ``sample()`` call.
        options: keyword options of :func:`~marlhub.adapters.rllib.to_rllib`
            (default ``illegal_action="substitute"``: RLlib samples from the
            whole action space).
        max_seconds: stop sampling after this long, whatever ``steps`` says (slow
            games: the episodes that ended by then are compared); None: no limit.

    Returns:
        None when every episode that ended within ``steps`` gave each agent the
        same sum of rewards in RLlib's episodes as the hub env paid it; else the
        first difference, naming the episode, the agent and the step.

    Raises:
        MissingDependencyError: RLlib is not installed.
    """
    import_backend("ray.rllib.env.multi_agent_env_runner", package="ray", extra="rllib",
                   feature="--targets rllib")
    from marlhub.adapters.rllib import to_rllib

    built: list[_Payments] = []

    def creator(config: Any) -> Any:
        payments = _Payments(make_env())
        built.append(payments)
        view = to_rllib(payments, **{"illegal_action": "substitute", **(options or {})})
        for i, agent in enumerate(view.possible_agents):
            view.get_action_space(agent).seed(seed + i)
        return view

    env = creator(None)
    agents = list(env.possible_agents)
    env.close()
    runner = _runner(creator, agents, seed)
    try:
        payments = built[-1]
        payments.forget()  # RLlib's checker played a step when the runner was built
        kept: dict[str, dict[AgentID, float]] = {}
        finished: list[tuple[dict[AgentID, float], bool]] = []
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        for _ in range(steps):
            if deadline is not None and time.monotonic() > deadline:
                break
            for chunk in runner.sample(num_timesteps=1, random_actions=True):
                sums = kept.setdefault(chunk.id_, {})
                for agent, episode in chunk.agent_episodes.items():
                    sums[agent] = sums.get(agent, 0.0) + float(sum(episode.get_rewards()))
                if chunk.is_done:
                    finished.append((kept.pop(chunk.id_), chunk.is_terminated))
    finally:
        runner.stop()
    for index, (got, terminated) in enumerate(finished):
        problem = _difference(payments.episodes[index], got)
        end = payments.ends[index]
        if not problem and end is not None and end[0] and terminated:
            problem = (f"the hub truncated the episode at step {end[1]} but RLlib's episode is "
                       "terminated, so no value is bootstrapped (RLlib does so when per-agent "
                       "truncated flags name every agent of the episode)")
        if problem:
            return (f"RLlib's sampler (a sample boundary after every step), episode {index + 1} "
                    f"(the runner's reset {_seed_text(payments.seeds[index])}): {problem}")
    return None


def _runner(creator: Callable[[Any], Any], agents: list[AgentID], seed: int) -> Any:
    """RLlib's ``MultiAgentEnvRunner``, built in this process, with one policy per agent."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
    from ray.rllib.connectors.env_to_module import AgentToModuleMapping
    from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner

    policies = {str(agent) for agent in agents}

    def by_agent(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
        return str(agent_id)

    # No RLModule (the base config has none): RLlib's runner samples random actions and
    # files the steps; its connectors only map agents to policies.
    config = (
        AlgorithmConfig()
        .environment(creator)
        .multi_agent(policies=policies, policy_mapping_fn=by_agent)
        .env_runners(
            num_env_runners=0, num_envs_per_env_runner=1,
            # A set of ids, as RLlib's own AlgorithmConfig passes (its hint says a dict).
            env_to_module_connector=lambda *args, **kwargs: AgentToModuleMapping(
                rl_module_specs=policies,  # type: ignore[arg-type]
                agent_to_module_mapping_fn=by_agent),
            add_default_connectors_to_env_to_module_pipeline=False,
            add_default_connectors_to_module_to_env_pipeline=False,
        )
        .debugging(seed=seed)
    )
    with warnings.catch_warnings():
        # Gymnasium's notice that RLlib registers its env name again in this process.
        warnings.filterwarnings("ignore", ".*Overriding environment", UserWarning)
        return MultiAgentEnvRunner(config=config)


def _difference(paid: Mapping[AgentID, list[tuple[int, float]]],
                got: Mapping[AgentID, float]) -> Optional[str]:
    for agent in dict.fromkeys([*paid, *got]):
        payments = paid.get(agent, [])
        hub = sum(r for _, r in payments)
        rllib = got.get(agent, 0.0)
        if math.isclose(hub, rllib, rel_tol=1e-9, abs_tol=1e-9):
            continue
        lost = hub - rllib
        # The step whose payment matches the difference, the latest one; else all of them.
        at = [s for s, r in payments if math.isclose(r, lost, rel_tol=1e-9, abs_tol=1e-9)]
        where = (f"at step {at[-1]} the hub paid it {lost!r}, which RLlib's episode does not hold"
                 if at else f"the hub paid it at steps {[s for s, r in payments if r][:8]}")
        return (f"{agent!r} has {rllib!r} in RLlib's episode but earned {hub!r} in the hub env: "
                f"{where}")
    return None


def _seed_text(seed: Optional[int]) -> str:
    return f"seeded {seed}" if seed is not None else "unseeded, following the seeded one"
