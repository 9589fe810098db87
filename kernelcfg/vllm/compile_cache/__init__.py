"""vLLM's compile-cache key, part by part: the key and its directory (``key``), the env
part (``env``, from ``env-X.Y.Z.json``), the config part (``config``: every sub-config's
factors and hash, from ``compile-config-X.Y.Z.json``) built by vLLM's start-up rules
(``rules`` over ``state``: the CUDA-graph sizes in ``capture``, the graph split in
``graph``, the fusion passes in ``passes``, what kernelcfg does not model in ``scope``),
and the model part (``model``: transformers' text of the model's config).

The top floor of :mod:`kernelcfg.vllm`: it reads the kernel and attention configs
(``kernel_config``) and the checkpoint; nothing below reads it.
"""
