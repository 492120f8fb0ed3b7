"""Round trips hub -> target API -> hub: every agent keeps its return and its number of actions.

The round trip is built from the adapters' classes directly (``from_x(to_x(env))``
would hand back the env itself). The original plays a seeded random legal
episode; each agent's actions are recorded in order and fed to the same agent
of the round trip (matched by their place in ``possible_agents``, as an API may
rename them), reset with the same seed. The env's own randomness comes
from that seed on both sides, so each agent must take the same number of
actions and earn the same return.

Example:
    >>> import marlhub
    >>> compare_round_trip("pettingzoo.aec", lambda: marlhub.make("rock_paper_scissors")) is None
    True
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any, Callable, Optional

import gymnasium as gym
import numpy as np

from marlhub.episode.play import RandomEpisode
from marlhub.rewards import add_reward
from marlhub.spaces import find_action_mask

__all__ = ["ROUND_TRIPS", "compare_round_trip"]

_names = itertools.count()


def _via_aec(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.pettingzoo import PettingZooEnv, to_pettingzoo

    return PettingZooEnv(to_pettingzoo(make_env(), api="aec"))


def _via_parallel(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.pettingzoo import ParallelPettingZooEnv, to_pettingzoo

    return ParallelPettingZooEnv(to_pettingzoo(make_env(), api="parallel"))


def _via_openspiel(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.openspiel import OpenSpielEnv, to_openspiel

    game = to_openspiel(make_env, short_name=f"marlhub_round_trip_{next(_names)}", seed=seed)
    return OpenSpielEnv(game, agent_ids="names", action_mask="obs")


def _via_gymnasium(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.gymnasium import GymnasiumMultiEnv, to_gymnasium

    env = make_env()
    agents = list(env.possible_agents)
    if len(agents) != 1:
        return None  # one agent's view is not the whole env; the joint view is one agent
    return GymnasiumMultiEnv([to_gymnasium(env, agents[0])], agents)


def _via_gymnasium_tuple(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.gymnasium import TupleAgentsEnv, TupleView

    env = make_env()
    return TupleAgentsEnv(TupleView(env), agent_ids=list(env.possible_agents))


def _via_rllib(make_env: Callable[[], Any], seed: int) -> Any:
    from marlhub.adapters.rllib import RLlibEnv, to_rllib

    # The steps as the hub env gives them: carried rewards add a step to act on for an agent
    # paid without acting, which RLlib's own sampler check (rllib_sampler) covers.
    return RLlibEnv(to_rllib(make_env(), carry_rewards=False))


#: Targets whose every step is one step of the original (the others may split a step into
#: turns): their round trip replays the original's action dicts one by one. At an
#: OpenSpiel simultaneous node every player moves; one that does not act in the hub env
#: has one legal action, PASS (0), which the env never sees (see ``to_openspiel``).
_STEP_FOR_STEP = {"openspiel": 0}

#: Target -> builder of the round trip env (None where no round trip is defined).
ROUND_TRIPS: dict[str, Callable[[Callable[[], Any], int], Any]] = {
    "pettingzoo.aec": _via_aec,
    "pettingzoo.parallel": _via_parallel,
    "openspiel": _via_openspiel,
    "gymnasium": _via_gymnasium,
    "gymnasium.tuple": _via_gymnasium_tuple,
    "rllib": _via_rllib,
}


def compare_round_trip(target: str, make_env: Callable[[], Any], *, seed: int = 0,
                       episodes: int = 2, max_steps: int = 2000) -> Optional[str]:
    """Return how the round trip through ``target`` changed an agent's play, or None.

    Args:
        target: a key of :data:`ROUND_TRIPS` (others have no round trip: None).
        make_env: builds a fresh hub env.
        seed: episode ``i`` is seeded ``seed + i`` on both sides.
        episodes: how many episodes to compare.
        max_steps: the original's step budget (longer episodes are not compared).
    """
    build = ROUND_TRIPS.get(target)
    if build is None:
        return None
    for episode in range(episodes):
        episode_seed = seed + episode
        played = RandomEpisode(make_env(), episode_seed, max_steps=max_steps)
        returns: dict[Any, float] = {}
        for step in played:
            for agent, reward in step.rewards.items():
                returns[agent] = add_reward(returns.get(agent, 0.0), reward)
        if played.cut:
            continue
        trip = build(make_env, episode_seed)
        if trip is None:
            return None
        # An API may name agents its own way (PettingZoo: strings): match them by position.
        name = dict(zip(played.env.possible_agents, trip.possible_agents))
        shift = {a: _start_shift(played.env, trip, a, name.get(a, a)) for a in name}
        queues: dict[Any, deque] = {}
        for actions in played.actions:
            for agent, action in actions.items():
                moved = action + shift[agent] if shift.get(agent) else action
                queues.setdefault(name.get(agent, agent), deque()).append(moved)
        returns = {name.get(a, a): r for a, r in returns.items()}
        if target in _STEP_FOR_STEP:
            steps = [{name.get(a, a): action + shift[a] if shift.get(a) else action
                      for a, action in actions.items()} for actions in played.actions]
            problem = _replay_steps(trip, steps, returns, episode_seed, _STEP_FOR_STEP[target])
        else:
            problem = _replay(trip, queues, returns, episode_seed, max_steps * 10)
        if problem:
            return f"round trip through {target}, episode seeded {episode_seed}: {problem}"
    return None


def _start_shift(original: Any, trip: Any, agent: Any, trip_agent: Any) -> int:
    """How far the round trip moved a Discrete action space's start (OpenSpiel counts from 0)."""
    try:
        before, after = original.get_action_space(agent), trip.get_action_space(trip_agent)
    except Exception:  # an env without per-agent spaces: actions go as they are
        return 0
    if isinstance(before, gym.spaces.Discrete) and isinstance(after, gym.spaces.Discrete):
        return int(after.start) - int(before.start)
    return 0


