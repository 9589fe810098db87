"""vLLM's fused-MoE backend pick (``--moe-backend``): the oracle walk over
``moe-X.Y.Z.json`` and what an MoE checkpoint's experts are."""
