#!/bin/sh
vllm serve deepseek-ai/DeepSeek-R1 \
  --tensor-parallel-size 8 --moe-backend aiter
