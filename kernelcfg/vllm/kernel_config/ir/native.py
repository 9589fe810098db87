"""Reference (``native``) implementations of vLLM's IR ops, in torch.

They follow vLLM's own: compute in float32 (``gelu_and_mul_sparse`` in the input's
dtype), apply the weight in the weight's dtype, return the input's dtype. This module
imports torch at the top; only :mod:`kernelcfg.vllm.kernel_config.ir` imports it, and
only when asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor

__all__ = ["NATIVE", "fused_add_rms_norm", "gelu_and_mul_sparse", "rms_norm"]


def _normalize(
    x: Tensor, weight: Tensor | None, epsilon: float, variance_size: int | None
) -> Tensor:
    """RMS-normalise float32 ``x`` over its last dimension, then weight it."""
    sample = x if variance_size is None else x[..., :variance_size]
    variance = sample.pow(2).mean(dim=-1, keepdim=True)
    out = x * torch.rsqrt(variance + epsilon)
    if weight is not None:
        out = out.to(weight.dtype) * weight
    return out


def rms_norm(
    x: Tensor, weight: Tensor | None, epsilon: float, variance_size: int | None = None
) -> Tensor:
    """Root-mean-square normalisation; ``variance_size`` limits the variance's inputs."""
    return _normalize(x.to(torch.float32), weight, epsilon, variance_size).to(x.dtype)


def fused_add_rms_norm(
    x: Tensor,
    x_residual: Tensor,
    weight: Tensor | None,
    epsilon: float,
    variance_size: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Add the residual, normalise the float32 sum; return (output, new residual)."""
    total = x.to(torch.float32) + x_residual.to(torch.float32)
    residual = total.to(x.dtype)
    return _normalize(total, weight, epsilon, variance_size).to(x.dtype), residual


def gelu_and_mul_sparse(x: Tensor, std_multiplier: float, approximate: str = "none") -> Tensor:
    """Drop gate values below mean + k·std, GELU the rest, multiply by the up half."""
    half = x.shape[-1] // 2
    gate = x[..., :half]
    mean = torch.mean(gate, dim=-1, keepdim=True)
    std = torch.std(gate, dim=-1, keepdim=True, unbiased=False)
    sparse = F.relu(gate - (mean + std * std_multiplier))
    return F.gelu(sparse, approximate=approximate) * x[..., half:]


NATIVE: dict[str, Callable[..., Any]] = {
    "rms_norm": rms_norm,
    "fused_add_rms_norm": fused_add_rms_norm,
    "gelu_and_mul_sparse": gelu_and_mul_sparse,
}
"""The native implementation of each op, by op name."""