def _replay(env: Any, queues: dict[Any, deque], returns: dict[Any, float], seed: int,
            max_steps: int) -> Optional[str]:
    counts = {a: len(q) for a, q in queues.items()}
    got: dict[Any, float] = {}
    obs, _ = env.reset(seed=seed)
    actors = list(obs)
    for _ in range(max_steps):
        short = [a for a in actors if not queues.get(a)]
        if short:
            return (f"{short[0]!r} acts more often than its {counts.get(short[0], 0)} actions "
                    "in the original")
        obs, rewards, terminateds, truncateds, _ = env.step(
            {a: queues[a].popleft() for a in actors})
        for agent, reward in rewards.items():
            got[agent] = add_reward(got.get(agent, 0.0), reward)
        if terminateds.get("__all__") or truncateds.get("__all__"):
            break
        actors = [a for a in obs if not (terminateds.get(a) or truncateds.get(a))]
    left = {a: len(q) for a, q in queues.items() if q}
    if left:
        return f"agents acted fewer times than in the original (actions left: {left})"
    return _compare_returns(returns, got)


def _replay_steps(env: Any, steps: list[dict[Any, Any]], returns: dict[Any, float], seed: int,
                  pass_action: int) -> Optional[str]:
    """Replay the original's action dicts one step each; an actor the original did not have
    at that step must have ``pass_action`` as its only legal action, and gets it."""
    got: dict[Any, float] = {}
    over = False
    obs, infos = env.reset(seed=seed)
    for index, actions in enumerate(steps):
        missing = [a for a in actions if a not in obs]
        if missing:
            return f"at step {index}, {missing[0]!r} acts in the original but not in the round trip"
        joint = dict(actions)
        for agent in obs:
            if agent in actions:
                continue
            mask = find_action_mask(obs[agent], infos.get(agent))
            if mask is None or np.flatnonzero(mask).tolist() != [pass_action]:
                return (f"at step {index}, {agent!r} acts in the round trip but not in the "
                        f"original, with legal actions other than only PASS ({pass_action})")
            joint[agent] = pass_action
        obs, rewards, terminateds, truncateds, infos = env.step(joint)
        for agent, reward in rewards.items():
            got[agent] = add_reward(got.get(agent, 0.0), reward)
        over = terminateds.get("__all__") or truncateds.get("__all__")
        if over and index < len(steps) - 1:
            return f"the round trip ended after {index + 1} steps, the original after {len(steps)}"
        if not over:
            obs = {a: ob for a, ob in obs.items()
                   if not (terminateds.get(a) or truncateds.get(a))}
    if steps and not over:
        return f"the round trip goes on after the original's {len(steps)} steps ended"
    return _compare_returns(returns, got)


def _compare_returns(returns: dict[Any, float], got: dict[Any, float]) -> Optional[str]:
    for agent in dict.fromkeys([*returns, *got]):
        a, b = returns.get(agent, 0.0), got.get(agent, 0.0)
        if not np.allclose(a, b, rtol=1e-9, atol=1e-9):  # numbers, or arrays of objectives
            return (f"{agent!r} earned {np.asarray(b).tolist()!r} instead of "
                    f"{np.asarray(a).tolist()!r}")
    return None
