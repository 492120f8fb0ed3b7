"""Small envs for testing the conformance suite: one that keeps every rule, and one per rule
that breaks only that rule (each a subclass changing as little as possible)."""

from __future__ import annotations

import json
import time
from typing import Any

import gymnasium as gym
import numpy as np

from marlhub import MultiAgentEnv, ResetNeededError


class Duel(MultiAgentEnv):
    """Two agents that alternate turns ('a' first), then both act in the last step.

    Keeps every rule. An episode lasts ``LENGTH`` steps: step k (1-based) is
    taken by 'a' if k is odd, 'b' if even; after LENGTH-1 steps both act, and
    the episode terminates. Each step gives both agents a reward (the idle one
    too). Observations are float32 boxes holding the step count.
    """

    LENGTH = 6

    def __init__(self, config: Any = None) -> None:
        super().__init__()
        self.possible_agents = ["a", "b"]
        self.agents = []
        self.observation_spaces = {
            a: gym.spaces.Box(0.0, 100.0, (2,), np.float32) for a in self.possible_agents
        }
        self.action_spaces = {a: gym.spaces.Discrete(3) for a in self.possible_agents}
        self.t = 0
        self.over = True

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self.possible_agents.index(agent)], np.float32)

    def _actors(self) -> list[str]:
        if self.t == self.LENGTH - 1:
            return ["a", "b"]
        return ["a"] if self.t % 2 == 0 else ["b"]

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.t = 0
        self.over = False
        self.agents = list(self.possible_agents)
        return {a: self._obs(a) for a in self._actors()}, {}

    def step(self, action_dict: dict) -> tuple[dict, dict, dict, dict, dict]:
        if self.over:
            raise ResetNeededError(type(self).__name__)
        if sorted(action_dict) != sorted(self._actors()):
            raise ValueError(f"expected actions for {self._actors()}, got {sorted(action_dict)}")
        self.t += 1
        rewards = {a: float(action_dict.get(a, 0)) - 1.0 for a in self.agents}
        if self.t >= self.LENGTH:
            self.over = True
            obs = {a: self._obs(a) for a in self.agents}
            self.agents = []
            return obs, rewards, {"__all__": True}, {"__all__": False}, {}
        obs = {a: self._obs(a) for a in self._actors()}
        return obs, rewards, {"__all__": False}, {"__all__": False}, {}


# -- one env per rule ------------------------------------------------------------------


class ResetReturnsObsOnly(Duel):
    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        return super().reset(seed=seed, options=options)[0]


class ResetWithoutOptions(Duel):
    def reset(self, *, seed: Any = None) -> Any:  # type: ignore[override]
        return super().reset(seed=seed)


