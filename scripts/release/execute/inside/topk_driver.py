"""Runs inside a release's throwaway venv: vLLM's own sparse-indexer top-k resolution
(``SparseIndexerTopk.resolve_backend`` in
``vllm/model_executor/layers/indexer_topk.py``) per (target, install world, rows,
top-k, ``sparse_indexer_topk_backend`` value), each pick or refusal recorded.

Reads the request (JSON, stdin; written by ``scripts/release/execute/topk.py``), writes
``{"found": ..., "records": [...]}`` (JSON, stdout). Logits are ``meta``-device tensors
of the requested shape (their dtype and strides are what vLLM reads).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any

import simulate
import simulate_rocm

MODULE = "vllm.model_executor.layers.indexer_topk"


def _values() -> list[str]:
    kernel = importlib.import_module("vllm.config.kernel")
    literal = getattr(kernel, "SparseIndexerTopkBackend", None)
    return list(typing.get_args(literal)) if literal is not None else ["auto"]


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {' | '.join(str(exc).splitlines())[:400]}"


def _outcome(module: Any, value: str, logits: Any, topk: int, rows: int) -> dict[str, Any]:
    try:
        layer = module.SparseIndexerTopk(value)
        picked = layer.resolve_backend(logits, topk, rows)
    except Exception as exc:
        return {"status": "refused" if value != "auto" else "error", "message": _message(exc)}
    out: dict[str, Any] = {"status": "selected", "backend": picked}
    if value == "auto" and hasattr(layer, "_cooperative_constraints"):
        out["cooperative_refused"] = layer._cooperative_constraints(logits, topk, rows)
    return out


def run(request: dict[str, Any]) -> dict[str, Any]:
    import torch

    simulate.install_proxy()
    simulate_rocm.first_target(request["targets"])  # CUDA targets only
    found: dict[str, Any] = {}
    try:
        module = importlib.import_module(MODULE)
    except ImportError as exc:
        found["missing"] = _message(exc)
        return {"found": found, "records": []}
    values = _values()
    found["values"] = values
    found["resolve_backend"] = str(inspect.signature(module.SparseIndexerTopk.resolve_backend))
    worlds = simulate.Worlds()
    records = []
    each = simulate_rocm.each_world(request["targets"], request["worlds"], worlds, None)
    for target, world, libs in each:
        simulate.stand_in_submodules(libs)
        for rows in request["rows"]:
            logits = torch.empty(rows, request["vocab"], dtype=torch.float32, device="meta")
            for topk in request["topk"]:
                shape = f"rows={rows},topk={topk}"
                for value in values:
                    out = _outcome(module, value, logits, topk, rows)
                    records.append([target, shape, world, value, out])
    found["probes"] = worlds.describe()
    return {"found": found, "records": records}


if __name__ == "__main__":
    simulate.serve(run)
