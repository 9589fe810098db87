"""What vLLM picks for each backend field: the attention selector (``attention``), the
fused-MoE oracle (``moe``), the linear kernel (``linear``), the sparse-indexer top-k
(``topk``); the condition words of their data (``words``), kernelcfg's plain reasons
before vLLM's (``glosses``), and the quantisation schemes a kernel serves
(``quantization``).

Each walk follows one release's ``releases/<kind>-X.Y.Z.json``; the code names no
backend. Imports ``kernel_config`` and the ground floor of :mod:`kernelcfg.vllm`, never
``compile_cache``.
"""
