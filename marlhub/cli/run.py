"""``marlhub run ID``: random legal episodes of an env, with per-agent returns.

Episode ``i`` is the same seeded episode that ``marlhub check --seed S``
plays as its episode ``i`` (:class:`marlhub.episode.RandomEpisode`).
"""

from __future__ import annotations

import argparse
import traceback
from typing import Any

from marlhub.cli.output import Progress, err, out, parse_config, positive_int, seed_int
from marlhub.errors import MarlhubError
from marlhub.registry import make
from marlhub.rollout import random_rollout

__all__ = ["add_run_command", "run_run"]


def add_run_command(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``marlhub run ID [--episodes N] [--seed S] [--config JSON] [--max-steps M]``."""
    parser = subparsers.add_parser(
        "run",
        help="play random legal episodes of an env",
        description="Play episodes of ID with random legal actions and print each agent's "
        "mean return, the mean episode length and the speed.",
    )
    parser.add_argument("env_id", metavar="ID", help="a registered env id (see `marlhub list`)")
    parser.add_argument("--episodes", type=positive_int, default=10, metavar="N",
                        help="episodes to play (default: 10)")
    parser.add_argument("--seed", type=seed_int, default=0, metavar="S",
                        help="episode i is seeded with S + i (default: 0)")
    parser.add_argument("--config", default=None, metavar="JSON",
                        help="the env config as a JSON object, e.g. '{\"num_cars\": 3}'")
    parser.add_argument("--max-steps", type=positive_int, default=None, metavar="M",
                        help="stop each episode after M steps")
    parser.set_defaults(func=run_run)
    return parser


def run_run(args: argparse.Namespace) -> int:
    """Build ``args.env_id`` and play random episodes; print the stats."""
    config, problem = parse_config(args.config)
    if problem:
        err(f"marlhub run: {problem}")
        return 2
    try:
        env = make(args.env_id, config)
    except MarlhubError as exc:
        err(f"marlhub run: {exc}")
        return 2
    progress = Progress(args.episodes)
    try:
        stats = random_rollout(env, episodes=args.episodes, seed=args.seed,
                               max_steps=args.max_steps, on_episode=progress)
    except MarlhubError as exc:
        progress.close()
        err(f"marlhub run: {args.env_id} failed during the rollout: {exc}")
        return 1
    except Exception:  # the env itself crashed: its traceback is what the user needs
        progress.close()
        err(f"marlhub run: {args.env_id} raised during the rollout (seed {args.seed}):")
        err(traceback.format_exc().rstrip())
        return 1
    finally:
        _close(env)
    progress.close()
    _print_stats(args.env_id, stats)
    return 0


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # a failing close() must not hide the results
            err(f"marlhub run: note: env.close() raised {type(exc).__name__}: {exc}")


def _print_stats(env_id: str, stats: Any) -> None:
    lengths = stats.episode_lengths
    cut = f", {stats.cut_short} cut short by --max-steps" if stats.cut_short else ""
    out(f"{env_id}: {stats.episodes} episodes, seed {stats.seed}, {stats.total_steps:,} steps "
        f"in {stats.wall_time:.2f} s ({stats.steps_per_second:,.0f} steps/s)")
    out(f"episode length: mean {stats.mean_length:.1f}, min {min(lengths)}, max {max(lengths)}{cut}")
    rows = [("agent", "mean return", "std", "episodes")]
    means, stds = stats.mean_return, stats.std_return
    for agent in stats.agents:
        rows.append((str(agent), f"{means[agent]:.3f}", f"{stds[agent]:.3f}",
                     str(len(stats.returns(agent)))))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        out(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  "
            f"{row[3]:>{widths[3]}}")
