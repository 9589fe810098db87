"""A ``vllm serve`` line read the way the release's own ``vllm serve`` reads it, in one
room: :mod:`.read` (the line start to end, and its memo) over vLLM's pre-processing
(:mod:`.preprocess`, with where each word came from; :mod:`.config_file`) and the
parser rebuilt from ``serve-X.Y.Z.json`` (:mod:`.parser`, with the plain-line reader;
its types in :mod:`.value_types`).

What the options that bear on kernels then mean is :mod:`kernelcfg.flags.kernel_flags`'s.
"""
