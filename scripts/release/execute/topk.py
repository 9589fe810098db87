"""Execute a vLLM release's own sparse-indexer top-k resolution and write the project's
vectors, ``tests/golden/vllm-X.Y.Z/executed-topk.json``.

    python scripts/release/execute/topk.py 0.34.0 [--targets h100,b200] [--out FILE]

Same venv, stand-in CUDA libraries, simulated targets and install worlds as ``moe.py``;
runs ``inside/topk_driver.py``: ``SparseIndexerTopk(value).resolve_backend(logits,
topk, rows)`` per (target, world, rows, top-k, value) with FP32 ``[rows, 16384]``
contiguous logits (as real vLLM's vectors).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import moe
from vectors import index_records, sha256

ROWS = [1, 64, 65, 512]
TOPK = [512, 1024, 2048, 4096]
VOCAB = 16384
"""The shapes asked about: rows either side of cooperative's 64-row limit, every top-k
the kernels name and one beyond; FP32 logits ``[rows, 16384]``."""


def _meta(version: str, venv: Path, answer: dict[str, Any], wall: float) -> dict[str, Any]:
    whl = common.wheel(version)
    found = answer["found"]
    return {
        "vllm_version": version,
        "made_by": "scripts/release/execute/topk.py (vLLM's own "
        "SparseIndexerTopk.resolve_backend, executed)",
        "lookup": "topk.index[target]['rows=R,topk=K'][world][value] -> topk.outcomes[id]: "
        "status (selected | refused | error), backend, message (vLLM's exception), "
        "cooperative_refused (auto: vLLM's _cooperative_constraints, empty when applicable)",
        "wheel": {"name": whl.name, "sha256": sha256(whl)},
        "torch": common.TORCH_PIN,
        "venv": str(venv),
        "platform": {
            "how": "as executed-moe.json: vllm.platforms._current_platform replaced by a "
            "proxy forwarding to a subclass of vLLM's CudaPlatformBase per target",
            "targets": {t: moe.TARGETS[t] for t in answer["targets"]},
        },
        "worlds": moe.WORLDS,
        "probes": found.get("probes"),
        "logits": f"torch.empty(rows, {VOCAB}, dtype=float32, device='meta') (dtype and "
        "strides are what vLLM reads)",
        "rows": ROWS,
        "topk": TOPK,
        "values": found.get("values"),
        "missing": found.get("missing"),
        "not_run": {
            "ROCm targets (aiter)": "only CUDA targets are simulated so far",
            "model overrides": "Step5 / DeepSeek-V4 model code choose their own top-k",
        },
        "wall_s": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    args = common.driver_arguments(__doc__, moe.TARGETS, argv)
    started = time.monotonic()
    venv = common.ensure_venv(args.version)
    targets = args.targets
    request = {
        "targets": {t: moe.TARGETS[t] for t in targets},
        "worlds": moe.WORLDS,
        "rows": ROWS,
        "topk": TOPK,
        "vocab": VOCAB,
    }
    answer = common.run_inside(venv, "topk_driver.py", request)
    answer["targets"] = targets
    if not answer["records"]:
        print(f"vLLM {args.version}: no sparse-indexer top-k ({answer['found'].get('missing')})")
        return 0
    data = {
        "meta": _meta(args.version, venv, answer, time.monotonic() - started),
        "topk": index_records(answer["records"], "k"),
    }
    out = common.write_vectors(args.out, args.version, "topk", data)
    print(f"{out}: {len(answer['records'])} records, {data['meta']['wall_s']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
