"""vLLM's attention backend pick: the selector's walk over ``selector-X.Y.Z.json``
(``selector``), one backend's checks (``checks``), the CPU and XPU decision trees
(``trees``), and what the selector reads and answers (``facts``, ``features``). The
``AttentionConfig`` it reads is :mod:`kernelcfg.vllm.kernel_config.attention`."""
