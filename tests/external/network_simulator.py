"""A simulator in another process: python network_simulator.py ADDRESS SEED EPISODES [--hang].

Plays EPISODES episodes of the turn game of ``simulators.py`` through a PolicyClient and
prints {"logged": total reward logged, "episodes": each episode's} as JSON. EPISODES 0
plays until the learner goes away, starting a new episode whenever the learner drops one.
With --hang it starts one episode, asks one decision, prints "asked" and then never calls
again (a simulator gone silent).
"""

import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from simulators import ACTION_SPACES, AGENTS, OBSERVATION_SPACES, play_turns  # noqa: E402

from marlhub.errors import EpisodeDroppedError, ExternalEnvError  # noqa: E402
from marlhub.external import PolicyClient  # noqa: E402

if __name__ == "__main__":
    address, seed, episodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with PolicyClient(address, possible_agents=AGENTS, observation_spaces=OBSERVATION_SPACES,
                      action_spaces=ACTION_SPACES, name=f"sim{seed}", connect_timeout=30) as client:
        if "--hang" in sys.argv:
            episode = client.start_episode()
            client.get_action(episode, {"red": [1.0, 2.0]})
            time.sleep(600)
        rng, per_episode = random.Random(seed), {}
        if episodes:
            logged = play_turns(client, rng, episodes, per_episode=per_episode)
            print(json.dumps({"logged": logged, "episodes": per_episode}))
        else:
            try:
                while True:
                    try:
                        play_turns(client, rng, 1)
                    except EpisodeDroppedError:
                        pass
            except ExternalEnvError:  # the learner went away
                print("learner gone", flush=True)
