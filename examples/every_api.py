"""One env through every API marlhub speaks, and back, with nothing lost on the way.

Rock-paper-scissors (RLlib's docs example, simultaneous) is taken from the hub to
a PettingZoo AEC env, a PettingZoo parallel env, an OpenSpiel game, a Gymnasium
view of one player and a joint Gymnasium view of both, each converted back to
the hub where that makes sense. The same per-player action sequences are played
through each, and every player's return must come out the same.

Run it with ``python examples/every_api.py``; it prints a table and exits with 0
when every API gives the original returns.
"""

from __future__ import annotations

import sys
from typing import Any

import marlhub
from marlhub.spaces import ActionSampler

SEED = 7
ROUNDS = 10


def scripted_moves() -> dict[str, list[int]]:
    """Each player's moves for one game, drawn once from a seeded sampler."""
    sampler = ActionSampler(seed=SEED)
    env = marlhub.make("rock_paper_scissors")
    return {a: [sampler.sample(a, env.get_action_space(a)) for _ in range(ROUNDS)]
            for a in env.possible_agents}


def play_hub(env: Any, moves: dict[str, list[int]]) -> dict[str, float]:
    """Play a hub env (any turn structure), feeding each agent its own next move."""
    left = {a: list(m) for a, m in moves.items()}
    returns = {a: 0.0 for a in env.possible_agents}
    obs, _ = env.reset(seed=SEED)
    while True:
        obs, rewards, terminated, truncated, _ = env.step({a: left[a].pop(0) for a in obs})
        for agent, reward in rewards.items():
            returns[agent] += float(reward)
        if terminated["__all__"] or truncated["__all__"]:
            return returns
        obs = {a: o for a, o in obs.items() if not (terminated.get(a) or truncated.get(a))}


def play_pettingzoo_aec(env: Any, moves: dict[str, list[int]]) -> dict[str, float]:
    """PettingZoo's AEC loop: agent_iter, last, step (None for done agents)."""
    left = {a: list(m) for a, m in moves.items()}
    returns = {a: 0.0 for a in env.possible_agents}
    env.reset(seed=SEED)
    for agent in env.agent_iter():
        _, _, terminated, truncated, _ = env.last()
        env.step(None if terminated or truncated else left[agent].pop(0))
        for a, reward in env.rewards.items():
            returns[a] += float(reward)
    return returns


def play_pettingzoo_parallel(env: Any, moves: dict[str, list[int]]) -> dict[str, float]:
    """PettingZoo's parallel loop: every live agent acts each step."""
    left = {a: list(m) for a, m in moves.items()}
    returns = {a: 0.0 for a in env.possible_agents}
    env.reset(seed=SEED)
    while env.agents:
        _, rewards, _, _, _ = env.step({a: left[a].pop(0) for a in env.agents})
        for a, reward in rewards.items():
            returns[a] += float(reward)
    return returns


def play_gymnasium_view(env_id: str, agent: str, moves: dict[str, list[int]]) -> float:
    """One player's Gymnasium view; the other player replays its moves as a policy."""
    others = {a: (lambda queue: lambda obs, agent_id: queue.pop(0))(list(m))
              for a, m in moves.items() if a != agent}
    view = marlhub.make(env_id, to="gymnasium", agent_id=agent, others=others)
    view.reset(seed=SEED)
    total = 0.0
    for move in moves[agent]:
        _, reward, terminated, truncated, _ = view.step(move)
        total += float(reward)
        if terminated or truncated:
            break
    return total


def play_joint_view(env_id: str, moves: dict[str, list[int]]) -> float:
    """The joint Gymnasium view: one Dict action for all players, the summed reward."""
    view = marlhub.make(env_id, to="gymnasium", joint=True)
    view.reset(seed=SEED)
    total = 0.0
    for step in range(ROUNDS):
        _, reward, terminated, truncated, _ = view.step({a: m[step] for a, m in moves.items()})
        total += float(reward)
        if terminated or truncated:
            break
    return total


def main() -> int:
    env_id = "rock_paper_scissors"
    moves = scripted_moves()
    original = play_hub(marlhub.make(env_id), moves)
    results: dict[str, dict[str, float]] = {
        "hub (original)": original,
        "PettingZoo AEC": play_pettingzoo_aec(marlhub.make(env_id, to="pettingzoo.aec"), moves),
        "PettingZoo parallel": play_pettingzoo_parallel(
            marlhub.make(env_id, to="pettingzoo.parallel"), moves),
        "PettingZoo AEC -> hub": play_hub(
            marlhub.convert(marlhub.make(env_id, to="pettingzoo.aec"), to="marlhub"), moves),
        "OpenSpiel -> hub": play_hub(marlhub.convert(
            marlhub.make(env_id, to="openspiel", short_name="every_api_rps"), to="marlhub"), moves),
        "Gymnasium view (each player)": {
            a: play_gymnasium_view(env_id, a, moves) for a in original},
    }
    joint = play_joint_view(env_id, moves)
    width = max(map(len, results))
    print(f"{'API':<{width}}  " + "  ".join(f"{a:>8}" for a in original))
    ok = True
    for name, returns in results.items():
        same = returns == original
        ok &= same
        cells = "  ".join(f"{returns[a]:>8.1f}" for a in original)
        print(f"{name:<{width}}  {cells}  {'same' if same else 'DIFFERENT'}")
    same_joint = joint == sum(original.values())
    ok &= same_joint
    print(f"{'Gymnasium joint view (sum)':<{width}}  {joint:>8.1f}  "
          f"{'same' if same_joint else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
