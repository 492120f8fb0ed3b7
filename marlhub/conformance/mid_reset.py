"""reset.mid_episode: a reset in the middle of an episode starts a clean one.

:class:`MidEpisodeReset` resets a recorded episode midway and plays it again from its
seed: a reset halfway finds counters and boards that only an episode's end clears; an
env that forgets its dead (or its late joiners) in ``step`` at the episode's end instead
of in ``reset`` only shows it when the reset comes after a death (a join)
(:func:`cut_points`). Then, on a fresh instance, it resets a cut episode into another
seed and plays on as that instance played the seed from a clean start: what leaks (a
map drawn only when an episode ended, bombs still ticking) may show nowhere in the
recorded episode and somewhere there.

Example:
    >>> from marlhub.conformance.trajectories import Recording
    >>> ref = Recording(0, 0, actions=[{"a": 0, "b": 0}] * 5, snapshots=[
    ...     ({"a": 0, "b": 0}, {}, {}, {}),
    ...     ({"a": 1, "b": 1}, {}, {"b": True, "__all__": False}, {}),  # b dies at step 1
    ...     ({"a": 2}, {}, {}, {}),
    ...     ({"a": 3, "c": 1}, {}, {}, {}),                             # c joins at step 3
    ...     ({"a": 4, "c": 2}, {}, {}, {}),
    ...     ({"a": 5, "c": 3}, {}, {"__all__": True}, {})])
    >>> cut_points(ref)
    [2, 4]
"""

from __future__ import annotations

from marlhub.conformance.calls import EnvTimeout, unpack_reset, unpack_step
from marlhub.conformance.host import ProbeHost, close_quietly, fresh_env
from marlhub.conformance.trajectories import (
    Recording,
    Snapshot,
    first_difference,
    raised_in_play,
    snapshot,
)
from marlhub.contract import rules
from marlhub.core import ALL
from marlhub.episode.play import RandomEpisode, random_actions
from marlhub.episode.status import truthy
from marlhub.spaces import ActionSampler

__all__ = ["MidEpisodeReset", "cut_points"]

_FIX = ("Set all episode state in reset() (step counters, boards, buffers, pending events, the "
        "set of done agents and of agents that joined), not only when an episode ends.")


class MidEpisodeReset:
    """The ``reset.mid_episode`` probe of one check: ``MidEpisodeReset(host).run(ref)``."""

    def __init__(self, host: ProbeHost) -> None:
        self.d = host

    def run(self, ref: Recording) -> None:
        """Cut ``ref`` at each of its :func:`cut_points`, reset with its seed and replay it
        whole, then reset the last cut into another seed; report the first that changed."""
        cuts = cut_points(ref)
        for cut in cuts:
            if not self._reset_after(ref, cut):
                return  # one finding is enough
        if cuts:
            self._into_another_seed(ref, cuts[-1])

    def _reset_after(self, ref: Recording, half: int) -> bool:
        """Play ``half`` steps, reset and replay ``ref``; report and return False if it changed."""
        into: list[Snapshot] = []
        env, kwargs = self.d.env, self.d.reset_kwargs
        error = (raised_in_play(env, ref.seed, ref.actions[:half], kwargs, [])
                 or raised_in_play(env, ref.seed, ref.actions, kwargs, into))
        recipe = (f"reproduce: env.reset(seed={ref.seed}), {half} of the episode's action dicts, "
                  f"env.reset(seed={ref.seed}) again, then all {len(ref.actions)}")
        if error:
            self.d.add(rules.RESET_MID_EPISODE,
                       f"after a reset in the middle of an episode (after {half} steps), the same "
                       f"seed ({ref.seed}) and actions raised {error}, where after a reset at the "
                       f"end they did not ({recipe}). {_FIX}", episode=ref.episode)
            return False
        difference = first_difference(ref.snapshots, into)
        if difference:
            k, what, reason = difference
            self.d.add(rules.RESET_MID_EPISODE,
                       f"a reset in the middle of an episode (after {half} of its "
                       f"{len(ref.actions)} steps) did not start a clean one: the same seed "
                       f"({ref.seed}) and actions then gave different {what} at step {k} "
                       f"({reason}; after a reset at the end vs in the middle; {recipe}). {_FIX}",
                       episode=ref.episode, step=k)
            return False
        return True

    def _into_another_seed(self, ref: Recording, cut: int) -> None:
        """On a fresh instance: play another seed from a clean start with random actions; then
        play ``cut`` steps of ``ref``, reset with that seed and play the same actions again.
        One instance for both, so what differs between instances is not counted here."""
        fresh = fresh_env(self.d)
        if fresh is None:
            return
        seed = (0 if ref.seed is None else ref.seed) + 1
        sampler = ActionSampler(seed)
        space_of = self.d.spaces.action_space
        clean: list[Snapshot] = []
        into: list[Snapshot] = []
        try:
            run = RandomEpisode(
                fresh, seed, max_steps=max(len(ref.actions), 1), reset_kwargs=self.d.reset_kwargs,
                read_reset=unpack_reset, read_step=unpack_step,
                choose=lambda actors, obs, infos: random_actions(actors, obs, infos, space_of,
                                                                 sampler))
            for step in run:
                clean.append(snapshot(step.obs, step.rewards, step.terminateds, step.truncateds))
            kwargs = self.d.reset_kwargs
            if (raised_in_play(fresh, ref.seed, ref.actions[:cut], kwargs, [])
                    or raised_in_play(fresh, seed, run.actions, kwargs, into)):
                return  # a replay that raises here is judged by the episodes and the cuts above
        except EnvTimeout:
            raise
        except Exception:
            return  # the episodes report what the env raises
        finally:
            close_quietly(fresh)
        difference = first_difference(clean, into)
        if difference:
            k, what, reason = difference
            self.d.add(rules.RESET_MID_EPISODE,
                       f"a reset into another seed in the middle of an episode (after {cut} of "
                       f"the {len(ref.actions)} steps seeded {ref.seed}, reset(seed={seed})) did "
                       f"not start the episode the same instance started with that seed and the "
                       f"same actions from a clean start: different {what} at step {k} ({reason};"
                       f" from a clean start vs after the cut). {_FIX}", episode=ref.episode,
                       step=k)


def cut_points(ref: Recording) -> list[int]:
    """The numbers of steps after which to reset: after the first death, after the first
    late join (each while the episode goes on), else halfway; empty for one-step episodes."""
    steps = len(ref.actions)
    if steps < 2:
        return []
    seen: dict[object, int] = {}  # observations so far, by agent
    death = join = None
    for k, (obs, _, terminateds, truncateds) in enumerate(ref.snapshots[:steps]):
        done = [a for flags in (terminateds, truncateds) for a, v in flags.items()
                if a != ALL and truthy(v)]
        if death is None and done:
            death = k + 1  # one step after the death, so the dead agent is gone
        # A late joiner first shows once another agent has been seen twice (in turn-based
        # games every player shows in its first round).
        if join is None and k and any(a not in seen for a in obs) and max(seen.values()) >= 2:
            join = k + 1
        for agent in obs:
            seen[agent] = seen.get(agent, 0) + 1
    cuts = sorted({c for c in (death, join) if c is not None and c < steps})
    return cuts or [steps // 2]
