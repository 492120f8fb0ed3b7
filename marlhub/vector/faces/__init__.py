"""The faces of a vector env: conversions between what a source reports and what a learner takes.

* :mod:`~marlhub.vector.faces.arrays`: lists of per-copy dicts -> arrays per group of
  agents (:class:`~marlhub.vector.faces.arrays.ArrayBatch`,
  :class:`~marlhub.vector.faces.arrays.DictArrays`);
* :mod:`~marlhub.vector.faces.dicts`: a batched simulator's arrays -> lists of dicts;
* :mod:`~marlhub.vector.faces.group_actions`: the checks of one action array per group;
* :mod:`~marlhub.vector.faces.agent_slots`: :class:`~marlhub.vector.AgentSlotVectorEnv`,
  a ``gymnasium.vector.VectorEnv`` over the array face.
"""
