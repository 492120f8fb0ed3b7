"""The skrl learner the tests train through a PettingZoo view and through ``to_skrl``.

One categorical policy and one value network per agent (32 tanh units), IPPO or MAPPO
(MAPPO's critic reads the global state), rollouts of 32 steps, and no TensorBoard data or
checkpoints (skrl writes them under ``./runs`` otherwise). Imports skrl: call it after
``pytest.importorskip("skrl")``.
"""

from __future__ import annotations

from typing import Any

#: skrl 2.1's configuration wants these per-agent dicts even when they are empty.
PER_AGENT = ("learning_rate_scheduler_kwargs", "observation_preprocessor_kwargs",
             "state_preprocessor_kwargs", "value_preprocessor_kwargs")


def skrl_learner(env: Any, algorithm: str, memories: dict[str, Any],
                 directory: Any) -> tuple[Any, dict[str, dict[str, Any]]]:
    """``(learner, models)``: skrl's ``algorithm`` ("IPPO" or "MAPPO") on skrl env ``env``,
    with ``memories`` per agent, writing only under ``directory``."""
    from skrl.multi_agents.torch.ippo import IPPO
    from skrl.multi_agents.torch.mappo import MAPPO
    from skrl.utils.model_instantiators.torch import categorical_model, deterministic_model

    agents = env.possible_agents
    critic_input = "STATES" if algorithm == "MAPPO" else "OBSERVATIONS"
    models: dict[str, dict[str, Any]] = {}
    for a in agents:
        spaces = dict(observation_space=env.observation_space(a),
                      state_space=env.state_space(a), action_space=env.action_space(a),
                      device=env.device)
        models[a] = {
            "policy": categorical_model(**spaces, output="ACTIONS", network=[
                {"name": "net", "input": "OBSERVATIONS", "layers": [32],
                 "activations": "tanh"}]),
            "value": deterministic_model(**spaces, output="ONE", network=[
                {"name": "net", "input": critic_input, "layers": [32], "activations": "tanh"}]),
        }
    cls = MAPPO if algorithm == "MAPPO" else IPPO
    learner = cls(possible_agents=agents, models=models, device=env.device, memories=memories,
                  observation_spaces=env.observation_spaces, state_spaces=env.state_spaces,
                  action_spaces=env.action_spaces,
                  cfg={"rollouts": 32, "learning_epochs": 2, "mini_batches": 2,
                       "experiment": {"directory": str(directory), "write_interval": 0,
                                      "checkpoint_interval": 0},
                       **{key: {a: {} for a in agents} for key in PER_AGENT}})
    return learner, models
