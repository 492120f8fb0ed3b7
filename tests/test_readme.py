"""The README as a newcomer reads it: its commands, its tour and its sample output hold.

CI (``.ci/run``) runs the README's test command itself, read from the README; these
tests keep the README, the getting-started page and CI from drifting apart, run the
README's tour exactly as printed, and compare the main job's sample output with a
fresh run of the same command.
"""

from __future__ import annotations

import doctest
import re
import shlex
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import marlhub
from marlhub.cli import main
from tests.versions import AT_BOTH_ENDS, TESTS, at_both_ends, placed

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
GETTING_STARTED = (REPO / "docs" / "getting-started.rst").read_text(encoding="utf-8")
CI_RUN = (REPO / ".ci" / "run").read_text(encoding="utf-8")

#: The line .ci/run takes from the README (the same pattern as its grep).
TEST_COMMAND = re.compile(r"^python3 -m venv \.venv && .*pytest$", re.MULTILINE)
OLDEST_COMMAND = re.compile(r"^python3 -m venv \.venv-oldest && .*pytest .*$", re.MULTILINE)
MAIN_JOB = re.compile(r"^python3 -m venv \.venv && .*marlhub check .*$", re.MULTILINE)
DOCS_COMMAND = re.compile(r"^pip install .*python -m sphinx .*$", re.MULTILINE)


