"""The argument rules of vLLM's IR providers (``supports_args``), by rule name.

A release's data names, per provider, which rule applies; the rules themselves are
here. Each takes the op's arguments by name, defaults applied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["PREDICATES"]

Predicate = Callable[[dict[str, Any]], bool]
"""An argument rule: the op's arguments by name to whether the provider takes them."""


def _weight_matches(x: Any, weight: Any) -> bool:
    return weight is None or weight.dtype == x.dtype


def _vllm_c(args: dict[str, Any]) -> bool:
    """vLLM's C kernels: no ``variance_size``, weight absent or of x's dtype."""
    return args["variance_size"] is None and _weight_matches(args["x"], args["weight"])


def _aiter(args: dict[str, Any]) -> bool:
    """AITER (before 0.31.0): fp16/bf16 input, no ``variance_size``, matching weight."""
    x = args["x"]
    return (
        args["variance_size"] is None
        and x.dtype in (torch.float16, torch.bfloat16)
        and _weight_matches(x, args["weight"])
    )


def _flattens_for_free(x: Any) -> bool:
    """Whether ``x`` reshapes to 2-D without a copy (size-1 dims ignored)."""
    if x.dim() <= 2:
        return True
    if x.stride(-1) != 1:
        return False
    expected = x.size(-1)
    for i in range(x.dim() - 2, -1, -1):
        if x.size(i) != 1 and x.stride(i) != expected:
            return False
        expected *= x.size(i)
    return True


def _aiter_flat2d(args: dict[str, Any]) -> bool:
    """AITER (0.31.0 on): as before, and every activation flattens to 2-D for free."""
    activations = [args["x"]] + ([args["x_residual"]] if "x_residual" in args else [])
    return _aiter(args) and all(_flattens_for_free(t) for t in activations)


def _views_as_2d(x: Any) -> bool:
    if x.dim() < 2:
        return False
    if x.dim() == 2:
        return True
    for d in range(x.dim() - 1):
        if x.size(d + 1) != 1 and x.stride(d) != x.stride(d + 1) * x.size(d + 1):
            return False
    return True


def _oink_rows_aligned(x2d: Any) -> bool:
    if x2d.dim() != 2 or x2d.stride(1) != 1:
        return False
    if x2d.dtype in (torch.float16, torch.bfloat16):
        divisor = 16
    elif x2d.dtype == torch.float32:
        divisor = 8
    else:
        return False
    return bool(x2d.stride(0) % divisor == 0)


def _oink_tensor_ok(t: Any) -> bool:
    return _views_as_2d(t) and _oink_rows_aligned(t.view(-1, t.shape[-1]))


def _oink(args: dict[str, Any]) -> bool:
    """Oink (SM100+): weight required, same dtypes, 2-D views with aligned rows."""
    x, weight = args["x"], args["weight"]
    if args["variance_size"] is not None or weight is None or x.dim() < 2:
        return False
    if x.dtype != weight.dtype or not weight.is_contiguous() or not _oink_tensor_ok(x):
        return False
    residual = args.get("x_residual")
    if residual is None:
        return True
    return bool(
        x.dtype == residual.dtype and x.shape == residual.shape and _oink_tensor_ok(residual)
    )


def _triton_gelu(args: dict[str, Any]) -> bool:
    """Triton gelu_and_mul_sparse: CUDA, contiguous, tanh, even last dim ≤ 65536."""
    x = args["x"]
    if x.device.type != "cuda" or x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return False
    if not x.is_contiguous() or x.ndim == 0 or args["approximate"] != "tanh":
        return False
    last = x.shape[-1]
    return bool(last > 0 and last % 2 == 0 and last // 2 <= 32768)


PREDICATES: dict[str, Predicate] = {
    "vllm_c": _vllm_c,
    "aiter": _aiter,
    "aiter_flat2d": _aiter_flat2d,
    "oink": _oink,
    "triton_gelu": _triton_gelu,
}
"""Each argument rule, by the name a release's data uses for it."""
