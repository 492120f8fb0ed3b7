"""The sources of a vector env: what steps the copies (in this process, in workers, batched).

Each implements the five calls the faces are written over (``_reset``, ``_step``,
``_async_reset``, ``_send``, ``_recv``) and records what comes back in its
:class:`~marlhub.vector.book.CopyBook`; external simulators are one too
(:class:`marlhub.external.ExternalVectorEnv`).
"""
