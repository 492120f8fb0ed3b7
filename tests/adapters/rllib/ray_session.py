"""What the tests that train with RLlib share besides the ``ray_instance`` fixture
(``tests/conftest.py``): the policy map of a two-player game, what one PPO
iteration on it must show, and the RLlib guide's PPO config for any registry id."""

from __future__ import annotations

from typing import Any


def by_player(agent_id: Any, episode: Any, **kwargs: Any) -> str:
    """A policy per seat of a two-player game: ``"first"`` for player1, else ``"second"``."""
    return "first" if agent_id == "player1" else "second"


def assert_both_policies_learned(result: dict[str, Any], min_steps: int = 128) -> None:
    """One ``algo.train()`` result: steps and episodes sampled, both players acted and their
    policies learned from it."""
    runners = result["env_runners"]
    assert runners["num_env_steps_sampled_lifetime"] >= min_steps
    assert runners["num_episodes_lifetime"] > 0
    assert set(runners["module_episode_returns_mean"]) == {"first", "second"}
    assert set(result["learners"]) >= {"first", "second"}


def flattening_ppo_config(env_id: str) -> Any:
    """The RLlib guide's PPO config for a registry id: one policy per agent, observations
    flattened by RLlib's own ``FlattenObservations`` connector, a tiny network, local."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.connectors.env_to_module import FlattenObservations

    import marlhub
    from marlhub.registry import register_with_ray

    (name,) = register_with_ray(env_id)
    agents = marlhub.make(env_id).possible_agents
    return (
        PPOConfig()
        .environment(name)
        .multi_agent(policies=set(agents),
                     policy_mapping_fn=lambda agent_id, episode, **kw: agent_id)
        .env_runners(num_env_runners=0,
                     env_to_module_connector=lambda env, spaces, device:
                     FlattenObservations(multi_agent=True))
        .rl_module(model_config={"fcnet_hiddens": [8]})
    )
