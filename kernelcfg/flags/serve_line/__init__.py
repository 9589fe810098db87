"""A ``vllm serve`` line read the way the release's own ``vllm serve`` reads it, in one
room: :mod:`.read` (the line start to end, and its memo) over the pre-processing
(:mod:`.preprocess`, :mod:`.config_file`), the words' origins (:mod:`.tokens`), the
plain-line reader (:mod:`.plain`) and the argparse parser rebuilt from
``serve-X.Y.Z.json`` (:mod:`.parser`, its types in :mod:`.value_types`).

What the options that bear on kernels then mean is :mod:`kernelcfg.flags.kernel_flags`'s.
"""