class StepReturnsGymFourTuple(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, rew, {k: term.get(k, False) or trunc.get(k, False) for k in term}, info


class StepReturnsListObs(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return list(obs.values()), rew, term, trunc, info


class RewardsUnknownAgent(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        rew["referee"] = 0.0
        return obs, rew, term, trunc, info


class AgentsMissActor(Duel):
    """Never lists 'b' in agents, though 'b' acts."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        result = super().reset(seed=seed, options=options)
        self.agents = ["a"]
        return result

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if not term["__all__"]:
            self.agents = ["a"]
        return obs, {k: v for k, v in rew.items() if k == "a" or k in action_dict}, term, trunc, info


class NewSpaceEachCall(Duel):
    def get_observation_space(self, agent_id: Any) -> gym.Space:
        return gym.spaces.Box(0.0, 100.0, (2,), np.float32)


class Float64Obs(Duel):
    def _obs(self, agent: str) -> np.ndarray:
        return super()._obs(agent).astype(np.float64)


class RaisesOnAction2(Duel):
    def step(self, action_dict: dict) -> Any:
        if 2 in action_dict.values():
            raise IndexError("action 2 is not implemented")
        return super().step(action_dict)


class MaskAllowsNothing(Duel):
    """Puts an all-zero action mask for 'b' in infos: 'b' is asked to act but may not."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return obs, self._masks(obs)

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, _ = super().step(action_dict)
        return obs, rew, term, trunc, self._masks(obs)

    def _masks(self, obs: dict) -> dict:
        return {a: {"action_mask": np.array([1, 1, 1] if a == "a" else [0, 0, 0], np.int8)}
                for a in obs}


class NobodyActsAtStep3(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if self.t == 3:
            return {}, {k: v for k, v in rew.items()}, term, trunc, info
        return obs, rew, term, trunc, info


class NoAllInTruncateds(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, rew, term, {}, info


class IntDoneFlags(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, rew, {"__all__": int(term["__all__"])}, trunc, info


class AllDoneButNoAll(Duel):
    """Terminates both agents individually at the end but never sets __all__."""

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if term["__all__"]:
            self.over = True
            return obs, rew, {"a": True, "b": True, "__all__": False}, trunc, info
        return obs, rew, term, trunc, info


class RewardsDeadAgent(Duel):
    """'b' terminates at step 2 (with a final obs) but keeps getting rewards; 'a' plays on."""

    def _actors(self) -> list[str]:
        return ["a"] if self.t >= 2 else super()._actors()

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if self.t == 2:
            obs["b"] = self._obs("b")
            term = {**term, "b": True}
            self.agents = [a for a in self.agents if a != "b"]
        elif self.t > 2:
            rew["b"] = 0.0  # after 'b' is done: RLlib raises on this
        return obs, rew, term, trunc, info


class TruncatesWithoutObs(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if term["__all__"]:
            return {}, rew, {"__all__": False}, {"__all__": True}, info
        return obs, rew, term, trunc, info


class WinnerWithoutFinalObs(Duel):
    """Ends with a final obs for 'b' only, though 'a' acted in that step and is paid (the
    first marlhub tic-tac-toe: RLlib's sampler lost the winner's last move and reward)."""

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if term["__all__"]:
            return {"b": obs["b"]}, rew, term, trunc, info
        return obs, rew, term, trunc, info


class PaysAWatcherWithoutObs(Duel):
    """'c' takes part (it is in agents and paid every step) but never acts, and gets no final
    obs (a poker player whose opponents all fold before its turn)."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.possible_agents = ["a", "b", "c"]
        self.observation_spaces["c"] = self.observation_spaces["a"]
        self.action_spaces["c"] = self.action_spaces["a"]

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        result = super().reset(seed=seed, options=options)
        self.agents = ["a", "b", "c"]
        return result

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        obs.pop("c", None)
        return obs, rew, term, trunc, info


class ActorWithoutReward(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, {k: v for k, v in rew.items() if k == "a"}, term, trunc, info


class BoolReward(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, {k: v > 0 for k, v in rew.items()}, term, trunc, info


class NanReward(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        rew["a"] = float("nan")
        return obs, rew, term, trunc, info


class RewardsAbsentAgent(Duel):
    """'c' is possible but never takes part (never in agents, never observed), yet is rewarded."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.possible_agents = ["a", "b", "c"]
        self.observation_spaces["c"] = self.observation_spaces["a"]
        self.action_spaces["c"] = self.action_spaces["a"]

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        result = super().reset(seed=seed, options=options)
        self.agents = ["a", "b"]
        return result

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        rew["c"] = 1.0
        return obs, rew, term, trunc, info


class InfoForIdleAgent(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, rew, term, trunc, {a: {"note": 1} for a in self.possible_agents}


class InfoNotDict(Duel):
    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, rew, term, trunc, {a: 1 for a in obs}


class GlobalRandomRewards(Duel):
    """Draws a reward from numpy's global RNG, which reset(seed=...) does not seed."""

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        rew = {k: v + float(np.random.randint(1000)) for k, v in rew.items()}
        return obs, rew, term, trunc, info


class NeverEnds(Duel):
    LENGTH = 10**9


class StepAfterEndWorks(Duel):
    def step(self, action_dict: dict) -> Any:
        if self.over:  # answers instead of raising
            return {}, {}, {"__all__": True}, {"__all__": False}, {}
        return super().step(action_dict)


class ResetRaises(Duel):
    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        raise RuntimeError("no board")


class HangsAtStep2(Duel):
    def step(self, action_dict: dict) -> Any:
        if self.t == 1:
            while True:
                time.sleep(0.01)
        return super().step(action_dict)


class CrashesTheInterpreter(Duel):
    """Kills its own process at the first step, as a segfault in native code would."""

    def step(self, action_dict: dict) -> Any:
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
        return super().step(action_dict)


class SetOrderMatters(Duel):
    """Scores each step by where a metal falls in a set of strings: an order that differs
    between processes with PYTHONHASHSEED (found only in a fresh process)."""

    METALS = ("gold", "silver", "bronze", "iron", "tin", "lead", "zinc", "copper", "nickel",
              "cobalt", "chrome", "steel")

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        ranking = list(set(self.METALS))  # the bug: a set's order depends on the hash seed
        bonus = float(ranking.index(self.METALS[self.t % len(self.METALS)]))
        return obs, {k: v + bonus for k, v in rew.items()}, term, trunc, info


class SaltedByInstanceCount(Duel):
    """Salts its seed with a class-level count of instances: each instance replays its own
    episodes, but a fresh instance plays others under the same seed."""

    built = 0

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        SaltedByInstanceCount.built += 1
        self.salt = SaltedByInstanceCount.built

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        return super().reset(seed=None if seed is None else seed + self.salt, options=options)

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        return obs, {k: v + float(self.np_random.random()) for k, v in rew.items()}, term, trunc, info


class KeepsTallyAcrossResets(Duel):
    """Counts moves in a tally that only the end of an episode clears: a reset in the middle
    of an episode carries it over."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.tally = 0

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        self.tally += 1
        rew = {k: v + 0.1 * self.tally for k, v in rew.items()}
        if term["__all__"]:
            self.tally = 0
        return obs, rew, term, trunc, info


class NeedsASeed(Duel):
    """Seeds its own generator with seed + 1, which fails for reset() without a seed."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        self.rng = np.random.default_rng(seed + 1)
        return super().reset(seed=seed, options=options)


class ReadsOptionKeys(Duel):
    """Reads options["level"] whenever options are given: reset(options={}) fails."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        self.level = 0 if options is None else options["level"]
        return super().reset(seed=seed, options=options)


class RebuildsSpacesOnReset(Duel):
    """Builds new (equal) observation spaces in every reset."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        self.observation_spaces = {
            a: gym.spaces.Box(0.0, 100.0, (2,), np.float32) for a in self.possible_agents
        }
        return super().reset(seed=seed, options=options)


class SwapsActionSpaceMidEpisode(Duel):
    """Puts a new (equal) action space in place for 'b' in the middle of each episode."""

    def step(self, action_dict: dict) -> Any:
        result = super().step(action_dict)
        if self.t == 3:
            self.action_spaces["b"] = gym.spaces.Discrete(3)
        return result


class LogsActionsAsJson(Duel):
    """Logs each action dict with json.dumps, which rejects numpy integers."""

    def step(self, action_dict: dict) -> Any:
        self.log = json.dumps(action_dict)
        return super().step(action_dict)


class StepsOnAfterTheEnd(Duel):
    """Checks only the actions it is given: after the end nobody may act, so {} passes."""

    def step(self, action_dict: dict) -> Any:
        actors = [] if self.over else self._actors()
        if sorted(action_dict) != sorted(actors):
            raise ValueError(f"expected actions for {actors}, got {sorted(action_dict)}")
        if self.over:  # nothing to apply: report the end again
            return {}, {}, {"__all__": True}, {"__all__": False}, {}
        return super().step(action_dict)


class CrashesAfterTheEnd(Duel):
    """Drops its board at the end and never checks for it: step() after the end fails on None."""

    board: Any = None

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        self.board = [0] * self.LENGTH
        return super().reset(seed=seed, options=options)

    def step(self, action_dict: dict) -> Any:
        self.board[self.t] += 1
        obs, rew, term, trunc, info = Duel.step(self, action_dict)
        if term["__all__"]:
            self.board = None
        return obs, rew, term, trunc, info


class TruncatesWaitingAgentWithoutObs(Duel):
    """Truncates at step 3 with an obs for 'a' (who just moved) only; 'b' moved at step 2
    and waits, and gets no last observation."""

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, info = super().step(action_dict)
        if self.t == 3:
            self.over = True
            self.agents = []
            return {"a": self._obs("a")}, rew, {"__all__": False}, {"__all__": True}, info
        return obs, rew, term, trunc, info


class KeepsAgentsAtTheEnd(Duel):
    """Leaves `agents` full when the episode ends, as RLlib's docs examples do (a warning)."""

    def step(self, action_dict: dict) -> Any:
        result = super().step(action_dict)
        self.agents = list(self.possible_agents)
        return result


class MaskedDuel(Duel):
    """Keeps every rule: a Dict observation with an int8 action mask that 'b' must obey
    (no action 0), as PettingZoo's classic envs do."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.observation_spaces = {a: gym.spaces.Dict({
            "observation": gym.spaces.Box(0.0, 100.0, (2,), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (3,), np.int8),
        }) for a in self.possible_agents}

    def _mask(self, agent: str) -> Any:
        return np.array([0, 1, 1] if agent == "b" else [1, 1, 1], np.int8)

    def _obs(self, agent: str) -> Any:
        return {"observation": super()._obs(agent), "action_mask": self._mask(agent)}

    def step(self, action_dict: dict) -> Any:
        if not self.over and action_dict.get("b") == 0:
            raise ValueError("'b' may not play 0: its action mask forbids it")
        return super().step(action_dict)


class MaskAsListInObs(MaskedDuel):
    def _mask(self, agent: str) -> Any:
        return super()._mask(agent).tolist()


class MaskOfWrongDtypeInObs(MaskedDuel):
    def _mask(self, agent: str) -> Any:
        return super()._mask(agent).astype(np.float64)


class MaskAsListInInfos(Duel):
    """Puts the action mask in infos as a Python list."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        obs, _ = super().reset(seed=seed, options=options)
        return obs, {a: {"action_mask": [1, 1, 1]} for a in obs}

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, _ = super().step(action_dict)
        return obs, rew, term, trunc, {a: {"action_mask": [1, 1, 1]} for a in obs}


class ProbabilityMaskInInfos(MaskAsListInInfos):
    """Puts action probabilities where the action mask goes."""

    def reset(self, *, seed: Any = None, options: Any = None) -> Any:
        obs, infos = super().reset(seed=seed, options=options)
        return obs, self._probabilities(infos)

    def step(self, action_dict: dict) -> Any:
        obs, rew, term, trunc, infos = super().step(action_dict)
        return obs, rew, term, trunc, self._probabilities(infos)

    @staticmethod
    def _probabilities(infos: dict) -> dict:
        return {a: {"action_mask": np.array([0.5, 0.25, 0.25])} for a in infos}


class PadsTheActionDict(Duel):
    """Fills in a no-op for the idle agent in the caller's action dict, to log joint actions."""

    def step(self, action_dict: dict) -> Any:
        result = super().step(action_dict)
        for agent in self.possible_agents:
            action_dict.setdefault(agent, 0)
        return result


class HoardsFrames(Duel):
    """Keeps a rendered frame of every step in a list that reset() never clears."""

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.frames: list[np.ndarray] = []

    def step(self, action_dict: dict) -> Any:
        self.frames.append(np.zeros((64, 64, 3), np.uint8))
        return super().step(action_dict)


#: An instance, for `module:attr` targets that name an env object.
duel_instance = Duel()


def make_duel(config: Any) -> Duel:
    """A factory taking a config, for `module:attr` targets that name a factory."""
    return Duel(config)


class NoisyDuel(Duel):
    """Keeps every rule: observes noise drawn from ``self.np_random``, which reset(seed) seeds."""

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([self.t, self._noise()], np.float32)

    def _noise(self) -> float:
        return float(self.np_random.integers(0, 100))


class ReseedsFromTheOsOnUnseededReset(NoisyDuel):
    """Rebuilds its generator in every reset: ``default_rng(None)`` draws from the OS."""

    def reset(self, *, seed: Any = None, options: Any = None) -> tuple[dict, dict]:
        self.rng = np.random.default_rng(seed)  # the bug: no seed, a new generator
        return super().reset(seed=seed, options=options)

    def _noise(self) -> float:
        return float(self.rng.integers(0, 100))
