"""``--sparse-indexer-topk-backend auto`` against the vectors the project executed
itself: vLLM 0.34.0's own ``SparseIndexerTopk.resolve_backend`` run on simulated CUDA
targets by ``scripts/release/execute/topk.py`` (``golden/vllm-0.34.0/executed-topk.json``;
its ``meta`` says what was simulated). Every ``auto`` cell: the backend, and
cooperative's unmet constraints in vLLM's words and order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelcfg.vllm.kernels import topk

pytestmark = pytest.mark.golden

FILE = Path(__file__).resolve().parent / "golden" / "vllm-0.34.0" / "executed-topk.json"


def _load() -> dict[str, Any]:
    with FILE.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


DATA = _load()


def test_meta_says_what_was_simulated() -> None:
    meta = DATA["meta"]
    assert "auto" in meta["values"]
    assert meta["rows"]
    assert meta["topk"]


def test_kernelcfg_resolves_auto_as_vllm_0_34_executed() -> None:
    facts = topk.facts(DATA["meta"]["vllm_version"])
    assert facts is not None
    found, compared, wrong = DATA["topk"], 0, []
    for target, by_shape in found["index"].items():
        major, _, minor = DATA["meta"]["platform"]["targets"][target]["capability"].partition(".")
        for shape, by_world in by_shape.items():
            rows, k = (int(part.split("=")[1]) for part in shape.split(","))
            backend, chain = topk.pick(facts, "cuda", (int(major), int(minor)), rows, k)
            for by_value in by_world.values():
                outcome = found["outcomes"][by_value["auto"]]
                refused = "; ".join(outcome["cooperative_refused"])
                compared += 1
                mine = chain[0][2] or ""
                if (backend, mine) != (outcome["backend"], refused):
                    wrong.append((target, shape, backend, outcome["backend"], mine, refused))
    assert compared == len(found["index"]) * 16 * len(DATA["meta"]["worlds"])
    assert wrong == []
