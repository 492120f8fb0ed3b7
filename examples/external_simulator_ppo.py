"""Train RLlib's PPO on simulators that drive: they run in other processes and call in.

The learner's process listens (``external/HOST:PORT``); each simulator is a
separate process that runs its own loop and asks for actions through
:class:`marlhub.external.PolicyClient`, as a game engine or a robot would.

1. The simulator (``--simulator ADDRESS``): two agents, ``"seeker"`` and
   ``"helper"``, see a one-hot target among 3 and are rewarded 1 for picking it.
   They decide at different times (the helper every other turn), so each request
   names only the agents that decide now; rewards are logged after each turn.
2. The learner: ``register_with_ray("external/HOST:PORT")`` names the id for
   RLlib, and marlhub's :class:`~marlhub.learners.rllib_runner.VectorEnvRunner` makes ONE
   server whose ``num_envs_per_env_runner`` copies are the simulators' concurrent
   episodes. The first simulator to connect declares the agents and spaces.
3. PPO trains one shared policy; each iteration prints the mean episode return,
   which climbs from about 2 (random picks, 6 decisions an episode) towards 6.

Run it with ``python examples/external_simulator_ppo.py [--iterations 8]
[--simulators 2]`` (needs ``pip install 'marlhub[rllib,external]'``).
"""

from __future__ import annotations

import argparse
import random
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from marlhub.errors import EpisodeDroppedError, ExternalEnvError  # noqa: E402
from marlhub.external import PolicyClient  # noqa: E402

AGENTS = ["seeker", "helper"]
TARGETS = 3
TURNS = 4


def simulate(address: str, seed: int = 0) -> None:
    """The simulator's own loop: play episodes until the learner goes away."""
    rng = random.Random(seed)
    observation_space = gym.spaces.Box(0.0, 1.0, (TARGETS,), np.float32)
    with PolicyClient(address, possible_agents=AGENTS,
                      observation_spaces={a: observation_space for a in AGENTS},
                      action_spaces={a: gym.spaces.Discrete(TARGETS) for a in AGENTS},
                      name=f"simulator-{seed}") as client:
        try:
            while True:
                try:
                    play_one(client, rng)
                except EpisodeDroppedError:  # the learner let go of the episode: go on
                    pass
        except ExternalEnvError:  # the learner is gone: training is over
            pass


def play_one(client: PolicyClient, rng: random.Random) -> None:
    """One episode: TURNS turns; the helper decides every other turn."""
    episode = client.start_episode()
    seen = {}
    for turn in range(TURNS):
        deciding = AGENTS if turn % 2 == 0 else AGENTS[:1]
        targets = {a: rng.randrange(TARGETS) for a in deciding}
        seen = {a: np.eye(TARGETS, dtype=np.float32)[t] for a, t in targets.items()}
        actions = client.get_action(episode, seen)
        client.log_returns(episode, {a: float(actions[a] == targets[a]) for a in deciding})
    client.end_episode(episode, seen)


def free_address() -> str:
    """A loopback address with a free port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def train(iterations: int, simulators: int) -> list[float]:
    """Start the simulators, train PPO on them; return the mean episode return per iteration."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from marlhub.registry import register_with_ray
    from marlhub.learners.rllib_runner import VectorEnvRunner

    address = free_address()
    processes = [subprocess.Popen([sys.executable, __file__, "--simulator", address, str(k)])
                 for k in range(simulators)]
    returns: list[float] = []
    algo: Any = None
    try:
        (name,) = register_with_ray(f"external/{address}")
        config = (
            PPOConfig()
            .environment(name, env_config={"timeout": 60})
            .env_runners(num_env_runners=0, env_runner_cls=VectorEnvRunner,
                         num_envs_per_env_runner=simulators, rollout_fragment_length=100)
            .multi_agent(policies={"shared"}, policy_mapping_fn=_shared)
            .training(train_batch_size_per_learner=400, minibatch_size=100, num_epochs=4,
                      lr=3e-3)
            .rl_module(model_config={"fcnet_hiddens": [32]})
            .debugging(seed=0)
        )
        algo = config.build_algo()
        for iteration in range(1, iterations + 1):
            result = algo.train()["env_runners"]
            returns.append(float(result.get("episode_return_mean", float("nan"))))
            print(f"iteration {iteration}: mean episode return {returns[-1]:.2f} "
                  f"({result.get('num_episodes', 0)} episodes)", flush=True)
    finally:
        if algo is not None:
            algo.stop()  # closes the env: the simulators see the learner go and exit
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return returns


def _shared(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return "shared"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--simulators", type=int, default=2)
    parser.add_argument("--simulator", nargs=2, metavar=("ADDRESS", "SEED"),
                        help="run as a simulator that connects to the learner at ADDRESS")
    args = parser.parse_args(argv)
    if args.simulator:
        simulate(args.simulator[0], int(args.simulator[1]))
        return 0
    train(args.iterations, args.simulators)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
