"""The sources of a vector env: what steps the copies and reports what came back.

Each source implements the five calls the faces of
:class:`~marlhub.vector.base.VectorMultiAgentEnv` are written over (``_reset``,
``_step``, ``_async_reset``, ``_send``, ``_recv``) and records what comes back in
its :class:`~marlhub.vector.book.CopyBook`:

* :mod:`~marlhub.vector.sources.in_process`: copies stepped one after another in
  this process (:class:`~marlhub.vector.SyncVectorMultiAgentEnv`);
* :mod:`~marlhub.vector.sources.workers`: copies in worker processes
  (:class:`~marlhub.vector.AsyncVectorMultiAgentEnv`), with its cycle
  (``workers_cycle``), the worker's loop (``worker``), the processes
  (``processes``) and the shared memory they write (``memory``);
* :mod:`~marlhub.vector.sources.batched`: one natively batched simulator
  (:class:`~marlhub.vector.BatchedVectorEnv`), whose copies step together
  (``batched_cycle``);
* external simulators that call in are a source too:
  :class:`marlhub.external.ExternalVectorEnv`.
"""
