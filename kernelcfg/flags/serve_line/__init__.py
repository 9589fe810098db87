"""A ``vllm serve`` line read the way the release's own ``vllm serve`` reads it."""
