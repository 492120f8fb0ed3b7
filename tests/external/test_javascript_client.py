"""A simulator in another language: JavaScript (Node.js, @grpc/grpc-js) from external.proto alone.

The client in ``javascript/simulator.js`` loads the ``.proto`` shipped in the package at run
time with @grpc/proto-loader; nothing of marlhub's Python is in it. It sends its rewards as
LogReturns calls of their own in some episodes (as old clients do) and inside the next
request in the others (``logged``). The test installs the two
npm packages (``npm ci``, pinned by ``javascript/package-lock.json``) into a temporary folder,
and is skipped where Node.js or npm is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import marlhub
from marlhub.external import PROTO_PATH

from .simulators import ACTION_SPACES, OBSERVATION_SPACES

pytest.importorskip("grpc")

CLIENT = Path(__file__).resolve().parent / "javascript"


@pytest.fixture(scope="module")
def client_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js and npm are not installed")
    folder = tmp_path_factory.mktemp("javascript")
    for name in ("package.json", "package-lock.json", "simulator.js"):
        shutil.copy(CLIENT / name, folder / name)
    installed = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=folder,
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return folder


def test_a_javascript_simulator_plays_concurrent_episodes(client_folder: Path) -> None:
    spaces = {"possible_agents": ["red", "blue"], "observation_spaces": OBSERVATION_SPACES,
              "action_spaces": ACTION_SPACES}
    envs = marlhub.make_vec("external/127.0.0.1:0", 2, {**spaces, "timeout": 30, "token": "js-token"},
                            batch_size=1)
    processes = [subprocess.Popen(["node", "simulator.js", str(PROTO_PATH), envs.address, "3"],
                                  cwd=client_folder, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        envs.async_reset()
        received, decisions, ended = 0.0, 0, 0
        rng = np.random.default_rng(0)
        deciders = set()
        while ended < 6:
            obs, rewards, terminateds, truncateds, infos, copy_ids = envs.recv()
            for k in range(len(copy_ids)):
                received += sum(rewards[k].values())
                ended += terminateds[k]["__all__"]
                assert not truncateds[k]["__all__"]
                if not terminateds[k]["__all__"]:
                    decisions += len(obs[k])
                    deciders.add(tuple(sorted(obs[k])))
                    assert all(o.dtype == np.float32 and o.shape == (2,) for o in obs[k].values())
            actions = [{a: int(rng.integers(3)) for a in envs.actors[i]} for i in copy_ids]
            envs.send(actions, copy_ids)
        outputs = [json.loads(p.communicate(timeout=60)[0]) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
        envs.close()
    assert all(p.returncode == 0 for p in processes)
    assert deciders == {("blue", "red"), ("red",), ("blue",)}  # agents decide at different times
    assert decisions == sum(o["actions"] for o in outputs) == 2 * 3 * 6
    assert [o["carried"] for o in outputs] == [4, 4]  # episode 1 of each: every reward carried
    assert received == pytest.approx(sum(o["logged"] for o in outputs))
