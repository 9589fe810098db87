"""The CUDA-graph capture sizes vLLM hashes (``VllmConfig._set_cudagraph_sizes`` and,
from 0.34.0, ``_split_cudagraph_capture_sizes``: the prefill token and decode request
grids), and the ``CUDAGraphMode`` helpers the compilation rules share. One decode token
per request: kernelcfg does not model speculative decoding (its part is unknown).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernelcfg.vllm.compile_cache.model import ConfigRefusedError

if TYPE_CHECKING:
    from kernelcfg.vllm.compile_cache.state import Build

__all__ = ["gpt_oss_hook", "graph_sizes", "has_mode", "mixed_mode", "without_piecewise"]


_SEPARATE = {"FULL_DECODE_ONLY": ("FULL", "NONE"), "FULL_AND_PIECEWISE": ("FULL", "PIECEWISE")}


def has_mode(mode: str, part: str) -> bool:
    """``CUDAGraphMode.has_mode``."""
    return part in _SEPARATE.get(mode, (mode,))


def without_piecewise(mode: str) -> str:
    """``CUDAGraphMode.without_piecewise``."""
    return {"PIECEWISE": "NONE", "FULL_AND_PIECEWISE": "FULL_DECODE_ONLY"}.get(mode, mode)


def mixed_mode(mode: str) -> str:
    """``CUDAGraphMode.mixed_mode``."""
    return _SEPARATE[mode][1] if mode in _SEPARATE else mode


# ----------------------------------------------------------------- construction


def graph_sizes(b: Build, eager: bool) -> None:
    """The static-graph platforms' step: warm-ups and the capture sizes (the CPU has
    no CUDA graphs)."""
    cc = b.cc
    if b.kind not in ("cuda", "rocm"):
        cc["cudagraph_mode"] = "NONE"
        return
    if eager:
        cc["cudagraph_mode"] = "NONE"
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
    else:
        cc["cudagraph_num_of_warmups"] = 1
    _set_cudagraph_sizes(b, eager)


def _set_cudagraph_sizes(b: Build, eager: bool) -> None:
    """``VllmConfig._set_cudagraph_sizes`` (one decode token per request: no
    speculative decoding)."""
    cc = b.cc
    s = b.values["SchedulerConfig"]
    if eager or cc["cudagraph_mode"] == "NONE" or b.model is None:
        cc["max_cudagraph_capture_size"] = 0
        cc["cudagraph_capture_sizes"] = []
        _compile_sizes(b)
        return
    legacy = (
        cc["max_cudagraph_capture_size"] is not None or cc["cudagraph_capture_sizes"] is not None
    )
    max_size = cc["max_cudagraph_capture_size"]
    decode: list[int] = []
    seqs, tokens = s["max_num_seqs"], s["max_num_batched_tokens"]
    if max_size is None:
        default = 1024 if b.capability_family(100) else 512
        max_size = min(seqs * 2, default)
        if seqs <= max_size:
            decode = [seqs]
    max_size = min(tokens, max_size)
    if cc["cudagraph_capture_sizes"] is not None:
        sizes = sorted(i for i in set(cc["cudagraph_capture_sizes"]) if i <= tokens)
    else:
        sizes = [i for i in (1, 2, 4) if i <= max_size]
        if max_size >= 8:
            sizes += list(range(8, min(max_size + 1, 256), 8))
        if max_size >= 256:
            sizes += list(range(256, max_size + 1, 16))
        if tokens <= max_size and tokens not in sizes:
            sizes.append(tokens)
        sizes = sorted(set(sizes + [d for d in decode if d <= tokens]))
    valid = sizes[-1] if sizes else 0
    if (
        cc["max_cudagraph_capture_size"] is not None
        and cc["max_cudagraph_capture_size"] != valid
        and cc["cudagraph_capture_sizes"] is not None
    ):
        raise ConfigRefusedError(
            "ValidationError",
            f"customized max_cudagraph_capture_size(={cc['max_cudagraph_capture_size']}) "
            f"should be consistent with the max value of cudagraph_capture_sizes(={valid})",
        )
    cc["max_cudagraph_capture_size"] = valid
    cc["cudagraph_capture_sizes"] = sizes
    if "prefill_cudagraph_capture_token_sizes" in cc:
        _split_sizes(b, legacy)
    _compile_sizes(b)


def _compile_sizes(b: Build) -> None:
    """``post_init_cudagraph_sizes``: ``compile_sizes`` (``cudagraph_capture_sizes``
    stands for the capture sizes)."""
    cc = b.cc
    out: list[int] = []
    for x in list(dict.fromkeys(cc["compile_sizes"] or [])):
        out.extend(cc["cudagraph_capture_sizes"] if isinstance(x, str) else [x])
    cc["compile_sizes"] = out
    cc["cudagraph_capture_sizes"] = sorted(cc["cudagraph_capture_sizes"])


def _walk_grid(limit: int, step: Callable[[float], float]) -> list[int]:
    """``_walk_grid``: 1 to ``limit``, each size the next multiple of the largest power
    of two not above ``step(size)``."""
    grid, size = [], 1
    while size < limit:
        grid.append(size)
        stride = 1 << max(0, math.floor(math.log2(max(1.0, step(size)))))
        size = (size // stride + 1) * stride
    return [*grid, limit] if limit else []


def _prefill_grid(max_tokens: int) -> list[int]:
    """``prefill_cudagraph_capture_grid`` (not the interactivity mode)."""
    return _walk_grid(max_tokens, lambda t: min(t, max(8, t / 4), 0.07 * max(t, 4096)))


def _decode_grid(max_requests: int) -> list[int]:
    """``decode_cudagraph_capture_grid``."""
    return _walk_grid(max_requests, lambda n: 0.65 * n ** (2 / 3))


def _decode_shapes(sizes: list[int], max_reqs: int, max_tokens: int) -> set[int]:
    """``decode_cudagraph_capture_shapes`` for one token per request: the request
    counts captured, the first above the limit captured at the limit."""
    ordered = sorted(set(sizes))
    limit = min(max_reqs, max_tokens)
    if limit < 1:
        return set()
    reachable = ordered[: bisect.bisect_left(ordered, limit) + 1]
    return {min(n, limit) for n in reachable}


def _split_sizes(b: Build, legacy: bool) -> None:
    """``_split_cudagraph_capture_sizes`` (one decode token per request)."""
    cc = b.cc
    s = b.values["SchedulerConfig"]
    seqs, tokens = s["max_num_seqs"], s["max_num_batched_tokens"]
    prefill = cc["prefill_cudagraph_capture_token_sizes"]
    max_prefill = cc["max_prefill_cudagraph_capture_tokens"]
    decode = cc["decode_cudagraph_capture_request_sizes"]
    max_decode = cc["max_decode_cudagraph_capture_requests"]
    split = any(x is not None for x in (prefill, max_prefill, decode, max_decode))
    shared, shared_max = list(cc["cudagraph_capture_sizes"]), cc["max_cudagraph_capture_size"]
    wide = not legacy and b.capability_family(100)
    if wide and cc["max_decode_cudagraph_capture_tokens"] is None:
        cc["max_decode_cudagraph_capture_tokens"] = 8192
    if prefill is not None:
        prefill = _explicit(prefill, tokens, max_prefill, "prefill_cudagraph_capture_token_sizes")
    elif max_prefill is not None or wide:
        prefill = _prefill_grid(min(8192 if max_prefill is None else max_prefill, tokens))
    else:
        prefill = list(shared)
    if decode is not None:
        decode = _explicit(decode, seqs, max_decode, "decode_cudagraph_capture_request_sizes")
    elif max_decode is not None or wide:
        decode = _decode_grid(seqs if max_decode is None else min(max_decode, seqs))
    else:
        decode = sorted({min(x, seqs) for x in shared if x <= shared_max})
    cc["prefill_cudagraph_capture_token_sizes"] = prefill
    cc["max_prefill_cudagraph_capture_tokens"] = max(prefill, default=0)
    cc["decode_cudagraph_capture_request_sizes"] = decode
    cc["max_decode_cudagraph_capture_requests"] = max(decode, default=0)
    decode_max = min(tokens, cc["max_decode_cudagraph_capture_tokens"] or tokens)
    decode_tokens = _decode_shapes(decode, seqs, decode_max)
    token_sizes = decode_tokens | set(prefill)
    if not (legacy and not split) and mixed_mode(cc["cudagraph_mode"]) == "NONE":
        token_sizes = set(decode_tokens)
    if legacy and split:
        token_sizes = set(shared)
    cc["cudagraph_capture_sizes"] = sorted(token_sizes)
    cc["max_cudagraph_capture_size"] = max(token_sizes, default=0)
    if not token_sizes:
        cc["cudagraph_mode"] = "NONE"


def _explicit(sizes: list[int], limit: int, cap: int | None, name: str) -> list[int]:
    """Sizes given explicitly: those within ``[1, limit]``, refused above their cap."""
    kept = sorted({x for x in sizes if 1 <= x <= limit})
    if cap is not None and kept and kept[-1] > cap:
        cap_name = name.replace("_sizes", "s").replace("capture_token", "capture_tokens")
        raise ConfigRefusedError(
            "ValidationError", f"{name} holds {kept[-1]}, above {cap_name}={cap}."
        )
    return kept


def gpt_oss_hook(b: Build) -> None:
    """``GptOssForCausalLMConfig.verify_and_update_config``: the capture sizes widened
    to the legacy 1024-token cap, unless a size was given or on SM100."""
    cc = b.cc
    split = "prefill_cudagraph_capture_token_sizes" in cc
    names = ["cudagraph_capture_sizes", "max_cudagraph_capture_size"]
    if split:
        names += [
            "prefill_cudagraph_capture_token_sizes",
            "max_prefill_cudagraph_capture_tokens",
            "decode_cudagraph_capture_request_sizes",
            "max_decode_cudagraph_capture_requests",
        ]
    if any(cc.get(n) is not None for n in names):
        return
    if not split:
        cc["max_cudagraph_capture_size"] = 1024
        return
    if b.capability_family(100):
        return
    tokens = min(b.values["SchedulerConfig"]["max_num_batched_tokens"], 1024)
    sizes = {1, 2, 4, *range(8, 256, 8), *range(256, 1024, 16)}
    cc["prefill_cudagraph_capture_token_sizes"] = sorted(
        {s for s in sizes if s < tokens} | {tokens}
    )
    cc["max_decode_cudagraph_capture_requests"] = 1024 // 1


# ----------------------------------------------------------------- __post_init__