def fenced(text: str, language: str) -> list[str]:
    """The contents of the README's fenced blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_readme_has_one_test_command_and_ci_runs_it_with_nothing_before() -> None:
    commands = TEST_COMMAND.findall(README)
    assert len(commands) == 1, commands
    assert "grep -m1 -E \"^python3 -m venv .venv && .*pytest$\" README.md" in CI_RUN
    # Nothing is installed by CI itself: what the README's command installs is all there is.
    code = [line for line in CI_RUN.splitlines() if not line.lstrip().startswith("#")]
    assert not any(re.search(r"\bpip3? install\b|uv pip", line) for line in code), CI_RUN


def test_the_test_command_installs_every_extra_the_tests_use_pinned_by_the_constraints() -> None:
    words = shlex.split(TEST_COMMAND.findall(README)[0].replace("&&", ";"))
    spec = next(w for w in words if w.startswith(".["))
    extras = set(spec[2:-1].split(","))
    assert {"all", "rl", "learners", "test", "docs"} <= extras, spec
    constraints = words[words.index("-c") + 1]
    pinned = (REPO / constraints).read_text(encoding="utf-8")
    for package in ("torch", "ray", "torchrl", "vmas", "pettingzoo", "open_spiel", "gymnasium",
                    "skrl", "stable-baselines3", "sb3-contrib", "tianshou", "pufferlib-core"):
        assert re.search(rf"^{package}==", pinned, re.MULTILINE), package
    # PufferLib pins torch 2.9.0 for a CUDA extension marlhub does not load: without its deps
    assert words[words.index("pufferlib-core") - 1] == "--no-deps"


def test_readme_has_an_oldest_versions_command_and_ci_runs_it_too() -> None:
    (command,) = OLDEST_COMMAND.findall(README)
    assert 'grep -m1 -E "^python3 -m venv .venv-oldest && .*pytest .*$" README.md' in CI_RUN
    words = shlex.split(command.replace("&&", ";"))
    assert words[words.index("-c") + 1] == ".ci/oldest.txt"
    assert "agilerl" in words  # the newest AgileRL requires PettingZoo before 1.27


def test_the_oldest_end_runs_the_tests_marked_versions_and_the_newest_end_all() -> None:
    (command,) = OLDEST_COMMAND.findall(README)
    words = shlex.split(command.replace("&&", ";"))
    pytest_args = words[words.index("pytest") + 1:]
    assert pytest_args[:1] == ["tests"] and "-m" in pytest_args, pytest_args
    assert pytest_args[pytest_args.index("-m") + 1] == "versions"
    assert TEST_COMMAND.findall(README)[0].endswith("&& pytest")  # everything, no selection


def test_every_test_module_is_placed_at_one_end_or_both() -> None:
    """A new test folder or top-level module says whether the oldest-versions end runs it."""
    modules = sorted((REPO / "tests").rglob("test_*.py"))
    assert len(modules) > 100
    unplaced = [str(m.relative_to(REPO)) for m in modules if placed(m) is None]
    assert not unplaced, f"add these to tests/versions.py's AT_BOTH_ENDS: {unplaced}"
    gone = [key for key in AT_BOTH_ENDS if not (TESTS / key).exists()]
    assert not gone, f"AT_BOTH_ENDS names paths that are no longer there: {gone}"
    both = [m for m in modules if at_both_ends(m)]
    assert len(modules) > len(both) > len(modules) // 3
    assert at_both_ends(REPO / "tests" / "adapters" / "pettingzoo" / "test_learners.py")  # AgileRL


def test_the_versions_mark_is_set_by_where_a_test_lives(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("versions") is None  # this module: the newest end
    assert "versions:" in "\n".join(request.config.getini("markers"))


def _version(text: str) -> tuple[int, ...]:
    numbers = tuple(int(part) for part in text.split("."))
    return numbers + (0,) * (3 - len(numbers))


def test_the_oldest_pins_are_where_the_declared_ranges_start() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = [*project["dependencies"],
                    *(r for extra in project["optional-dependencies"].values() for r in extra)]
    floors: dict[str, set[str]] = {}
    for requirement in requirements:
        found = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?>=([0-9.]+)", requirement)
        if found:
            floors.setdefault(found[1].lower().replace("_", "-"), set()).add(found[2])
    oldest = (REPO / ".ci" / "oldest.txt").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([0-9.]+)$", oldest, re.MULTILINE))
    # torch: CI's machines hold one CPU build; the newest AgileRL needs 2.11 or newer anyway.
    checked = {name.lower().replace("_", "-"): version for name, version in pins.items()
               if name != "torch"}
    for name, version in checked.items():
        if name in floors:
            assert {_version(f) for f in floors[name]} == {_version(version)}, (name, floors[name])
    assert {"gymnasium", "pettingzoo", "open-spiel", "torchrl", "mpe2"} <= set(checked) & set(floors)


def test_the_extras_declare_ranges_not_exact_pins() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib comes with Python 3.11")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    for extra, requirements in extras.items():
        for requirement in requirements:
            version = requirement.partition(";")[0]  # markers may compare with ==
            assert "==" not in version, f"extra {extra!r} pins {requirement!r}"


def test_getting_started_shows_the_readmes_commands_word_for_word() -> None:
    for pattern in (MAIN_JOB, TEST_COMMAND, DOCS_COMMAND):
        (command,) = pattern.findall(README)
        assert command in GETTING_STARTED, command


def test_readme_tour_runs_as_shown() -> None:
    blocks = fenced(README, "pycon")
    assert blocks, "the README has no tour"
    parser = doctest.DocTestParser()
    test = parser.get_doctest("\n".join(blocks), {}, "README.md", str(REPO / "README.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0 and test.examples, "".join(failures)


def _without_times(text: str) -> str:
    return re.sub(r" in \d+(\.\d+)?s$", " in TIMEs", text.strip(), flags=re.MULTILINE)


def test_readme_sample_output_is_what_the_main_job_prints(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = fenced(README, "console")
    prompt, *expected = block.strip().splitlines()
    assert prompt.startswith("$ marlhub ")
    assert prompt[2:] in MAIN_JOB.findall(README)[0]
    code = main(shlex.split(prompt)[2:])
    out = capsys.readouterr().out
    assert code == 0
    assert _without_times(out) == _without_times("\n".join(expected))


def _sample(env: Any, agent: Any, obs: Any, info: Any) -> Any:
    """A random legal action, as a newcomer samples one: the space, and its mask if any."""
    space = env.get_action_space(agent)
    mask = None
    for holder in (obs, info):
        if isinstance(holder, dict) and "action_mask" in holder:
            mask = np.asarray(holder["action_mask"], dtype=np.int8)
    return space.sample(mask) if isinstance(space, gym.spaces.Discrete) else space.sample()


#: Built-in envs, and one id of each kind from the families the test command installs.
FIRST_LOOP_IDS = [*marlhub.registered("*", families=False),
                  "openspiel/leduc_poker", "pettingzoo/classic/connect_four-v3",
                  "mpe2/simple_spread-v3"]


@pytest.mark.parametrize("env_id", FIRST_LOOP_IDS)
def test_the_first_loop_plays_whole_episodes(env_id: str) -> None:
    """The loop of the tour and of getting started, with random legal actions."""
    env = marlhub.make(env_id)
    for episode in range(3):
        obs, infos = env.reset(seed=episode)
        for space in map(env.get_action_space, env.possible_agents):
            space.seed(episode)
        terminateds: dict[Any, Any] = {"__all__": False}
        truncateds: dict[Any, Any] = {"__all__": False}
        returns = dict.fromkeys(env.possible_agents, 0.0)
        steps = 0
        while not (terminateds["__all__"] or truncateds["__all__"]):
            actors = marlhub.actors(obs, terminateds, truncateds)
            assert actors, f"{env_id}: nobody acts at step {steps} though the episode goes on"
            actions = {a: _sample(env, a, obs[a], infos.get(a)) for a in actors}
            obs, rewards, terminateds, truncateds, infos = env.step(actions)
            for agent, reward in rewards.items():
                returns[agent] += reward
            steps += 1
            assert steps < 5_000, f"{env_id}: the episode did not end"
        assert marlhub.actors(obs, terminateds, truncateds) == []
    env.close()


def test_readme_links_resolve() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (REPO / target).exists(), target


def test_readme_speaks_of_the_software_not_of_issues() -> None:
    assert not re.search(r"\bissues?\b|\bgoals?\b", README, re.IGNORECASE)
    assert len(README.splitlines()) < 150
