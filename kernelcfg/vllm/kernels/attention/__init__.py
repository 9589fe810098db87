"""vLLM's attention backend: the selector's walk over ``selector-X.Y.Z.json`` and the
``AttentionConfig`` (``--attention-config``) of each release with its hash."""
