"""The faces of a vector env: conversions between what a source reports and what a learner takes
(arrays per group, dicts from a batched simulator's arrays, checks of action arrays, and
``AgentSlotVectorEnv``)."""
